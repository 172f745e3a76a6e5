#!/usr/bin/env python3
"""Draws a timeline of a tandem profile (the Chrome trace JSON that
profile_trace::save writes): a row per thread, an event's bar stacked by its
nesting, coloured by its category, the longest named.

    python3 bench/plot_trace.py trace.json docs/images/profile_timeline.png [--from US --to US]
    python3 bench/plot_trace.py trace.json out.png --scopes "cnn graph step"   # the span of those scopes
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLOURS = {
    "user": "#bbbbbb", "graph": "#4c72b0", "group": "#64b5cd", "op": "#55a868", "backward": "#c44e52",
    "optimizer": "#8172b2", "capture": "#ccb974", "task": "#dd8452", "collective": "#937860",
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("image")
    parser.add_argument("--from", dest="start", type=float, default=None, help="first microsecond shown")
    parser.add_argument("--to", dest="stop", type=float, default=None, help="last microsecond shown")
    parser.add_argument("--scopes", help="show the span of the user scopes whose names start so")
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    events = [e for e in json.load(open(args.trace))["traceEvents"] if e.get("ph") == "X"]
    if args.scopes:
        scopes = [e for e in events if e.get("cat") == "user" and e["name"].startswith(args.scopes)]
        args.start = min(e["ts"] for e in scopes)
        args.stop = max(e["ts"] + e["dur"] for e in scopes)
    if args.start is not None:
        events = [e for e in events if e["ts"] >= args.start]
    if args.stop is not None:
        events = [e for e in events if e["ts"] + e["dur"] <= args.stop]
    threads = sorted({e["tid"] for e in events})
    # Depth on each thread from containment, as the profiler nests events.
    depth, open_events = {}, {}
    for e in sorted(events, key=lambda e: (e["tid"], e["ts"], -e["dur"])):
        chain = open_events.setdefault(e["tid"], [])
        while chain and chain[-1]["ts"] + chain[-1]["dur"] < e["ts"] + e["dur"]:
            chain.pop()
        depth[id(e)] = len(chain)
        chain.append(e)
    levels = {t: 1 + max(depth[id(e)] for e in events if e["tid"] == t) for t in threads}
    base, y = {}, 0
    for t in reversed(threads):
        base[t] = y
        y += levels[t] + 1
    origin = min(e["ts"] for e in events)
    span = max(e["ts"] + e["dur"] for e in events) - origin
    fig, ax = plt.subplots(figsize=(12, 0.35 * y + 1.2))
    for e in events:
        row = base[e["tid"]] + levels[e["tid"]] - 1 - depth[id(e)]
        start, width = (e["ts"] - origin) / 1000, e["dur"] / 1000
        ax.broken_barh([(start, width)], (row, 0.9), facecolors=COLOURS.get(e.get("cat"), "#999999"),
                       edgecolor="white", linewidth=0.3)
        if e["dur"] > span / 25:
            ax.text(start + width / 2, row + 0.45, e["name"], ha="center", va="center", fontsize=6, clip_on=True)
    ax.set_yticks([base[t] + levels[t] / 2 for t in threads])
    ax.set_yticklabels([f"thread {t}" for t in threads])
    ax.set_xlabel("milliseconds")
    ax.set_xlim(0, span / 1000)
    ax.set_ylim(-0.5, y)
    used = sorted({e.get("cat") for e in events}, key=list(COLOURS).index)
    ax.legend(handles=[Patch(color=COLOURS[c], label=c) for c in used], loc="upper center", ncol=len(used),
              fontsize=7, bbox_to_anchor=(0.5, -0.12 if y > 8 else -0.25), frameon=False)
    if args.title:
        ax.set_title(args.title, fontsize=9)
    fig.tight_layout()
    fig.savefig(args.image, dpi=150)


if __name__ == "__main__":
    main()
