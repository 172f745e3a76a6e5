#!/usr/bin/env python3
"""What tandem costs to compile: user+sys CPU seconds and max RSS per
translation unit, for the cases docs/benchmarks/compile_time.md tracks.

    python3 bench/compile_time.py                 # the table, header-only
    python3 bench/compile_time.py --compiled      # the same TUs as a target
                                                  # linking tandem::compiled sees them
    python3 bench/compile_time.py --csv out.csv --plot docs/images/compile_time.png
    python3 bench/compile_time.py --plot-from out.csv --plot docs/images/compile_time.png
    python3 bench/compile_time.py --plot-from before=a.csv --plot-from after=b.csv --plot both.png

Each case is compiled alone (-c, nothing else running is assumed: run it on
an idle machine, and read ratios), --repeat times, keeping the fastest run.
CPU seconds are the child's user+sys from wait4, steadier than wall time on a
shared machine.
"""

import argparse
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROLOGUE = "#include <tandem/tandem.hpp>\nusing namespace tandem;\n"

# One step after another, cycling: (expression of the previous value, ops it
# adds), so that a graph of N nodes holds N ops.
CHAIN_STEPS = [
    ("{h} * y", 1),
    ("{h} + 0.5f", 1),
    ("sigmoid({h})", 1),
    ("{h} - x", 1),
    ("tanh({h})", 1),
    ("{h} * 0.25f", 1),
    ("exp({h} * 0.1f)", 2),
    ("{h} / (y + 2.0f)", 2),
]


def chain(nodes):
    """A jit graph of `nodes` elementwise ops and a sum, with its gradient."""
    lines, count, i = [], 0, 0
    while count < nodes:
        step, ops = CHAIN_STEPS[i % len(CHAIN_STEPS)]
        if count + ops > nodes:
            step, ops = "{h} * y", 1
        lines.append(f"    auto h{i + 1} = " + step.format(h=f"h{i}") + ";")
        count += ops
        i += 1
    body = "\n".join(lines)
    return PROLOGUE + f"""
int main() {{
  auto f = [](const auto& x, const auto& y) {{
    auto h0 = x;
{body}
    return sum(h{i});
  }};
  auto g = jit(f);
  tensor<float> x = full<float>({{8, 8}}, 0.5f), y = full<float>({{8, 8}}, 1.5f);
  float value = g(x, y).item();
  float slope = grad(g)(x, y).at(0, 0);
  return value == value && slope == slope ? 0 : 1;
}}
"""


def doubling_chain(steps):
    """h = h * 0.5f + h, `steps` times: each step reads h twice."""
    body = "\n".join(f"    auto h{i + 1} = h{i} * 0.5f + h{i};" for i in range(steps))
    return PROLOGUE + f"""
int main() {{
  auto f = [](const auto& x) {{
    auto h0 = x;
{body}
    return sum(h{steps});
  }};
  auto g = jit(f);
  tensor<float> x = full<float>({{8, 8}}, 1e-6f);
  float value = g(x).item();
  float slope = grad(g)(x).at(0, 0);
  return value == value && slope == slope ? 0 : 1;
}}
"""


JIT10 = PROLOGUE + """
int main() {
  auto f = [](const auto& x, const auto& y) {
    auto a = x * y + 1.0f;
    auto b = exp(a) - x;
    auto c = b * b / (y + 2.0f);
    auto d = sigmoid(c) * a - tanh(b);
    return sum(d * x);
  };
  auto g = jit(f);
  tensor<float> x = ones<float>({4, 4}), y = ones<float>({4, 4});
  float value = g(x, y).item();
  float slope = grad(g)(x, y).at(0, 0);
  return value == value && slope == slope ? 0 : 1;
}
"""


def ten_nodes_run(wrap):
    """The 10-node function on tensors (not a template), called eagerly
    (`wrap` empty) or through `wrap`, with its gradient: what capture adds
    to a translation unit."""
    return PROLOGUE + f"""
tensor<float> f(const tensor<float>& x, const tensor<float>& y) {{
  auto a = x * y + 1.0f;
  auto b = exp(a) - x;
  auto c = b * b / (y + 2.0f);
  auto d = sigmoid(c) * a - tanh(b);
  return sum(d * x);
}}

int main() {{
  auto g = {wrap}(f);
  tensor<float> x = ones<float>({{4, 4}}), y = ones<float>({{4, 4}});
  float value = g(x, y).item();
  float slope = grad(g)(x, y).at(0, 0);
  return value == value && slope == slope ? 0 : 1;
}}
"""


EMPTY = "#include <tandem/tandem.hpp>\nint main() {}\n"

ONE_OP = PROLOGUE + """
int main() {
  tensor<float> x = ones<float>({4, 4});
  tensor<float> y = x * x;
  return y.at(0, 0) == 1.0f ? 0 : 1;
}
"""


LINEAR_CALL = PROLOGUE + """
int main() {
  generator gen(1);
  nn::linear<float> layer(4, 3, gen);
  tensor<float> y = layer(ones<float>({2, 4}));
  return y.at(0, 0) == y.at(0, 0) ? 0 : 1;
}
"""

GPT_FORWARD = PROLOGUE + """
int main() {
  generator gen(1);
  nn::gpt<float, 2> model({.vocabulary = 11, .context = 8, .width = 8, .heads = 2}, gen);
  tensor<float> logits = model(zeros<std::int64_t>({2, 8}));
  return logits.at(0, 0, 0) == logits.at(0, 0, 0) ? 0 : 1;
}
"""


