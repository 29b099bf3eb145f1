"""Scores the lists that collect.py wrote, tunes the fusion on a held-out split and
writes the tables (see README.md).

    python eval.py WORK/lists.json --tune 0-4 --out results/NAME
"""

import argparse
import itertools
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusion  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
KS = (5, 10)


def measure(questions, ranking):
    """{metric: value} over the questions; ranking(q) gives the ranked keys."""
    m = defaultdict(float)
    for q in questions:
        keys = ranking(q)
        ev = set(q["evidence"])
        for k in KS:
            found = len(ev & set(keys[:k]))
            m[f"hit@{k}"] += found > 0
            m[f"recall@{k}"] += found / len(ev)
    n = max(len(questions), 1)
    return {key: v / n for key, v in m.items()}


def keys_of(name):
    return lambda q: [k for k, _ in q[name]]


def improved(params, adj_of):
    """The fusion hopgraph-memory uses: see fused() and README.md."""
    def rank(q):
        return fusion.ranked(fused(q, adj_of(q), **params))
    return rank


def fused(q, adj, rule, k=60.0, wt=1.0, alpha=0.5, share=0.0, seeds=0, norm="top"):
    text, vec = q["text"], q["vector"]
    if rule == "rrf":
        s = fusion.rrf([text, vec], k=k, weights=[wt, 1.0])
    else:  # "score": relative text score and relative cosine, convex combination
        f = fusion.relative if norm == "top" else fusion.minmax
        t, v = f(text), f(vec)
        s = {key: alpha * t.get(key, 0.0) + (1 - alpha) * v.get(key, 0.0)
             for key in set(t) | set(v)}
    if share:
        s = fusion.spread(s, adj, share, seeds or None)
    return s


GRID = {
    "rrf": [dict(rule="rrf", k=k, wt=wt) for k in (5, 10, 20, 30, 60, 100)
            for wt in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)],
    "score": [dict(rule="score", alpha=a / 20) for a in range(1, 20)],
    "minmax": [dict(rule="score", norm="minmax", alpha=a / 20) for a in range(1, 20)],
}
GRAPH = [(sh, sd) for sh in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0) for sd in (1, 3, 5, 10, 20)]


# hopgraph-memory's `search::FUSION` (score+graph, chosen by this grid on conv 0-4).
HOPGRAPH = dict(rule="score", alpha=0.75, share=0.6, seeds=5)


def objective(m):
    return m["hit@10"] + m["recall@10"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lists")
    ap.add_argument("--tune", default="0-4", help="conversations to tune on (a-b)")
    ap.add_argument("--out", required=True, help="output prefix (.json, .md)")
    ap.add_argument("--no-grid", action="store_true",
                    help="skip the parameter search (minutes); model only hopgraph's rule")
    a = ap.parse_args()
    with open(a.lists) as f:
        data = json.load(f)
    lo, hi = map(int, a.tune.split("-"))
    convs = data["conversations"]
    for ci, c in enumerate(convs):
        adj = fusion.neighbours(c["edges"])
        for q in c["questions"]:
            q["_conv"], q["_adj"] = ci, adj
    qs = [q for c in convs for q in c["questions"]]
    main_qs = [q for q in qs if q["category"] != 5]
    tune = [q for q in main_qs if lo <= q["_conv"] <= hi]
    held = [q for q in main_qs if not lo <= q["_conv"] <= hi]
    adj_of = lambda q: q["_adj"]  # noqa: E731

    # Tune: best of each family without and with the graph step, on the tuning split.
    chosen = {}
    for fam, grid in ({} if a.no_grid else GRID).items():
        best = max(grid, key=lambda p: objective(measure(tune, improved(p, adj_of))))
        chosen[fam] = best
        graph = [dict(p, share=sh, seeds=sd) for p in grid for sh, sd in GRAPH]
        chosen[fam + "+graph"] = max(
            graph, key=lambda p: objective(measure(tune, improved(p, adj_of))))
    for name, p in chosen.items():
        print(name, p, {k: round(v, 3) for k, v in measure(tune, improved(p, adj_of)).items()},
              "held", {k: round(v, 3) for k, v in measure(held, improved(p, adj_of)).items()})

    systems = {"fts5": keys_of("fts5"), "text": keys_of("text"), "vector": keys_of("vector"),
               "cosine": keys_of("cosine"),
               "plain RRF k=60 (model)": improved(dict(rule="rrf"), adj_of),
               "hopgraph rule (model)": improved(HOPGRAPH, adj_of),
               "hybrid": keys_of("hybrid")}
    if all("server" in q for q in qs):
        systems["server"] = keys_of("server")
    for name, p in chosen.items():
        systems[name] = improved(p, adj_of)
    splits = {"all": main_qs, f"held-out (conv not {a.tune})": held,
              f"tuning (conv {a.tune})": tune, "adversarial (cat 5)": [q for q in qs if q["category"] == 5]}
    for c in (1, 2, 3, 4):
        splits[f"cat {c} {CATEGORIES[c]}"] = [q for q in main_qs if q["category"] == c]
    table = {s: {name: measure(sq, r) for name, r in systems.items()} for s, sq in splits.items()}
    counts = {s: len(sq) for s, sq in splits.items()}
    out = {"commit": data.get("commit"), "sqlite": data.get("sqlite"), "chosen": chosen,
           "counts": counts, "table": table}
    with open(a.out + ".json", "w") as f:
        json.dump(out, f, indent=1)
    lines = []
    for s, rows in table.items():
        lines.append(f"\n### {s} ({counts[s]} questions)\n")
        lines.append("| system | hit@5 | hit@10 | recall@5 | recall@10 |")
        lines.append("|---|---:|---:|---:|---:|")
        for name, m in rows.items():
            lines.append(f"| {name} | {m['hit@5']:.3f} | {m['hit@10']:.3f} | "
                         f"{m['recall@5']:.3f} | {m['recall@10']:.3f} |")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines).lstrip() + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
