#!/usr/bin/env python3
"""Bar chart of one training step: tandem eager and graph, libtorch, PyTorch
eager and torch.compile, for the demo's MLP and CNN on 1 and 2 threads.

Optional (needs matplotlib from PyPI); not part of the test suite:

    OPENBLAS_NUM_THREADS=1 ./build/release/bench/bench_training --benchmark_min_time=0.5 \
        --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true \
        --benchmark_out=training.json --benchmark_out_format=json
    python3 bench/training_pytorch.py --json pytorch.json
    python3 bench/plot_training.py training.json pytorch.json docs/images/training_step.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

PEERS = [  # (label, benchmark name pattern, colour)
    ("tandem\neager", "{model}_step_tandem_eager/{threads}/real_time", "#9ecae1"),
    ("tandem\ngraph", "{model}_step_tandem_graph/{threads}/real_time", "#2b7bba"),
    ("libtorch\n1.13", "{model}_step_libtorch/{threads}/real_time", "#d95f02"),
    ("PyTorch\neager", "{model}_step_pytorch_eager/{threads}", "#fdae6b"),
    ("torch.\ncompile", "{model}_step_pytorch_compile/{threads}", "#a63603"),
]
PANELS = [("mlp", 1, "us"), ("mlp", 2, "us"), ("cnn", 1, "ms"), ("cnn", 2, "ms")]


def load(bench_path, pytorch_path):
    with open(bench_path) as f:
        runs = json.load(f)["benchmarks"]
    # Medians of the repetitions, in each benchmark's own unit (us for the
    # MLP, ms for the CNN, as training_pytorch.py writes them).
    times = {r["run_name"]: r["real_time"] for r in runs
             if r.get("run_type") == "aggregate" and r.get("aggregate_name") == "median"}
    with open(pytorch_path) as f:
        pytorch = json.load(f)
    times.update(pytorch["steps"])
    return times, pytorch["torch"]


def main(bench_path, pytorch_path, target):
    times, torch_version = load(bench_path, pytorch_path)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(13, 3.8))
    for ax, (model, threads, unit) in zip(axes, PANELS):
        labels, values, colours = [], [], []
        for label, pattern, colour in PEERS:
            key = pattern.format(model=model, threads=threads)
            if key in times:
                labels.append(label.replace("PyTorch", f"PyTorch\n{torch_version.split('+')[0]}", 1)
                              if label.startswith("PyTorch") else label)
                values.append(times[key])
                colours.append(colour)
        bars = ax.bar(labels, values, color=colours)
        ax.bar_label(bars, labels=[f"{v:.0f}" if v >= 100 else f"{v:.3g}" for v in values], fontsize=7)
        ax.set_title(f"{model.upper()}, {threads} thread{'s' if threads > 1 else ''}", fontsize=9)
        ax.set_ylabel(f"{unit} per step")
        ax.tick_params(axis="x", labelsize=7)
        ax.margins(y=0.2)
    fig.suptitle("One training step at batch 128 (forward, backward, Adam): lower is better", fontsize=10)
    fig.tight_layout()
    fig.savefig(target, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
