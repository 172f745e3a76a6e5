#!/usr/bin/env python3
"""Loading a 500 MB safetensors file (50 float32 tensors, from the page cache): tandem beside the
safetensors package's loaders, in one run, and a markdown table of the medians.

    python3 bench/safetensors_load.py [--mb 500] [--rounds 5]

Needs build/release/bench/bench_safetensors_load (./tandem.sh bench) and, for comparison only,
pip install numpy safetensors torch. Each loader is timed loading only and loading then reading
every element (a sum), so that a lazy loader (a mapping) and a copying one are compared on both.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--mb", type=int, default=500)
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--bench", default="build/release/bench/bench_safetensors_load")
args = parser.parse_args()

import safetensors.numpy
try:
    import torch, safetensors.torch
except ImportError:
    torch = None

path = os.path.join(tempfile.gettempdir(), f"tandem_bench_{args.mb}mb_python.safetensors")
count = 50
each = args.mb * 2**20 // count // 4
if not os.path.exists(path):
    safetensors.numpy.save_file({f"layer{k}.weight": np.full(each, 0.5 + k, np.float32) for k in range(count)}, path)


def timed(load, touch):
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        tensors = load(path)
        if touch:
            sum(float(t.sum()) for t in tensors.values())
        times.append(time.perf_counter() - start)
        del tensors
    return statistics.median(times) * 1e3


rows = {}
load_np = lambda p: safetensors.numpy.load_file(p)
rows["safetensors.numpy.load_file"] = (timed(load_np, False), timed(load_np, True))
if torch is not None:
    load_pt = lambda p: safetensors.torch.load_file(p)
    rows["safetensors.torch.load_file"] = (timed(load_pt, False), timed(load_pt, True))

out = subprocess.run([args.bench, f"--file={path}", f"--benchmark_repetitions={args.rounds}",
                      "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
                     check=True, capture_output=True, text=True).stdout
medians = {b["run_name"].split("/")[0]: b["real_time"] for b in json.loads(out)["benchmarks"] if b.get("aggregate_name") == "median"}
rows["tandem safetensors_file(path).all()"] = (medians["open"], medians["open_and_sum"])
rows["by hand: read(2) the whole file, sum in one thread"] = (float("nan"), medians["read_and_sum"])

cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
print(f"{args.mb} MB, {count} float32 tensors, page cache warm; {cpu}; median of {args.rounds}\n")
print("| loader | load (ms) | load + read every element (ms) |")
print("|---|---:|---:|")
for name, (load, touched) in rows.items():
    print(f"| {name} | {'-' if load != load else f'{load:.2f}'} | {touched:.1f} |")
