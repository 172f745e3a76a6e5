#!/usr/bin/env python3
"""Fits the rational tanh of include/tandem/detail/math.hpp.

tanh(x) ~ x P(x^2) / Q(x^2) with P, Q of degree 4 and Q(0) = 1, minimizing
the largest relative error on (0, 9] (beyond 9, float tanh rounds to 1).
Loeb's iteration linearizes the fit (x P - tanh Q = tanh, divided by the
previous Q); Lawson's reweighting moves the least-squares fit toward the
minimax one. The reference is mpmath's tanh at 40 digits.

    python3 bench/tanh_fit.py          # needs numpy and mpmath (pip)

prints the coefficients rounded to float, as math.hpp writes them, and the
fit's relative error in exact arithmetic; the float evaluation's error (5.4
ulp) is measured by tests/ops/elementwise.cpp and docs/benchmarks/elementwise.md.
"""
import mpmath
import numpy as np

mpmath.mp.dps = 40


def fit(p_degree=4, q_degree=4, bound=9.0, iterations=120):
    uniform = np.linspace(1e-4, bound, 20000)
    dense_low = bound * (1 - np.cos(np.linspace(0, np.pi / 2, 20000)))
    x = np.unique(np.concatenate([uniform, dense_low]))
    x = x[x > 0]
    t = x * x
    f = np.array([float(mpmath.tanh(mpmath.mpf(v))) for v in x])
    weights = np.ones_like(x)
    q_previous = np.ones_like(x)
    for _ in range(iterations):
        numerator = np.stack([x * t**k for k in range(p_degree + 1)], 1)
        denominator = -np.stack([f * t**k for k in range(1, q_degree + 1)], 1)
        a = np.hstack([numerator, denominator]) / (f * q_previous)[:, None]
        b = 1 / q_previous
        root = np.sqrt(weights)
        coefficients, *_ = np.linalg.lstsq(a * root[:, None], b * root, rcond=None)
        p = coefficients[: p_degree + 1]
        q = np.concatenate([[1.0], coefficients[p_degree + 1 :]])
        p_value = sum(p[k] * t**k for k in range(p_degree + 1))
        q_value = sum(q[k] * t**k for k in range(q_degree + 1))
        error = (x * p_value / q_value - f) / f
        q_previous = q_value
        weights = weights * np.abs(error)
        weights /= weights.sum()
    return p, q, np.max(np.abs(error))


if __name__ == "__main__":
    p, q, error = fit()
    print("P (constant first):", ", ".join("%.8g" % np.float32(v) for v in p))
    print("Q (constant first):", ", ".join("%.8g" % np.float32(v) for v in q))
    print("largest relative error in exact arithmetic: %.3g" % error)
