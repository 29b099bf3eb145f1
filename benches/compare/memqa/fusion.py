"""Fusion rules, modelled in Python exactly as hopgraph-memory's `search::fuse` computes
them, so that eval.py can choose parameters offline and check the Rust output.

A list is [[key, score], ...], best first.
"""

from collections import defaultdict


def rrf(lists, k=60.0, weights=None):
    """Reciprocal rank fusion: a hit at rank r (from 1) of list i adds w_i / (k + r)."""
    weights = weights or [1.0] * len(lists)
    s = defaultdict(float)
    for w, lst in zip(weights, lists):
        for r, (key, _) in enumerate(lst):
            s[key] += w / (k + r + 1)
    return s


def relative(lst):
    """Scores divided by the list's best (text scores: 1 for the best hit)."""
    if not lst:
        return {}
    top = max(lst[0][1], 1e-300)
    return {key: max(sc, 0.0) / top for key, sc in lst}


def minmax(lst):
    """Scores mapped linearly so that the list's best is 1 and its last 0."""
    if not lst:
        return {}
    hi, lo = lst[0][1], lst[-1][1]
    span = hi - lo
    if span <= 0:
        return {key: 1.0 for key, _ in lst}
    return {key: (sc - lo) / span for key, sc in lst}


def ranked(scores, tiebreak=None):
    tiebreak = tiebreak or {}
    return sorted(scores, key=lambda k: (-scores[k], -tiebreak.get(k, 0.0), k))


def neighbours(edges):
    adj = defaultdict(set)
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)
    return adj


def spread(scores, adj, share, seeds=None):
    """Graph step: every memory also gets `share` x the best score among its neighbours
    (both directions) that are among the `seeds` best fused candidates; neighbours not yet
    candidates join. Scores of the seeds themselves are read before the step."""
    order = ranked(scores)
    if seeds:
        order = order[:seeds]
    out = dict(scores)
    best = defaultdict(float)
    for key in order:
        s = scores[key]
        for n in adj.get(key, ()):
            if s > best[n]:
                best[n] = s
    for n, b in best.items():
        out[n] = out.get(n, 0.0) + share * b
    return out
