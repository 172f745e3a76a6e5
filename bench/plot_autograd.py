#!/usr/bin/env python3
"""Bar chart of bench_autograd's results, tandem beside libtorch.

Optional (needs matplotlib from PyPI); not part of the test suite:

    OPENBLAS_NUM_THREADS=1 ./build/release/bench/bench_autograd --benchmark_min_time=1 \
        --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
        --benchmark_format=json > autograd.json
    python3 bench/plot_autograd.py autograd.json docs/benchmarks/autograd.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

CASES = [  # (label, tandem benchmark, libtorch benchmark, unit scale, unit)
    ("op, 16 floats\nplain", "op_tandem_plain/16", "op_libtorch_plain/16", 1.0, "ns"),
    ("op, 16 floats\nrecorded", "op_tandem_recorded/16", "op_libtorch_recorded/16", 1.0, "ns"),
    ("8-op chain\nfwd+bwd, 1M", "chain_tandem/1048576/real_time", "chain_libtorch/1048576/real_time", 1e-6, "ms"),
    ("MLP step\n1 thread", "mlp_step_tandem/1/real_time", "mlp_step_libtorch/1/real_time", 1e-6, "ms"),
]


def medians(path):
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    return {r["run_name"]: r["real_time"] for r in runs if r.get("aggregate_name") == "median"}


def main(source, target):
    times = medians(source)
    fig, axes = plt.subplots(1, len(CASES), figsize=(11, 3.4))
    for ax, (label, ours, theirs, scale, unit) in zip(axes, CASES):
        values = [times[ours] * scale, times[theirs] * scale]
        bars = ax.bar(["tandem", "libtorch"], values, color=["#2b7bba", "#d95f02"])
        ax.bar_label(bars, labels=[f"{v:.0f} {unit}" if v >= 100 else f"{v:.3g} {unit}" for v in values], fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.set_ylabel(unit)
        ax.margins(y=0.2)
    fig.suptitle("Eager autodiff: time per call (lower is better)", fontsize=10)
    fig.tight_layout()
    fig.savefig(target, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
