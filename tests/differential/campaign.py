#!/usr/bin/env python3
"""A differential-testing campaign: fresh seeds of random programs
(tests/differential/generate.py), each file compiled against the headers
and run through tests/differential/harness.hpp; prints how many programs
ran and which ones disagreed, and keeps the failing sources.

    tests/differential/campaign.py --first-seed 100 --files 20 --count 8 --jobs 2

Needs g++ and doctest (./tandem.sh test installs both). Exit status 1 when
any program disagreed.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run_seed(seed, count, steps, scratch, compiler, flags):
    source = os.path.join(scratch, f"programs_{seed}.cpp")
    binary = os.path.join(scratch, f"programs_{seed}")
    with open(source, "w") as f:
        f.write(subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--seed", str(seed), "--count",
                                str(count), "--steps", str(steps)], check=True, capture_output=True, text=True).stdout)
    build = subprocess.run([compiler, *flags, "-I", os.path.join(ROOT, "include"), "-I", os.path.join(ROOT, "tests"),
                            source, os.path.join(ROOT, "tests", "main.cpp"), "-o", binary, "-lz", "-lpthread"],
                           capture_output=True, text=True)
    if build.returncode != 0:
        return seed, count, None, build.stderr[-3000:]
    run = subprocess.run([binary], capture_output=True, text=True)
    failed = sorted(set(re.findall(r'TEST CASE:\s+program (\S+)', run.stdout)))
    return seed, count, failed, run.stdout[-6000:] if failed else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--files", type=int, default=4, help="generated files (one compile each)")
    parser.add_argument("--count", type=int, default=8, help="programs per file")
    parser.add_argument("--steps", type=int, default=8, help="ops per program")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--compiler", default=os.environ.get("CXX", "g++"))
    parser.add_argument("--flags", default="-O1 -std=c++20 -march=native")
    parser.add_argument("--keep", default=os.path.join(ROOT, "build", "differential"),
                        help="where the sources of failing programs are kept")
    args = parser.parse_args()

    ran, failures, broken = 0, [], []
    with tempfile.TemporaryDirectory() as scratch, concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(run_seed, seed, args.count, args.steps, scratch, args.compiler, args.flags.split())
                for seed in range(args.first_seed, args.first_seed + args.files)]
        for job in concurrent.futures.as_completed(jobs):
            seed, count, failed, log = job.result()
            if failed is None:
                broken.append(seed)
                print(f"seed {seed}: does not compile\n{log}", file=sys.stderr)
                continue
            ran += count
            print(f"seed {seed}: {count} programs, {len(failed)} disagreed {' '.join(failed)}", flush=True)
            if failed:
                failures += failed
                os.makedirs(args.keep, exist_ok=True)
                kept = os.path.join(args.keep, f"programs_{seed}.cpp")
                with open(os.path.join(scratch, f"programs_{seed}.cpp")) as src, open(kept, "w") as dst:
                    dst.write(src.read())
                print(log, file=sys.stderr)
    print(f"\n{ran} programs run, {len(failures)} disagreed{': ' + ' '.join(failures) if failures else ''}"
          f"{f'; seeds that did not compile: {broken}' if broken else ''}")
    return 1 if failures or broken else 0


if __name__ == "__main__":
    sys.exit(main())
