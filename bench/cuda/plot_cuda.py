#!/usr/bin/env python3
"""Two panels from the GPU benchmarks' printed output: the 8-op chain and
the gradient of sum(tanh(x*y+x)*y) as a share of the device's copy
bandwidth, and the demo's training steps in milliseconds; tandem eager and
static graph against PyTorch eager and torch.compile, each pair of files
from one run on one GPU.

Optional (needs matplotlib from PyPI); not part of the test suite:

    ./cuda_graphs > graphs.txt                         # bench/cuda/graphs.cu
    python3 bench/cuda/fused_bandwidth_torch.py > torch_bandwidth.txt
    python3 bench/cuda/training_torch.py > torch_training.txt
    python3 bench/cuda/plot_cuda.py graphs.txt torch_bandwidth.txt \\
        graphs_of_training_run.txt torch_training.txt docs/images/cuda_h100.png
"""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLOURS = {"tandem eager": "#9ecae1", "tandem graph": "#2b7bba", "PyTorch eager": "#fdae6b",
           "torch.compile": "#a63603"}


def rows(path):
    """{label: (ms, GB/s or None)} for every line that ends in a time."""
    out = {}
    for line in open(path):
        m = re.match(r"(.+?)\s{2,}([\d.]+)(?:\s+ms)?(?:\s+([\d.]+))?", line.strip())
        if m:
            out[m.group(1).strip()] = (float(m.group(2)), float(m.group(3)) if m.group(3) else None)
    return out


def main(graphs, torch_bandwidth, graphs_training, torch_training, image):
    g, tb, gt, tt = rows(graphs), rows(torch_bandwidth), rows(graphs_training), rows(torch_training)
    copy_ms = g["copy (x.clone())"][0]
    torch_copy_ms = tb["tensor.copy_"][0]
    # Share of copy: the copy's time over the work's, each against its own
    # run's copy, times the work's traffic over the copy's (1 for the chain,
    # 2 for the gradient: two reads and two writes).
    bandwidth = {
        "8-op chain": {"tandem eager": copy_ms / g["8-op chain, eager"][0],
                       "tandem graph": copy_ms / g["8-op chain, static graph"][0],
                       "PyTorch eager": torch_copy_ms / tb["8-op chain, eager"][0],
                       "torch.compile": torch_copy_ms / tb["8-op chain, torch.compile"][0]},
        "gradient": {"tandem eager": 2 * copy_ms / g["grad of sum(tanh(x*y+x)*y), eager"][0],
                     "tandem graph": 2 * copy_ms / g["grad of sum(tanh(x*y+x)*y), static graph"][0],
                     "PyTorch eager": 2 * torch_copy_ms / tb["gradient of sum(tanh(x*y+x)*y), eager"][0],
                     "torch.compile": 2 * torch_copy_ms / tb["gradient, torch.compile"][0]},
    }
    steps = {}
    for model, label in (("MLP", "MLP 784-256-256-10"), ("CNN", "CNN")):
        steps[model] = {"tandem eager": gt[f"{label} training step, eager"][0],
                        "tandem graph": gt[f"{label} training step, static graph"][0],
                        "PyTorch eager": tt[f"{label} training step, eager"][0],
                        "torch.compile": tt[f"{label} training step, torch.compile"][0]}

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    for ax, (title, values, unit) in zip(
            axes, [("chain and gradient, 64M floats", bandwidth, "share of copy bandwidth"),
                   ("MLP training step, batch 128", {"MLP": steps["MLP"]}, "ms"),
                   ("CNN training step, batch 128", {"CNN": steps["CNN"]}, "ms")]):
        groups = list(values)
        width = 0.8 / len(COLOURS)
        for k, (peer, colour) in enumerate(COLOURS.items()):
            xs = [i + (k - 1.5) * width for i in range(len(groups))]
            ys = [values[group][peer] * (100 if unit.startswith("share") else 1) for group in groups]
            bars = ax.bar(xs, ys, width, label=peer, color=colour)
            for bar, y in zip(bars, ys):
                ax.annotate(f"{y:.0f}%" if unit.startswith("share") else f"{y:.2f}", (bar.get_x() + width / 2, y),
                            ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(groups)), groups)
        ax.set_ylabel("% of copy bandwidth (higher is better)" if unit.startswith("share")
                      else "ms per step (lower is better)")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylim(0, 130)
    axes[0].legend(fontsize=8, loc="upper center", ncol=2)
    fig.suptitle("tandem on an NVIDIA H100 against PyTorch 2.11 (CUDA events, medians of 21)", fontsize=11)
    fig.tight_layout()
    fig.savefig(image, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
