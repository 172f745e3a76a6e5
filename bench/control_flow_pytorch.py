"""PyTorch's side of bench_control_flow's rnn_* rows (comparison only: needs
`pip install torch`, never a dependency of tandem): the same RNN over 100
steps (batch 32, 8 features, hidden 256), forward and backward of the loss
with respect to its weights, in PyTorch eager and under torch.compile.
Prints the median of the timed runs in milliseconds.

    python3 bench/control_flow_pytorch.py [threads]
"""
import statistics
import sys
import time

import torch

FEATURES, HIDDEN, STEPS, BATCH = 8, 256, 100, 32


def make():
    g = torch.Generator().manual_seed(3)
    w = ((torch.rand(FEATURES, HIDDEN, generator=g) * 2 - 1) * 0.3).requires_grad_()
    u = ((torch.rand(HIDDEN, HIDDEN, generator=g) * 2 - 1) * 0.06).requires_grad_()
    b = torch.zeros(HIDDEN, requires_grad=True)
    readout = ((torch.rand(HIDDEN, 1, generator=g) * 2 - 1) * 0.06).requires_grad_()
    h0 = torch.zeros(BATCH, HIDDEN)
    xs = torch.randn(STEPS, BATCH, FEATURES, generator=g)
    return w, u, b, readout, h0, xs


def loss(w, u, b, readout, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = torch.tanh(xs[t] @ w + h @ u + b)
    return ((h @ readout) ** 2).mean()


def time_it(fn, params, args, repeats=20):
    for _ in range(3):
        for p in params:
            p.grad = None
        fn(*params, *args).backward()
    times = []
    for _ in range(repeats):
        for p in params:
            p.grad = None
        start = time.perf_counter()
        fn(*params, *args).backward()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    if len(sys.argv) > 1:
        torch.set_num_threads(int(sys.argv[1]))
    w, u, b, readout, h0, xs = make()
    params, args = (w, u, b, readout), (h0, xs)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"pytorch eager          {time_it(loss, params, args):8.2f} ms")
    compiled = torch.compile(loss)
    print(f"pytorch torch.compile  {time_it(compiled, params, args):8.2f} ms")


if __name__ == "__main__":
    main()
