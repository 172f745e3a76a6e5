#!/usr/bin/env python3
"""Random programs over tandem's ops, for differential testing.

Each program is a generic C++ function of two tensors x and y, built from
elementwise ops (with broadcasting and random scalars), reductions over an
axis, matmul, transposes, reshapes, softmax and log_softmax. Operands are
drawn from every value computed so far, most often the latest, so programs
share sub-expressions and grow reuse chains. Values stay bounded (exp, log
and division only see arguments that keep them finite), so float and double
can be compared.

    tests/differential/generate.py --seed 1 --count 8 > programs.cpp

writes a doctest file that runs every program through
tests/differential/harness.hpp: eager, under jit, gradients by every route,
float against double. `--first K` writes programs K, K + 1, ... of the
seed's sequence (the same programs a file from 0 holds there), so that one
seed's programs may be split across translation units. The suite compiles a
fixed set (tests/differential/programs_*.cpp, from the commands in their
first lines: four programs a file, to keep each within a test unit's
compile budget); tests/differential/campaign.py generates, builds and runs
fresh seeds for longer campaigns.
"""

import argparse
import random

SIZES = [(3, 4), (5, 7), (2, 17), (1, 9), (4, 4)]


def broadcast(a, b):
    """The NumPy broadcast of two shapes, or None."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da != db and da != 1 and db != 1:
            return None
        out.append(max(da, db))
    return tuple(reversed(out))


def scalar(rng):
    return f"{rng.choice([-1, 1]) * rng.uniform(0.1, 2.0):.3f}"


class Program:
    def __init__(self, rng, rows, cols, y_shape):
        self.rng = rng
        self.values = [("x", (rows, cols)), ("y", y_shape)]
        self.lines = []
        self.used = set()

    def pick(self, where=None):
        """An earlier value (the latest half the time) that satisfies `where`."""
        fits = [v for v in self.values if where is None or where(v[1])]
        if not fits:
            return None
        if self.rng.random() < 0.5 and fits[-1] == self.values[-1]:
            chosen = fits[-1]
        else:
            chosen = self.rng.choice(fits)
        self.used.add(chosen[0])
        return chosen

    def add(self, expression, shape):
        name = f"h{len(self.values) - 2}"
        self.lines.append(f"    auto {name} = {expression};")
        self.values.append((name, shape))

    def step(self):
        rng = self.rng
        kind = rng.choices(["unary", "binary", "scalar", "reduce", "matmul", "shape", "softmax"],
                           weights=[6, 6, 3, 2, 1, 1, 1])[0]
        a, sa = self.pick()
        if kind == "unary":
            form = rng.choice(["tanh({a})", "sigmoid({a})", "sin({a})", "cos({a})", "exp(tanh({a}))",
                               "log(1.0 + {a} * {a})", "sqrt(1.0 + {a} * {a})", "softplus({a})", "-{a}",
                               "{a} / (2.0 + cos({a}))", "abs({a}) * 0.5 + square(tanh({a}))", "erf({a})"])
            self.add(form.format(a=a), sa)
        elif kind == "binary":
            found = self.pick(lambda s: broadcast(sa, s) is not None)
            b, sb = found
            form = rng.choice(["{a} + {b}", "{a} - {b}", "{a} * tanh({b})", "{a} / (1.0 + {b} * {b})",
                               "maximum({a}, {b})", "minimum({a}, {b})", "where({a} > {b}, {a}, {b} * 0.5)",
                               "tanh({a}) * {b} + {a}"])
            self.add(form.format(a=a, b=b), broadcast(sa, sb))
        elif kind == "scalar":
            form = rng.choice(["{a} * {c}", "{a} + {c}", "{c} - {a}", "pow(1.5 + tanh({a}), {c})"])
            self.add(form.format(a=a, c=scalar(rng)), sa)
        elif kind == "reduce" and len(sa) == 2:
            axis = rng.choice([0, 1])
            op = rng.choice(["sum", "mean"])
            shape = (1, sa[1]) if axis == 0 else (sa[0], 1)
            self.add(f"{op}({a}, {axis}, true)", shape)
        elif kind == "matmul" and len(sa) == 2:
            found = self.pick(lambda s: len(s) == 2 and s[1] == sa[1])
            b, sb = found
            self.add(f"matmul({a}, {b}.transpose(0, 1)) * 0.25", (sa[0], sb[0]))
        elif kind == "shape" and len(sa) == 2:
            if rng.random() < 0.5:
                self.add(f"{a}.transpose(0, 1)", (sa[1], sa[0]))
            else:
                self.add(f"{a}.reshape({{{sa[0] * sa[1]}}}).reshape({{{sa[0]}, {sa[1]}}})", sa)
        elif kind == "softmax" and len(sa) >= 1:
            op = rng.choice(["softmax", "log_softmax"])
            self.add(f"{op}({a}, -1)", sa)
        else:
            self.add(f"tanh({a}) * {scalar(rng)}", sa)

    def finish(self):
        """The output: the last value, plus the sum of every value nothing
        read (x and y among them), so that it depends on all of them."""
        last, _ = self.values[-1]
        unread = [name for name, _ in self.values[:-1] if name not in self.used]
        total = " + ".join(f"sum({name})" for name in unread)
        self.lines.append(f"    return {last} + ({total}) * 0.125;" if unread else f"    return {last};")


def program(rng, steps):
    rows, cols = rng.choice(SIZES)
    y_shape = rng.choice([(cols,), (rows, 1), (rows, cols), (1, cols)])
    p = Program(rng, rows, cols, y_shape)
    for _ in range(steps):
        p.step()
    p.finish()
    return p, (rows, cols), y_shape


def shape_text(s):
    return "{" + ", ".join(str(d) for d in s) + "}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, default=8)
    parser.add_argument("--first", type=int, default=0, help="the first program's index in the seed's sequence")
    parser.add_argument("--steps", type=int, default=8, help="ops per program")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    first = f" --first {args.first}" if args.first else ""
    out = [f"// Generated by: tests/differential/generate.py --seed {args.seed}{first} --count {args.count} "
           f"--steps {args.steps}",
           "// Do not edit: regenerate. Each program runs through tests/differential/harness.hpp.",
           '#include "differential/harness.hpp"', "", "using namespace tandem;", ""]
    for k in range(args.first + args.count):
        p, x_shape, y_shape = program(rng, args.steps)
        if k < args.first:
            continue
        body = "\n".join(p.lines)
        out.append(f'TEST_CASE("program {args.seed}.{k}") {{')
        out.append("  auto f = [](const auto& x, const auto& y) {")
        out.append(body)
        out.append("  };")
        out.append(f'  test::check_program("{args.seed}.{k}", f, {shape_text(x_shape)}, {shape_text(y_shape)}, '
                   f"{args.seed * 1000 + k});")
        out.append("}")
        out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