def cases(which):
    out = [
        ("umbrella include + empty main", "source", EMPTY),
        ("umbrella include + one eager op", "source", ONE_OP),
        ("10-node jit graph + grad", "source", JIT10),
        ("10-node eager function + grad", "source", ten_nodes_run("std::function<tensor<float>(const tensor<float>&, const tensor<float>&)>")),
        ("10-node captured function + grad", "source", ten_nodes_run("capture")),
        ("chain of 10 ops + grad", "source", chain(10)),
        ("chain of 50 ops + grad", "source", chain(50)),
        ("chain of 200 ops + grad", "source", chain(200)),
        ("30 steps of h = h * 0.5f + h + grad", "source", doubling_chain(30)),
        ("nn::linear called", "source", LINEAR_CALL),
        ("nn::gpt forward", "source", GPT_FORWARD),
        ("examples/demo.cpp", "file", os.path.join(ROOT, "examples", "demo.cpp")),
        ("examples/rnn_scan.cpp", "file", os.path.join(ROOT, "examples", "rnn_scan.cpp")),
    ]
    if which:
        out = [c for c in out if any(w in c[0] for w in which)]
    return out


def measure(command):
    """Runs `command`; returns (user+sys seconds, max RSS in MB)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    errors = process.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"compile failed: {shlex.join(command)}\n{errors[:4000]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compiler", default=os.environ.get("CXX", "g++"))
    parser.add_argument("--flags", default="-O2 -std=c++20", help="compile flags (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", action="append", help="run the cases whose name contains this")
    parser.add_argument("--compiled", action="store_true",
                        help="compile against the compiled library's extern templates (TANDEM_COMPILED_LIBRARY)")
    parser.add_argument("--csv", help="also write the rows here")
    parser.add_argument("--plot", help="plot compile time against graph size into this PNG (needs matplotlib)")
    parser.add_argument("--plot-from", action="append",
                        help="plot the rows of a CSV this script wrote, compiling nothing; LABEL=PATH names the "
                             "series, and several may be given")
    parser.add_argument("--title", default="g++ 12 -O2: a jit graph of N ops + its grad",
                        help="the plot's title (name the CPU and ISA the rows were measured on)")
    args = parser.parse_args()

    if args.plot_from:
        series = []
        for entry in args.plot_from:
            label, _, path = entry.rpartition("=")
            with open(path) as f:
                next(f)
                rows = [(name, float(cpu), float(rss)) for name, cpu, rss in (line.rsplit(",", 2) for line in f)]
            series.append((label or "measured", rows))
        plot(series, args.plot, args.title)
        return

    include = ["-I" + os.path.join(ROOT, "include")]
    # What linking tandem::compiled adds to a translation unit: the define
    # that turns the library's instantiations into extern declarations.
    flags = shlex.split(args.flags) + (["-DTANDEM_COMPILED_LIBRARY"] if args.compiled else [])
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, kind, what in cases(args.only):
            if kind == "source":
                source = os.path.join(scratch, "case.cpp")
                with open(source, "w") as f:
                    f.write(what)
            else:
                source = what
            command = [args.compiler, *flags, *include, "-c", source, "-o", os.path.join(scratch, "case.o")]
            best = min((measure(command) for _ in range(args.repeat)), key=lambda r: r[0])
            rows.append((name, *best))
            print(f"{name:40s} {best[0]:7.2f} s  {best[1]:7.0f} MB", file=sys.stderr, flush=True)

    print(f"\n{args.compiler} {args.flags}{' (compiled library)' if args.compiled else ''}\n")
    print("| translation unit | user+sys (s) | max RSS (MB) |")
    print("|---|---|---|")
    for name, cpu, rss in rows:
        print(f"| {name} | {cpu:.1f} | {rss:.0f} |")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("case,cpu_seconds,max_rss_mb\n")
            for name, cpu, rss in rows:
                f.write(f"{name},{cpu:.2f},{rss:.0f}\n")
    if args.plot:
        plot([("measured", rows)], args.plot, args.title)


def plot(series, path, title):
    """Compile time and memory against graph size, one line per (label, rows)
    series, with the straight line through the last series' two smallest
    graphs: what linear growth would give."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (time_axes, memory_axes) = plt.subplots(1, 2, figsize=(8, 3.2))
    for label, rows in series:
        chains = sorted((int(name.split()[2]), cpu, rss) for name, cpu, rss in rows if name.startswith("chain of"))
        if not chains:
            continue
        sizes = [n for n, _, _ in chains]
        for axes, values in ((time_axes, [c for _, c, _ in chains]), (memory_axes, [m for _, _, m in chains])):
            axes.plot(sizes, values, marker="o", label=label)
    for axes, column, unit in ((time_axes, 1, "user+sys seconds"), (memory_axes, 2, "max RSS (MB)")):
        chains = sorted((int(r[0].split()[2]), r[column]) for r in series[-1][1] if r[0].startswith("chain of"))
        (n0, v0), (n1, v1) = chains[0], chains[1]
        slope = (v1 - v0) / (n1 - n0)
        axes.plot([n for n, _ in chains], [v0 + slope * (n - n0) for n, _ in chains], linestyle="--",
                  label=f"linear ({series[-1][0]})")
        axes.set_xlabel("elementwise ops in the graph")
        axes.set_ylabel(unit)
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
    time_axes.legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
