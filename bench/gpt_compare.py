#!/usr/bin/env python3
"""The GPT demo's training step beside PyTorch's twin (bench/gpt_pytorch.py), alternated so that
both meet the same state of a shared machine: each round times tandem's step (examples/gpt
--time-steps, graph mode unless --mode says otherwise) and then PyTorch's (eager, and under
torch.compile with --compile), and the ratio of their medians. Prints every round, then the
median of the rounds' ratios. For comparison only (pip install torch).

    ./tandem.sh demo --model gpt --time-steps 5    # builds examples/gpt and writes build/data/kjv.txt
    python3 bench/gpt_compare.py [--rounds 5] [--steps 30] [--threads 2] [--compile] [--mode graph] [--bf16]

--bf16 runs both under autocast: tandem's --precision bf16, PyTorch's torch.autocast("cpu", bfloat16).
"""
import argparse, os, re, statistics, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--compile", action="store_true", help="also time PyTorch under torch.compile")
ap.add_argument("--mode", default="graph", choices=["eager", "graph", "capture"])
ap.add_argument("--bf16", action="store_true", help="both under autocast to bfloat16")
ap.add_argument("--gpt", default="build/release/examples/gpt")
ap.add_argument("--data", default="build/data/kjv.txt")
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
env = dict(os.environ, TANDEM_NUM_THREADS=str(a.threads))


def median_ms(command, pattern):
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    found = re.search(pattern, out)
    if not found:
        sys.exit(f"gpt_compare: no step time in the output of {' '.join(command)}:\n{out}")
    return float(found.group(1))


peers = ["eager"] + (["compile"] if a.compile else [])
ratios = {p: [] for p in peers}
for r in range(a.rounds):
    ours = median_ms([a.gpt, "--data", a.data, "--mode", a.mode, "--time-steps", str(a.steps)] +
                     (["--precision", "bf16"] if a.bf16 else []), r"([0-9.]+) ms per step")
    line = f"round {r + 1}: tandem {a.mode} {ours:.1f} ms"
    for p in peers:
        theirs = median_ms([sys.executable, os.path.join(here, "gpt_pytorch.py"), "--threads", str(a.threads), "--steps",
                            str(a.steps)] + (["--compile"] if p == "compile" else []) + (["--autocast"] if a.bf16 else []),
                           r"median ([0-9.]+) ms per step")
        ratios[p].append(theirs / ours)
        line += f", pytorch {p} {theirs:.1f} ms ({theirs / ours:.2f}x)"
    print(line, flush=True)
for p in peers:
    print(f"tandem {a.mode} against pytorch {p}: {statistics.median(ratios[p]):.2f}x (median of {a.rounds} rounds; "
          f"{min(ratios[p]):.2f}-{max(ratios[p]):.2f}), {a.threads} threads")
