#!/usr/bin/env python3
"""PyTorch's twin of bench/attention.cpp: torch.nn.functional.scaled_dot_product_attention,
forward and backward, causal, one batch of 4 heads of width 32, T = 256, 1024, 4096, on the
thread count given. For comparison only (pip install torch); never part of tandem's build.

    python3 bench/attention_pytorch.py [--threads 2] [--seconds 2]
"""
import argparse, time
import torch, torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--seconds", type=float, default=2)
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(1)
for t in (256, 1024, 4096):
    q, k, v, g = (torch.randn(1, 4, t, 32) for _ in range(4))
    for x in (q, k, v):
        x.requires_grad_(True)

    def step():
        for x in (q, k, v):
            x.grad = None
        (F.scaled_dot_product_attention(q, k, v, is_causal=True) * g).sum().backward()

    step()
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < a.seconds:
        step()
        n += 1
    ms = (time.perf_counter() - start) / n * 1e3
    flops = 6.0 * 2 * 4 * t * t * 32 / 2
    print(f"torch_sdpa/{t}: {ms:.3f} ms  {flops / ms / 1e6:.1f} GFLOP/s  ({a.threads} threads, torch {torch.__version__})")
