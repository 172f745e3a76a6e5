#!/usr/bin/env python3
"""PyTorch's twins of bench/cuda/graphs.cu's training steps on a GPU: the
demo's MLP and CNN (bench/training_pytorch.py's models), batch 128 of
random images, Adam (lr 1e-3), one step (zero_grad, forward, backward,
update) eagerly and under torch.compile, timed as graphs.cu times tandem's
(CUDA events, median of 21 steps). For comparison only: tandem never needs
PyTorch.

    python3 bench/cuda/training_torch.py
"""

import os
import sys

import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..")]
from fused_bandwidth_torch import time_ms  # noqa: E402
from training_pytorch import CNN, MLP  # noqa: E402


def step_ms(make_model, compiled):
    torch.manual_seed(7)
    model = make_model().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.rand(128, 784, device="cuda")
    labels = (torch.arange(128) % 10).cuda()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    # Five calls first: torch.compile compiles on them.
    return time_ms(torch.compile(step) if compiled else step, warmup=5)


def add_overhead_us():
    """The eager path's cost per op where the kernel is nothing: 1000 adds
    of one-element tensors in a row, as graphs.cu times tandem's."""
    one = torch.ones(1, device="cuda")

    def adds():
        acc = one
        for _ in range(1000):
            acc = acc + one
        return acc

    return time_ms(adds)  # ms per 1000 ops = us per op


def main():
    print(f"{torch.cuda.get_device_name()}, PyTorch {torch.__version__}\n")
    print(f"{'eager add of 1-element tensors, per op':44s} {add_overhead_us():9.2f} us")
    for name, make in (("MLP 784-256-256-10", MLP), ("CNN", CNN)):
        for mode, compiled in (("eager", False), ("torch.compile", True)):
            print(f"{name + ' training step, ' + mode:44s} {step_ms(make, compiled):9.3f} ms")


if __name__ == "__main__":
    main()
