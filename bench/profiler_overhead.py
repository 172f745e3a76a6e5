#!/usr/bin/env python3
"""What the profiler's hooks cost: runs bench_profiler_overhead (hooks in,
no profiler recording: `off`; one recording: `on`) and
bench_profiler_overhead_without_hooks (TANDEM_PROFILER_HOOKS=0) in turns,
and prints each case's median time and its ratio to the build without hooks.

    python3 bench/profiler_overhead.py [--build build/release/bench] [--rounds 7]
"""
import argparse
import json
import statistics
import subprocess


def run(binary, min_time):
    out = subprocess.run([binary, "--benchmark_format=json", f"--benchmark_min_time={min_time}"],
                         check=True, capture_output=True, text=True).stdout
    return {b["name"]: b["real_time"] for b in json.loads(out)["benchmarks"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/release/bench")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.5)
    args = parser.parse_args()
    hooks, bare = {}, {}
    for _ in range(args.rounds):  # in turns, so that drifts of the machine fall on both
        for name, t in run(f"{args.build}/bench_profiler_overhead", args.min_time).items():
            hooks.setdefault(name, []).append(t)
        for name, t in run(f"{args.build}/bench_profiler_overhead_without_hooks", args.min_time).items():
            bare.setdefault(name, []).append(t)
    print(f"{'case':<22} {'without hooks ns':>17} {'off ns':>9} {'off/without':>12} {'on ns':>9} {'on/without':>11}")
    for case in ("cached_add_call", "eager_chain", "eager_backward"):
        without = statistics.median(bare[f"{case}/off"])
        off = statistics.median(hooks[f"{case}/off"])
        on = statistics.median(hooks[f"{case}/on"])
        print(f"{case:<22} {without:>17.1f} {off:>9.1f} {off / without:>12.3f} {on:>9.1f} {on / without:>11.2f}")


if __name__ == "__main__":
    main()
