#!/usr/bin/env python3
"""The heaviest translation units of a build, from the log that
cmake/time_compile.sh writes (configure with -DTANDEM_TIME_COMPILES=ON):

    python3 bench/compile_costs.py build/release/compile_times.log [--top 15] [--limit 60]

Prints the total CPU time, the `--top` heaviest units (user+sys seconds,
peak memory) and those over `--limit` seconds, the budget of a test
translation unit (docs/contributing.md). A unit compiled more than once (a
rebuild) counts with its last time.
"""

import argparse
import os


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--limit", type=float, default=60.0, help="seconds of CPU a test unit may take")
    args = parser.parse_args()

    last = {}
    with open(args.log) as f:
        for line in f:
            parts = line.split(maxsplit=2)
            if len(parts) == 3:
                last[parts[2].strip()] = (float(parts[0]), int(parts[1]))
    rows = sorted(((cpu, rss, name) for name, (cpu, rss) in last.items()), reverse=True)
    total = sum(cpu for cpu, _, _ in rows)
    print(f"compile costs: {len(rows)} translation units, {total:.0f} s of CPU (user+sys)")
    for cpu, rss, name in rows[: args.top]:
        print(f"  {cpu:7.1f} s {rss:6d} MB  {shorten(name)}")
    over = [(cpu, name) for cpu, _, name in rows if cpu > args.limit and "/tests/" in "/" + name]
    if over:
        print(f"test units over {args.limit:.0f} s: " + ", ".join(f"{shorten(n)} ({c:.0f} s)" for c, n in over))


def shorten(object_path):
    """CMakeFiles/test_ops.dir/ops/op_table_unary.cpp.o -> test_ops: ops/op_table_unary.cpp"""
    parts = object_path.split("CMakeFiles/")
    if len(parts) == 2 and ".dir/" in parts[1]:
        target, source = parts[1].split(".dir/", 1)
        prefix = parts[0].rstrip("/")
        return f"{prefix + '/' if prefix else ''}{target}: {source.removesuffix('.o')}"
    return os.path.normpath(object_path)


if __name__ == "__main__":
    main()
