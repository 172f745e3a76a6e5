#!/usr/bin/env python3
"""Writes tests/nn/data/gpt_reference.txt: a small GPT of nn::gpt's layout (token and position
embeddings, pre-norm blocks of causal attention and a GELU MLP, a final layer norm, a linear head)
with fixed float32 weights, a batch of tokens, and PyTorch's loss and gradient of every parameter,
computed in float64. tests/nn/transformer.cpp loads the weights into nn::gpt<float, 2> and checks
its loss and gradients, eagerly and as a static graph, against these.

    python3 bench/gpt_reference.py [OUT]

PyTorch (from PyPI) is needed here only; the test reads the committed file.
"""
import math, sys
import torch, torch.nn.functional as F

V, T, D, H, L, B = 11, 8, 8, 2, 2, 2
out_path = sys.argv[1] if len(sys.argv) > 1 else "tests/nn/data/gpt_reference.txt"
torch.manual_seed(0)


def rounded(*shape, scale=0.5, offset=0.0):
    """Float32 values, kept as float64: both sides start from the same numbers."""
    return (offset + scale * torch.randn(*shape)).float().double().requires_grad_(True)


# tandem's names and layouts: linear weights are [in, out].
params = {"tokens.weight": rounded(V, D, scale=1.0), "positions.weight": rounded(T, D, scale=1.0)}
for l in range(L):
    p = f"block{l}."
    params[p + "norm1.weight"] = rounded(D, scale=0.1, offset=1.0)
    params[p + "norm1.bias"] = rounded(D, scale=0.1)
    params[p + "attention.qkv.weight"] = rounded(D, 3 * D)
    params[p + "attention.qkv.bias"] = rounded(3 * D, scale=0.1)
    params[p + "attention.proj.weight"] = rounded(D, D)
    params[p + "attention.proj.bias"] = rounded(D, scale=0.1)
    params[p + "norm2.weight"] = rounded(D, scale=0.1, offset=1.0)
    params[p + "norm2.bias"] = rounded(D, scale=0.1)
    params[p + "fc.weight"] = rounded(D, 4 * D)
    params[p + "fc.bias"] = rounded(4 * D, scale=0.1)
    params[p + "out.weight"] = rounded(4 * D, D)
    params[p + "out.bias"] = rounded(D, scale=0.1)
params["norm.weight"] = rounded(D, scale=0.1, offset=1.0)
params["norm.bias"] = rounded(D, scale=0.1)
params["head.weight"] = rounded(D, V)
params["head.bias"] = rounded(V, scale=0.1)

inputs = torch.randint(0, V, (B, T))
targets = torch.randint(0, V, (B, T))


def loss_of(p):
    x = p["tokens.weight"][inputs] + p["positions.weight"][torch.arange(T)]
    for l in range(L):
        q = f"block{l}."
        h = F.layer_norm(x, (D,), p[q + "norm1.weight"], p[q + "norm1.bias"], 1e-5)
        qkv = h @ p[q + "attention.qkv.weight"] + p[q + "attention.qkv.bias"]
        a, k, v = (z.reshape(B, T, H, D // H).transpose(1, 2) for z in qkv.split(D, dim=-1))
        y = F.scaled_dot_product_attention(a, k, v, is_causal=True).transpose(1, 2).reshape(B, T, D)
        x = x + y @ p[q + "attention.proj.weight"] + p[q + "attention.proj.bias"]
        h = F.layer_norm(x, (D,), p[q + "norm2.weight"], p[q + "norm2.bias"], 1e-5)
        x = x + F.gelu(h @ p[q + "fc.weight"] + p[q + "fc.bias"]) @ p[q + "out.weight"] + p[q + "out.bias"]
    x = F.layer_norm(x, (D,), p["norm.weight"], p["norm.bias"], 1e-5)
    logits = x @ p["head.weight"] + p["head.bias"]
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


loss = loss_of(params)
loss.backward()


def line(name, t):
    t = t.detach()
    dims = " ".join(str(d) for d in t.shape)
    values = " ".join(f"{v:.17g}" for v in t.reshape(-1).tolist())
    return f"{name} {t.dim()} {dims} : {values}\n".replace("  :", " :")


with open(out_path, "w") as f:
    f.write(f"# bench/gpt_reference.py, PyTorch {torch.__version__}: vocabulary {V}, context {T}, width {D}, "
            f"heads {H}, layers {L}, batch {B}; values in float64\n")
    f.write(line("inputs", inputs))
    f.write(line("targets", targets))
    f.write(line("loss", loss))
    for name, p in params.items():
        f.write(line("value." + name, p))
    for name, p in params.items():
        f.write(line("grad." + name, p.grad))
print(f"wrote {out_path}: loss {loss.item():.6f}")
