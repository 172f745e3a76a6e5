#!/usr/bin/env python3
"""PyTorch's twins of bench/training.cpp's steps, for comparison only.

The demo's MLP and CNN, PyTorch's default initialization, Adam (lr 1e-3),
batch 128, one training step (zero_grad, forward, backward, update) timed
on 1 and 2 threads, eagerly and under torch.compile. Needs `pip install
torch`; never part of tandem's build or tests.

    python3 bench/training_pytorch.py [--seconds 2] [--json out.json] [--autocast]

--autocast runs each step under torch.autocast("cpu", dtype=torch.bfloat16)
(bench_training's *_bf16 rows).

Prints one line per case in bench_training's units (microseconds per step
for the MLP, milliseconds for the CNN), and with --json writes them for
bench/plot_training.py.
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden1 = nn.Linear(784, 256)
        self.hidden2 = nn.Linear(256, 256)
        self.out = nn.Linear(256, 10)

    def forward(self, x):
        return self.out(F.relu(self.hidden2(F.relu(self.hidden1(x)))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.norm1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.norm2 = nn.BatchNorm2d(32)
        self.hidden = nn.Linear(32 * 7 * 7, 128)
        self.out = nn.Linear(128, 10)

    def forward(self, images):
        x = images.reshape(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.norm1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.norm2(self.conv2(x))), 2)
        return self.out(F.relu(self.hidden(x.flatten(1))))


def time_step(make_model, threads, compiled, seconds, autocast=False):
    torch.set_num_threads(threads)
    torch.manual_seed(7)
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.rand(128, 784)
    labels = torch.arange(128) % 10

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    run = torch.compile(step) if compiled else step
    for _ in range(5):  # warm-up (and compilation)
        run(images, labels)
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        run(images, labels)
        steps += 1
    return (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--json")
    parser.add_argument("--autocast", action="store_true")
    args = parser.parse_args()
    suffix = "_bf16" if args.autocast else ""
    results = {}
    for name, make, unit, scale in (("mlp", MLP, "us", 1e6), ("cnn", CNN, "ms", 1e3)):
        for mode, compiled in (("eager", False), ("compile", True)):
            for threads in (1, 2):
                try:
                    seconds = time_step(make, threads, compiled, args.seconds, args.autocast)
                except Exception as error:  # torch.compile needs a working C++ toolchain
                    print(f"{name}_step_pytorch_{mode}{suffix}/{threads}: failed ({type(error).__name__}: {error})")
                    continue
                key = f"{name}_step_pytorch_{mode}{suffix}/{threads}"
                results[key] = seconds * scale
                print(f"{key:34s} {seconds * scale:10.1f} {unit}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"torch": torch.__version__, "steps": results}, out, indent=1)


if __name__ == "__main__":
    main()
