#!/usr/bin/env python3
"""The GPT demo's loss curve: reads the demo's output (./tandem.sh demo --model gpt > log) and
plots training and validation loss against seconds, with the 1.6 nats per character goal.

    python3 bench/plot_gpt.py docs/benchmarks/data/gpt_demo_zen5.log docs/images/gpt_loss.png
"""
import re, sys
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

rows = [tuple(map(float, m.groups())) for m in
        (re.search(r"step\s+(\d+)\s+(\d+) s\s+train ([\d.]+)\s+val ([\d.]+)", line) for line in open(sys.argv[1]))
        if m]
steps, seconds, train, val = zip(*rows)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(seconds, train, label="training batch", alpha=0.6)
ax.plot(seconds, val, label="validation (10 batches)", linewidth=2)
ax.axhline(1.6, color="gray", linestyle="--", label="goal: 1.6 within 10 minutes")
ax.set_xlabel("seconds of graph-mode training (2 threads)")
ax.set_ylabel("loss, nats per character")
ax.set_title("tandem's character-level GPT on the King James Bible")
ax.legend()
ax.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
