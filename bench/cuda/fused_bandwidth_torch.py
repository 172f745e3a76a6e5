#!/usr/bin/env python3
"""PyTorch eager and torch.compile on the expressions of fused_bandwidth.cu,
timed the same way (CUDA events, median of 21 calls, 64M floats), as
percentages of a device-to-device copy. For comparison only: tandem never
needs PyTorch.

    python3 bench/cuda/fused_bandwidth_torch.py
"""

import statistics

import torch


def time_ms(fn, reps=21, warmup=1):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def chain(x):
    a = x + x
    b = a * x
    c = b * x
    d = c + x
    e = torch.tanh(d)
    g = e * x
    h = g - x
    return h * h


def gradient(x, y):
    return torch.autograd.grad(torch.sum(torch.tanh(x * y + x) * y), (x, y))


def main():
    n = 64 << 20
    x = (0.5 * torch.sin(0.001 * (torch.arange(n, device="cuda") % 100003).float())).requires_grad_(False)
    y = x.clone()
    out = torch.empty_like(x)
    xg, yg = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    copy_ms = time_ms(lambda: out.copy_(x))
    compiled_chain = torch.compile(chain)
    compiled_gradient = torch.compile(gradient)
    rows = [
        ("tensor.copy_", 8, copy_ms),
        ("8-op chain, eager", 8, time_ms(lambda: chain(x))),
        ("8-op chain, torch.compile", 8, time_ms(lambda: compiled_chain(x))),
        ("gradient of sum(tanh(x*y+x)*y), eager", 16, time_ms(lambda: gradient(xg, yg))),
        ("gradient, torch.compile", 16, time_ms(lambda: compiled_gradient(xg, yg))),
    ]
    copy_gbps = 8 * n / (copy_ms * 1e6)
    print(f"{torch.cuda.get_device_name()}; torch {torch.__version__}; {n} floats; median of 21 runs (CUDA events)")
    print(f"{'kernel':40} {'ms':>9} {'GB/s':>9} {'of copy':>9}")
    for name, bytes_per_element, ms in rows:
        gbps = bytes_per_element * n / (ms * 1e6)
        print(f"{name:40} {ms:9.3f} {gbps:9.0f} {100 * gbps / copy_gbps:8.0f}%")


if __name__ == "__main__":
    main()
