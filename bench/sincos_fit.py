#!/usr/bin/env python3
"""Fits the float sine and cosine polynomials of include/tandem/detail/math.hpp.

On the reduced argument r in [-pi/4, pi/4]:
    sin r ~ r + r^3 (s0 + s1 r^2 + s2 r^4)       (largest relative error)
    cos r ~ 1 - r^2/2 + r^4 (c0 + c1 r^2 + c2 r^4) (largest absolute error)
The leading terms are exact in float, so only the correction is fitted:
weighted least squares, with Lawson's reweighting moving it toward the
minimax fit. The reference is numpy's double sin and cos (far finer than
float's 6e-8).

    python3 bench/sincos_fit.py        # needs numpy (pip)

prints the coefficients rounded to float, as math.hpp writes them, and the
fit's error in exact arithmetic; the float evaluation's error is measured by
tests/ops/elementwise.cpp.
"""
import numpy as np


def lawson(basis, target, scale, iterations=200):
    weights = np.ones_like(target)
    for _ in range(iterations):
        root = np.sqrt(weights)
        coefficients, *_ = np.linalg.lstsq(basis * (root / scale)[:, None], target * root / scale, rcond=None)
        error = np.abs(basis @ coefficients - target) / scale
        weights *= error / error.max() + 1e-300
        weights /= weights.sum()
    return coefficients, error.max()


def main():
    r = np.linspace(1e-6, np.pi / 4, 40001)
    t = r * r
    sin_basis = np.stack([r**3 * t**k for k in range(3)], 1)
    s, sin_error = lawson(sin_basis, np.sin(r) - r, np.sin(r))
    cos_basis = np.stack([t**2 * t**k for k in range(3)], 1)
    c, cos_error = lawson(cos_basis, np.cos(r) - (1 - t / 2), np.ones_like(r))
    as_float = lambda v: [float(np.float32(x)) for x in v]
    print("sin:", ", ".join(f"{x:.9g}f" for x in as_float(s)), f"(relative error {sin_error:.2e})")
    print("cos:", ", ".join(f"{x:.9g}f" for x in as_float(c)), f"(absolute error {cos_error:.2e})")


if __name__ == "__main__":
    main()
