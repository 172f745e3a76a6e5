"""PyTorch's matrix products in bfloat16 and float on the CPU, on the shapes
bench_linalg's bf16_gemm_tandem and bf16_matmul_gpt time, on 1 and 2
threads: the peer of docs/benchmarks/mixed_precision.md's table.

    python3 bench/matmul_bf16_pytorch.py
"""
import time

import torch

SQUARE_AND_MLP = [(1024, 1024, 1024), (128, 784, 256), (128, 256, 256), (128, 256, 10)]
# m, k, n, A transposed, B transposed (the GPT demo's products, as bench_linalg).
GPT = [
    (2048, 128, 384, 0, 1),
    (2048, 128, 512, 0, 1),
    (2048, 512, 128, 0, 1),
    (2048, 384, 128, 0, 0),
    (384, 2048, 128, 1, 0),
    (128, 2048, 512, 1, 0),
]


def seconds_per_call(f, budget=0.5):
    f()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget:
        f()
        calls += 1
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(max(1, calls // 5)):
            f()
        best = min(best, (time.perf_counter() - start) / max(1, calls // 5))
    return best


def operands(m, k, n, a_t, b_t, dtype):
    a = torch.rand(k, m).t() if a_t else torch.rand(m, k)
    b = torch.rand(n, k).t() if b_t else torch.rand(k, n)
    return (a * 2 - 1).to(dtype), (b * 2 - 1).to(dtype)


def main():
    print(f"torch {torch.__version__}")
    print(f"{'shape':>28} {'threads':>7} {'float GFLOP/s':>14} {'bf16 GFLOP/s':>13}")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for m, k, n, a_t, b_t in [s + (0, 0) for s in SQUARE_AND_MLP] + GPT:
            rates = []
            for dtype in (torch.float32, torch.bfloat16):
                a, b = operands(m, k, n, a_t, b_t, dtype)
                rates.append(2 * m * k * n / seconds_per_call(lambda: a @ b) / 1e9)
            name = f"{m}x{k}x{n}" + (" A^T" if a_t else "") + (" B^T" if b_t else "")
            print(f"{name:>28} {threads:>7} {rates[0]:>14.1f} {rates[1]:>13.1f}")


if __name__ == "__main__":
    main()
