#!/usr/bin/env python3
"""Files of the Python ecosystem for tandem's readers, and a check of the files tandem writes.

    python3 bench/interop_reference.py            # writes tests/io/data and tests/nn/data/gpt_pytorch*
    python3 bench/interop_reference.py --check D  # reads the files tests/io wrote into D

NumPy, safetensors and PyTorch (pip install numpy safetensors torch) are needed here only: the
tests read the committed files. Every array's values follow its element type's formula of the
C-order index i (tests/io/formulas.hpp has the same):
    float: i * 0.25 - 1      int32: i * 3 - 5      int64: i * 3 - 5 + (i % 2) * 2**40
    bool: i % 3 == 0
The GPT is nanoGPT's layout (PyTorch nn.Linear weights are [out, in]) with nn::gpt's sizes; its
logits for fixed tokens, in float64, are what tandem must reproduce after loading the weights.
"""
import io, math, os, sys, zipfile
import numpy as np


def values(dtype, shape):
    i = np.arange(math.prod(shape), dtype=np.int64)
    kind = np.dtype(dtype)
    if kind == np.bool_:
        v = i % 3 == 0
    elif kind.kind == "f":
        v = i * 0.25 - 1
    elif kind.itemsize == 4:
        v = i * 3 - 5
    else:
        v = i * 3 - 5 + (i % 2) * 2**40
    return v.astype(dtype).reshape(shape)


def write_npy(path, array, version=None):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, array, version=version)


def write(folder, gpt_folder):
    os.makedirs(folder, exist_ok=True)
    write_npy(f"{folder}/c_f4_2x3.npy", values("<f4", (2, 3)))
    write_npy(f"{folder}/c_f8_7.npy", values("<f8", (7,)))
    write_npy(f"{folder}/c_i4_2x2_big.npy", values(">i4", (2, 2)))
    write_npy(f"{folder}/fortran_i8_2x3x4.npy", np.asfortranarray(values("<i8", (2, 3, 4))))
    write_npy(f"{folder}/fortran_f8_3x5_big.npy", np.asfortranarray(values(">f8", (3, 5))))
    write_npy(f"{folder}/c_b1_5.npy", values("?", (5,)))
    write_npy(f"{folder}/c_f4_scalar.npy", values("<f4", ()))
    write_npy(f"{folder}/c_f8_0x3.npy", values("<f8", (0, 3)))
    write_npy(f"{folder}/v2_f4_4.npy", values("<f4", (4,)), version=(2, 0))
    write_npy(f"{folder}/f2_3.npy", values("<f2", (3,)))
    arrays = dict(a=values("<f4", (2, 3)), b=np.asfortranarray(values("<i8", (2, 3, 4))), c=values("?", (5,)))
    np.savez(f"{folder}/arrays.npz", **arrays)
    np.savez_compressed(f"{folder}/arrays_compressed.npz", **arrays)

    from safetensors.numpy import save_file
    save_file({"f32": values("<f4", (2, 3)), "f64": values("<f8", (7,)), "i32": values("<i4", (2, 2)),
               "i64": values("<i8", (3, 4)), "bool": values("?", (5,)), "scalar": values("<f4", ()),
               "empty": values("<f4", (0, 3))},
              f"{folder}/tensors.safetensors", metadata={"format": "np", "note": 'tandem "test"'})
    save_file({"f16": values("<f2", (3,)), "f32": values("<f4", (2,))}, f"{folder}/mixed.safetensors")
    write_gpt(gpt_folder)


def write_gpt(folder):
    import torch, torch.nn as nn, torch.nn.functional as F
    from safetensors.torch import save_file

    V, T, D, H, L, B = 11, 8, 8, 2, 2, 2
    torch.manual_seed(0)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = (z.view(b, t, H, d // H).transpose(1, 2) for z in self.c_attn(x).split(d, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).reshape(b, t, d))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc, self.c_proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2, self.mlp = nn.LayerNorm(D), Attention(), nn.LayerNorm(D), MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
            self.h = nn.ModuleList(Block() for _ in range(L))
            self.ln_f, self.lm_head = nn.LayerNorm(D), nn.Linear(D, V)
            for p in self.parameters():  # LayerNorm's ones and zeros would hide a swapped weight and bias
                nn.init.normal_(p, std=0.5)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    model = GPT().eval()
    os.makedirs(folder, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, f"{folder}/gpt_pytorch.safetensors",
              metadata={"source": f"bench/interop_reference.py, PyTorch {torch.__version__}"})
    tokens = torch.randint(0, V, (B, T))
    with torch.no_grad():
        logits = model.double()(tokens)
    np.savez(f"{folder}/gpt_pytorch_logits.npz", tokens=tokens.numpy(), logits=logits.numpy())


def check(folder):
    """The files tests/io wrote (tests/io/npy.cpp, npz.cpp, safetensors.cpp: 'written_*')."""
    from safetensors.numpy import load_file
    from safetensors import safe_open
    expected = {"a": values("<f8", (2, 3)), "b": values("<i4", (4,)), "c": values("?", (3,))}
    failures = []

    def same(what, got, want):
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            failures.append(f"{what}: {got.dtype} {got.shape} {got!r} != {want.dtype} {want.shape}")

    same("written.npy", np.load(f"{folder}/written.npy"), values("<f4", (3, 4)))
    for name in ("written.npz", "written_compressed.npz"):
        with np.load(f"{folder}/{name}") as archive:
            if sorted(archive.files) != sorted(expected):
                failures.append(f"{name} holds {archive.files}")
            for key, want in expected.items():
                same(f"{name}[{key}]", archive[key], want)
    with zipfile.ZipFile(f"{folder}/written_compressed.npz") as z:
        if any(i.compress_type != zipfile.ZIP_DEFLATED for i in z.infolist()):
            failures.append("written_compressed.npz has stored entries")
    tensors = load_file(f"{folder}/written.safetensors")
    for key, want in {"f32": values("<f4", (2, 3)), "i64": values("<i8", (3,)), "flags": values("?", (4,))}.items():
        same(f"written.safetensors[{key}]", tensors.get(key, np.zeros(0)), want)
    with safe_open(f"{folder}/written.safetensors", framework="np") as f:
        if f.metadata() != {"source": "tandem", "quoted": 'a "b"\n'}:
            failures.append(f"written.safetensors metadata {f.metadata()}")
    print("\n".join(failures) or "all files tandem wrote read back equal")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    write("tests/io/data", "tests/nn/data")
