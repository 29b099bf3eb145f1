"""A seeded synthetic set shaped like sentence embeddings, and hnswlib/usearch on it.

Usage:
    python synth384.py gen DIR [--rows N] [--dim D] [--seed S]
    python synth384.py run DIR [--usearch]

`gen` writes DIR/data.npy (N x D float32, default 1,000,000 x 384), DIR/queries.npy
(1,000 held-out rows of the same distribution) and DIR/truth.npy (exact cosine top-10 of
each query over the data rows, int32, computed with numpy in blocks), then prints the
set's neighbour statistics. `run` loads them and measures hnswlib and (with --usearch)
usearch exactly as hnswlib_glove.py does (M 16, ef_construction 128, cosine, one thread,
one query per call; recall@10, p50/p99, queries/s per ef, build wall and CPU seconds,
index file size, and the process's resident memory growth over the build).
hopgraph reads the same files: `HOPGRAPH_BENCH_NPY=DIR/data.npy
HOPGRAPH_BENCH_QUERIES_NPY=DIR/queries.npy cargo bench --bench vector`.

The generator (all draws from numpy's PCG64 seeded with S, default 384):
- An anisotropic space, as sentence-encoder outputs are: a random rotation Q (QR of a
  Gaussian matrix) and per-axis standard deviations s_i = (i + 1)^-0.5 (a power-law
  spectrum: a few dozen directions carry most of the variance), plus a common mean
  direction mu of norm 1.0 (relative to a centre spread of sqrt(sum s_i^2) ~ 6.5) so that
  unrelated rows have a small positive cosine, as MiniLM's do.
- C = max(64, N / 250) cluster centres ("topics", 4,000 at 1M rows):
  mu + (z * s) @ Q.T with z ~ N(0, I).
- Cluster sizes vary: weights proportional to Zipf-like (rank + 10)^-0.8 over a random
  order of the centres, so a few topics are large and many are small.
- Spreads vary: each cluster's spread is lognormal around 0.55 (sigma 0.35) times the
  centre spread; a row is centre + spread * (z' * s') @ Q.T, where s' mixes the global
  spectrum with a flat floor (0.6 s_i + 0.4 s_mean) so within-topic noise is not confined
  to the top directions.
- Every row is L2-normalised (as all-MiniLM-L6-v2's pooled outputs are).
- Queries: 1,000 further rows drawn the same way (after the data rows, same clusters).
"""

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

EFS = [16, 24, 32, 48, 64, 96, 128, 192, 256]
QUERIES = 1000
BLOCK = 50_000


def arg(name, default):
    if name in sys.argv:
        return type(default)(sys.argv[sys.argv.index(name) + 1])
    return default


def generate(n, dim, seed):
    """(data, queries), float32 unit rows, by the process the module doc describes."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    s = (np.arange(dim) + 1.0) ** -0.5
    inner = 0.6 * s + 0.4 * s.mean()
    mu = rng.standard_normal(dim)
    mu *= 1.0 / np.linalg.norm(mu)
    c = max(64, n // 250)
    centres = mu + (rng.standard_normal((c, dim)) * s) @ q.T
    weights = (rng.permutation(c) + 10.0) ** -0.8
    weights /= weights.sum()
    spread = 0.55 * np.exp(0.35 * rng.standard_normal(c)) * np.sqrt((s**2).sum())
    spread /= np.sqrt((inner**2).sum())
    total = n + QUERIES
    out = np.empty((total, dim), dtype=np.float32)
    for lo in range(0, total, BLOCK):
        hi = min(total, lo + BLOCK)
        which = rng.choice(c, size=hi - lo, p=weights)
        rows = centres[which] + spread[which, None] * (
            (rng.standard_normal((hi - lo, dim)) * inner) @ q.T
        )
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        out[lo:hi] = rows
    return out[:n], out[n:]


def exact_top10(data, queries):
    """Exact cosine top-10 (rows are unit), best first, scanned in blocks of rows."""
    best_sim = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    best_idx = np.zeros((len(queries), 10), dtype=np.int64)
    for lo in range(0, len(data), BLOCK):
        sims = queries @ data[lo : lo + BLOCK].T
        top = np.argpartition(-sims, 10, axis=1)[:, :10]
        cand_sim = np.concatenate([best_sim, np.take_along_axis(sims, top, 1)], axis=1)
        cand_idx = np.concatenate([best_idx, top + lo], axis=1)
        keep = np.argsort(-cand_sim, axis=1, kind="stable")[:, :10]
        best_sim = np.take_along_axis(cand_sim, keep, 1)
        best_idx = np.take_along_axis(cand_idx, keep, 1)
    return best_idx.astype(np.int32), best_sim


def gen(out_dir):
    n, dim, seed = arg("--rows", 1_000_000), arg("--dim", 384), arg("--seed", 384)
    os.makedirs(out_dir, exist_ok=True)
    t = time.perf_counter()
    data, queries = generate(n, dim, seed)
    truth, sims = exact_top10(data, queries)
    np.save(os.path.join(out_dir, "data.npy"), data)
    np.save(os.path.join(out_dir, "queries.npy"), queries)
    np.save(os.path.join(out_dir, "truth.npy"), truth)
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, n, 20_000), rng.integers(0, n, 20_000)
    rand = np.einsum("ij,ij->i", data[a], data[b])
    print(f"{n} x {dim}, seed {seed}, {max(64, n // 250)} clusters, "
          f"{time.perf_counter() - t:.1f} s")
    print(f"cosine of random pairs: mean {rand.mean():.3f}, p99 {np.quantile(rand, 0.99):.3f}")
    print(f"query to its 1st / 10th nearest: mean {sims[:, 0].mean():.3f} / "
          f"{sims[:, 9].mean():.3f} (p10 {np.quantile(sims[:, 9], 0.1):.3f}, "
          f"p90 {np.quantile(sims[:, 9], 0.9):.3f})")


def run(in_dir):
    import hnswlib_glove as h

    h.EFS = EFS
    data = np.load(os.path.join(in_dir, "data.npy"))
    queries = np.load(os.path.join(in_dir, "queries.npy"))
    truth = list(np.load(os.path.join(in_dir, "truth.npy")))
    h.run_hnswlib(data, queries, truth)
    if "--usearch" in sys.argv:
        h.run_usearch(data, queries, truth)


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    {"gen": gen, "run": run}[cmd](path)


if __name__ == "__main__":
    main()
