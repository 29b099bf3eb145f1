#!/usr/bin/env python3
"""The baseline of benches/embed.rs: sentence-transformers on the CPU, same corpus, same
batch size, same 40-word latency text.

    python3 tools/bench_sentence_transformers.py MODEL_DIR [--texts N] [--batch B] [--rounds R] [--samples S]
"""
import argparse
import statistics
import time

import torch
from sentence_transformers import SentenceTransformer

WORDS = ("the graph stores memories of people places and events an agent "
         "learns while it works with its users every fact links to the entities it mentions and "
         "to other facts that support or contradict it so that recall can follow paths rather "
         "than only match words queries ask what happened when who was involved and why a "
         "decision was made the database keeps typed edges dense ids and immutable segments").split()


def corpus(count):
    """The same generator as corpus() in benches/embed.rs."""
    state = 12345
    out = []

    def nxt():
        nonlocal state
        state = (state * 1103515245 + 12345) & 0xFFFFFFFF
        return state >> 8

    for _ in range(count):
        n = 8 + nxt() % 40
        out.append(" ".join(WORDS[nxt() % len(WORDS)] for _ in range(n)))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model_dir")
    p.add_argument("--texts", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--samples", type=int, default=200)
    a = p.parse_args()
    model = SentenceTransformer(a.model_dir, device="cpu")
    print(f"torch {torch.__version__} threads {torch.get_num_threads()} batch {a.batch}")
    texts = corpus(a.texts)
    model.encode(texts[: a.batch], batch_size=a.batch)
    rates = []
    cpu0 = time.process_time()
    for _ in range(a.rounds):
        t = time.perf_counter()
        v = model.encode(texts, batch_size=a.batch, normalize_embeddings=True)
        rates.append(a.texts / (time.perf_counter() - t))
        assert v.shape[0] == a.texts
    cpu_ms = (time.process_time() - cpu0) * 1000 / (a.rounds * a.texts)
    rates.sort()
    print(f"throughput: {a.texts} texts, median {statistics.median(rates):.1f} sentences/s "
          f"(min {rates[0]:.1f}, max {rates[-1]:.1f})")
    print(f"cpu time: {cpu_ms:.2f} ms per text (all threads)")
    text = " ".join((WORDS * 2)[:40])
    for _ in range(20):
        model.encode([text])
    ms = []
    for _ in range(a.samples):
        t = time.perf_counter()
        model.encode([text], normalize_embeddings=True)
        ms.append((time.perf_counter() - t) * 1000)
    ms.sort()
    q = lambda f: ms[int((len(ms) - 1) * f)]
    print(f"one 40-word text: p50 {q(0.5):.2f} ms, p90 {q(0.9):.2f} ms, p99 {q(0.99):.2f} ms")


if __name__ == "__main__":
    main()
