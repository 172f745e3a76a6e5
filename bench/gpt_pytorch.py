#!/usr/bin/env python3
"""PyTorch's twin of the GPT demo's training step, for its tokens/s: the same model (4 pre-norm
blocks, 4 heads, width 128, context 128, vocabulary 65, batch 16), AdamW with gradient clipping
at 1.0, on random token windows (the speed does not depend on the text), eagerly and under
torch.compile, on the thread count given. For comparison only (pip install torch).

    python3 bench/gpt_pytorch.py [--threads 2] [--steps 60] [--compile]
    python3 bench/gpt_pytorch.py --generate 400    # sampling tokens/s, nanoGPT's way (no cache)
    python3 bench/gpt_pytorch.py --generate 400 --cache   # with a key-value cache, as tandem samples
    python3 bench/gpt_pytorch.py --products   # GFLOP/s of the step's matrix products (bench_linalg's matmul_gpt)
"""
import argparse, time
import torch, torch.nn as nn, torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--compile", action="store_true")
ap.add_argument("--autocast", action="store_true", help="the forward under torch.autocast('cpu', bfloat16)")
ap.add_argument("--generate", type=int, default=0)
ap.add_argument("--cache", action="store_true", help="sample with a key-value cache per block")
ap.add_argument("--products", action="store_true", help="time the training step's matrix products")
a = ap.parse_args()
torch.set_num_threads(a.threads)
if a.products:
    # m, k, n and which operand is read transposed, as bench_linalg's matmul_gpt.
    for m, k, n, at, bt in [(2048, 128, 384, 0, 1), (2048, 128, 512, 0, 1), (2048, 512, 128, 0, 1),
                            (2048, 384, 128, 0, 0), (384, 2048, 128, 1, 0), (128, 2048, 512, 1, 0)]:
        x = torch.rand(k, m).t() if at else torch.rand(m, k)
        w = torch.rand(n, k).t() if bt else torch.rand(k, n)
        for _ in range(5):
            x @ w
        runs, start = 0, time.perf_counter()
        while time.perf_counter() - start < 1:
            x @ w
            runs += 1
        seconds = (time.perf_counter() - start) / runs
        print(f"{m} x {k} x {n} (aT {at}, bT {bt}): {2 * m * k * n / seconds / 1e9:.0f} GFLOP/s ({a.threads} threads)")
    raise SystemExit
torch.manual_seed(0)
V, D, H, T, L, B = 65, 128, 4, 128, 4, 16


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1, s.qkv, s.proj = nn.LayerNorm(D), nn.Linear(D, 3 * D), nn.Linear(D, D)
        s.ln2, s.fc, s.out = nn.LayerNorm(D), nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(s, x):
        b, t, _ = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(D, dim=2)
        q, k, v = (z.view(b, t, H, D // H).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, D)
        x = x + s.proj(y)
        return x + s.out(F.gelu(s.fc(s.ln2(x))))


class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
        s.blocks = nn.Sequential(*[Block() for _ in range(L)])
        s.lnf, s.head = nn.LayerNorm(D), nn.Linear(D, V)

    def forward(s, idx, tgt):
        x = s.wte(idx) + s.wpe(torch.arange(idx.shape[1]))
        return F.cross_entropy(s.head(s.lnf(s.blocks(x))).view(-1, V), tgt.view(-1))


model = GPT()


def block_cached(blk, x, cache):
    """One block on new positions x [1, n, D], their keys and values appended
    to cache (a list [k, v] of [1, H, t, D / H], or empty)."""
    b, n, _ = x.shape
    q, k, v = blk.qkv(blk.ln1(x)).split(D, dim=2)
    q, k, v = (z.view(b, n, H, D // H).transpose(1, 2) for z in (q, k, v))
    if cache:
        k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
    cache[:] = [k, v]
    y = F.scaled_dot_product_attention(q, k, v, is_causal=n > 1).transpose(1, 2).reshape(b, n, D)
    x = x + blk.proj(y)
    return x + blk.out(F.gelu(blk.fc(blk.ln2(x))))


def logits_cached(tokens, start, caches):
    x = model.wte(tokens) + model.wpe(torch.arange(start, start + tokens.shape[1]))
    for blk, cache in zip(model.blocks, caches):
        x = block_cached(blk, x, cache)
    return model.head(model.lnf(x))[:, -1, :]


if a.generate and a.cache:
    # A key-value cache per block, the window's keys computed once; when the
    # context is full, the cache is rebuilt from the last half of the window
    # (as tandem's nn::generate does). Temperature 0.8, top 20.
    model.eval()
    idx = torch.randint(0, V, (1, 12))
    start = time.perf_counter()
    with torch.no_grad():
        caches = [[] for _ in range(L)]
        logits = logits_cached(idx, 0, caches)
        for _ in range(a.generate):
            logits = logits / 0.8
            kth = torch.topk(logits, 20).values[:, -1:]
            logits[logits < kth] = -float("inf")
            nxt = torch.multinomial(F.softmax(logits, -1), 1)
            idx = torch.cat([idx, nxt], 1)
            length = caches[0][0].shape[2]
            if length == T:
                window = idx[:, -(T // 2):]
                caches = [[] for _ in range(L)]
                logits = logits_cached(window, 0, caches)
            else:
                logits = logits_cached(nxt, length, caches)
    seconds = time.perf_counter() - start
    print(f"pytorch generate (key-value cache): {a.generate / seconds:.0f} tokens/s "
          f"({a.threads} threads, torch {torch.__version__})")
    raise SystemExit
if a.generate:
    # nanoGPT's sample(): the whole window through the model for each new
    # token, temperature 0.8, top 20, from a 12-character prompt.
    model.eval()
    idx = torch.randint(0, V, (1, 12))
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(a.generate):
            window = idx[:, -T:]
            x = model.wte(window) + model.wpe(torch.arange(window.shape[1]))
            logits = model.head(model.lnf(model.blocks(x)))[:, -1, :] / 0.8
            kth = torch.topk(logits, 20).values[:, -1:]
            logits[logits < kth] = -float("inf")
            idx = torch.cat([idx, torch.multinomial(F.softmax(logits, -1), 1)], 1)
    seconds = time.perf_counter() - start
    print(f"pytorch generate (no cache): {a.generate / seconds:.0f} tokens/s ({a.threads} threads, torch {torch.__version__})")
    raise SystemExit
loss_fn = torch.compile(model) if a.compile else model
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
x, y = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))


def step():
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast):
        loss = loss_fn(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


for _ in range(5):
    step()
times = []
for _ in range(a.steps):
    begun = time.perf_counter()
    step()
    times.append(time.perf_counter() - begun)
seconds, median = sum(times), sorted(times)[len(times) // 2]
print(f"pytorch {'compile' if a.compile else 'eager'}: {a.steps * B * T / seconds:.0f} tokens/s, "
      f"{seconds / a.steps * 1e3:.1f} ms/step; median {median * 1e3:.1f} ms per step, {B * T / median:.0f} tokens/s "
      f"({a.threads} threads, torch {torch.__version__})")
