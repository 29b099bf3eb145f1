"""report.py - results/NAME.json -> results/NAME.md (tables) and results/NAME.png (chart).

  python report.py results/quick.json                     # re-render without re-running
  python report.py results/quick.json results/full.json --name combined
                                                          # one table set from several runs
"""
from __future__ import annotations

import json
import re
import os
import sys

MiB = 1024 * 1024


def fmt_t(s) -> str:
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_mib(b) -> str:
    return "—" if b is None else f"{b / MiB:,.1f}"


def fmt_ratio(peer, ref) -> str:
    if peer is None or ref is None or ref == 0:
        return "—"
    r = peer / ref
    if r >= 100:
        return f"{r:,.0f}×"
    if r >= 10:
        return f"{r:.1f}×"
    return f"{r:.2f}×"


def qget(sres: dict, q: str, key: str):
    return sres.get("queries", {}).get(q, {}).get(key)


def done_str(qr: dict) -> str:
    if not qr:
        return "—"
    total = qr.get("total")
    s = f"{qr.get('done', 0)}/{total if total is not None else '?'}"
    if qr.get("killed"):
        s += " (killed)"
    elif total and qr.get("done", 0) < total:
        s += " (budget)"
    return s


def lat3(qr: dict) -> str:
    if not qr or qr.get("p50_s") is None:
        return "—"
    return " / ".join(fmt_t(qr.get(k)) for k in ("p50_s", "p90_s", "p99_s"))


def dataset_tables(ds: str, entry: dict) -> list[str]:
    meta = entry["meta"]
    systems = entry["systems"]
    ref = systems.get("hopgraph", {})
    tc = meta.get("type_counts") or {}
    lines = [
        f"### {ds}: {meta.get('nodes_with_degree'):,} nodes, {meta.get('edges'):,} directed edges "
        f"(caused_by {tc.get('caused_by', 0):,}), max degree {meta.get('max_total_degree', 0):,}",
        "",
        "| system | load | disk MiB | peak RSS load MiB | all types p50 / p90 / p99 | done | found | "
        "hop disagreements | caused_by p50 / p90 / p99 | done | found | hop disagreements | "
        "peak RSS query MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in systems.items():
        ld = s.get("load", {})
        qa = s.get("queries", {}).get("all", {})
        qc = s.get("queries", {}).get("caused_by", {})
        load = fmt_t(ld.get("load_s")) if ld.get("rc") == 0 else ("killed" if ld.get("killed") else "failed")

        def dis(q):
            if name == "hopgraph":
                lim = q.get("limit_reached")
                return "(reference)" + (f", {lim} limit_reached" if lim else "")
            ag = q.get("agreement")
            return "—" if not ag else f"{ag['disagreements']} of {ag['compared']}"

        rss_q = max([q.get("peak_rss_bytes") or 0 for q in (qa, qc)] or [0]) or None
        lines.append(
            f"| {name} | {load} | {fmt_mib(ld.get('disk_bytes'))} | {fmt_mib(ld.get('peak_rss_bytes'))} | "
            f"{lat3(qa)} | {done_str(qa)} | {qa.get('found', '—')} | {dis(qa) if qa else '—'} | "
            f"{lat3(qc)} | {done_str(qc)} | {qc.get('found', '—')} | {dis(qc) if qc else '—'} | "
            f"{fmt_mib(rss_q)} |"
        )
    lines += [
        "",
        f"Ratios, peer ÷ hopgraph (above 1×: hopgraph is faster / smaller):",
        "",
        "| system | load time | disk | peak RSS load | p50 all | p99 all | p50 caused_by | p99 caused_by |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rl = ref.get("load", {})
    for name, s in systems.items():
        if name == "hopgraph":
            continue
        ld = s.get("load", {})
        lines.append(
            f"| {name} | {fmt_ratio(ld.get('load_s'), rl.get('load_s'))} | "
            f"{fmt_ratio(ld.get('disk_bytes'), rl.get('disk_bytes'))} | "
            f"{fmt_ratio(ld.get('peak_rss_bytes'), rl.get('peak_rss_bytes'))} | "
            f"{fmt_ratio(qget(s, 'all', 'p50_s'), qget(ref, 'all', 'p50_s'))} | "
            f"{fmt_ratio(qget(s, 'all', 'p99_s'), qget(ref, 'all', 'p99_s'))} | "
            f"{fmt_ratio(qget(s, 'caused_by', 'p50_s'), qget(ref, 'caused_by', 'p50_s'))} | "
            f"{fmt_ratio(qget(s, 'caused_by', 'p99_s'), qget(ref, 'caused_by', 'p99_s'))} |"
        )
    dis_lines = []
    for name, s in systems.items():
        for q, qr in s.get("queries", {}).items():
            ag = qr.get("agreement") or {}
            for d in ag.get("first", []):
                dis_lines.append(f"- {name} {q}: pair #{d['i']} {d['from']} → {d['to']}: hopgraph "
                                 f"{d['hopgraph']}, {name} {d['peer']} (None = no path within 10 hops)")
    if dis_lines:
        lines += ["", "First hop-count disagreements:", ""] + dis_lines
    notes = []
    for name, s in systems.items():
        for q, qr in s.get("queries", {}).items():
            if qr.get("note"):
                notes.append(f"- {name} {q}: {qr['note']} ({qr.get('done')} pairs answered)")
            if qr.get("warm"):
                w = qr["warm"]
                took = re.search(r"warmed [^\n]*", w.get("summary", ""))
                peers = [(n, o["queries"][q].get("p50_s")) for n, o in systems.items()
                         if n != name and q in o.get("queries", {})]
                vs = ", ".join(f"{n} ÷ warm p50 = {fmt_ratio(p, w['p50_s'])}" for n, p in peers if p)
                notes.append(f"- {name} {q} with `--warm` ({took.group(0) if took else 'pages prefaulted'}): "
                             f"p50 / p90 / p99 {fmt_t(w['p50_s'])} / {fmt_t(w['p90_s'])} / "
                             f"{fmt_t(w['p99_s'])}" + (f"; {vs}" if vs else ""))
            if qr.get("extra_passes"):
                p50s = ", ".join(fmt_t(x["p50_s"]) for x in qr["extra_passes"])
                notes.append(f"- {name} {q}: p50 of {len(qr['extra_passes'])} more cold passes, "
                             f"each a fresh process after the warm one: {p50s} (the table "
                             f"shows the first pass)")
            if qr.get("beyond_max_hops"):
                notes.append(f"- {name} {q}: {qr['beyond_max_hops']} paths longer than 10 hops counted as not found")
            if qr.get("rc") not in (0, None) and not qr.get("killed"):
                notes.append(f"- {name} {q}: phase exited with {qr['rc']}")
    if notes:
        lines += ["", "Notes:", ""] + notes
    return lines


def goals(result: dict) -> list[str]:
    out = []

    def p50(ds, sys_, q="all"):
        return qget(result["datasets"].get(ds, {}).get("systems", {}).get(sys_, {}), q, "p50_s")

    if "kron16" in result["datasets"]:
        h = p50("kron16", "hopgraph")
        for peer, target in (("kuzu", 10_000), ("networkx", 20)):
            p = p50("kron16", peer)
            if h and p:
                r = p / h
                out.append(f"- kron16 p50 (all types), hopgraph vs {peer}: {r:,.1f}× faster "
                           f"(goal ≥ {target:,}×): **{'met' if r >= target else 'not met'}**")
    k20 = result["datasets"].get("kron20", {}).get("systems", {})
    if k20.get("hopgraph", {}).get("load") and k20.get("kuzu", {}).get("load"):
        hl, kl = k20["hopgraph"]["load"], k20["kuzu"]["load"]
        if hl.get("load_s") and kl.get("load_s"):
            r = kl["load_s"] / hl["load_s"]
            out.append(f"- kron20 bulk import vs Kuzu COPY FROM: {r:.2f}× faster (goal ≥ 3×): "
                       f"**{'met' if r >= 3 else 'not met'}**")
        if hl.get("disk_bytes") and kl.get("disk_bytes"):
            ok = hl["disk_bytes"] <= kl["disk_bytes"]
            out.append(f"- kron20 database size: hopgraph {fmt_mib(hl['disk_bytes'])} MiB, Kuzu "
                       f"{fmt_mib(kl['disk_bytes'])} MiB (goal: no larger): **{'met' if ok else 'not met'}**")
    else:
        out.append("- kron20 import goal: not measured in this run")
    return out


def chart(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dss = list(result["datasets"])
    fig, axes = plt.subplots(1, len(dss), figsize=(6.5 * len(dss), 4.2), squeeze=False)
    series = [("all", "p50_s", "all types p50", "#1f77b4", None), ("all", "p99_s", "all types p99", "#aec7e8", None),
              ("caused_by", "p50_s", "caused_by p50", "#d62728", None),
              ("caused_by", "p99_s", "caused_by p99", "#ff9896", None)]
    for ax, ds in zip(axes[0], dss):
        systems = result["datasets"][ds]["systems"]
        names = list(systems)
        w = 0.2
        for k, (q, key, label, color, _) in enumerate(series):
            xs, ys = [], []
            for j, n in enumerate(names):
                v = qget(systems[n], q, key)
                if v:
                    xs.append(j + (k - 1.5) * w)
                    ys.append(v * 1e3)
            ax.bar(xs, ys, w, label=label, color=color)
        for j, n in enumerate(names):
            qa = systems[n].get("queries", {}).get("all", {})
            if qa.get("total") and qa.get("done", 0) < qa["total"]:
                ax.annotate(f"{qa['done']}/{qa['total']}\nanswered", (j, 0), xycoords=("data", "axes fraction"),
                            xytext=(0, 3), textcoords="offset points", ha="center", fontsize=7)
        ax.set_yscale("log")
        ax.set_xticks(range(len(names)), names)
        ax.set_ylabel("shortest-path latency, ms (log)")
        ax.set_title(f"{ds}: undirected, max 10 hops")
        ax.grid(axis="y", which="major", alpha=0.3)
        ax.legend(fontsize=7)
    m = result["machine"]
    fig.suptitle(f"{m['cpu_model']}, {m['cores']} cores, {m['ram_bytes'] / 2**30:.0f} GiB — {result['date']}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(result: dict, out_dir: str, name: str) -> str:
    png = os.path.join(out_dir, f"{name}.png")
    try:
        chart(result, png)
    except Exception as e:  # a chart is not worth losing the tables for
        print(f"chart failed: {e}", file=sys.stderr)
    m, v, st = result["machine"], result["versions"], result["settings"]
    lines = [
        f"## Comparison: {', '.join(result['datasets'])} ({result['date']})",
        "",
        "Command: " + "; ".join(result.get("commands", [f"`{result['command']}`"])),
        "",
        f"Machine: {m['cpu_model']}, {m['cores']} cores, {m['ram_bytes'] / 2**30:.1f} GiB RAM, "
        f"Linux {m['kernel']}, load average at start {m['loadavg_at_start'][0]:.1f} (shared machine)",
        "",
        "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        "",
        f"Settings: undirected shortest path, max {st['max_hops']} hops, {st['pairs']} pairs per set; "
        f"`all` = uniform random pairs over all edge types; `caused_by` = the generator's "
        f"pairs-walk-caused_by pairs over caused_by edges only. Query phase budget {st['budget_s']:.0f} s "
        f"(+{st['grace_s']:.0f} s grace).",
        "",
        f"![latency]({name}.png)",
        "",
    ]
    for ds, entry in result["datasets"].items():
        lines += dataset_tables(ds, entry) + [""]
    lines += ["### Goals", ""] + goals(result) + [""]
    path = os.path.join(out_dir, f"{name}.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def merge(results: list[dict]) -> dict:
    """Several runs in one result. A later run's systems replace an earlier run's in the same
    dataset (e.g. hopgraph re-measured after an engine change); a replaced hopgraph must give
    the same hop count for every pair, so that the peers' agreement counts still hold."""
    import copy

    out = copy.deepcopy(results[0])
    out["datasets"] = {}
    out["commands"] = []
    for r in results:
        for ds, entry in r["datasets"].items():
            have = out["datasets"].setdefault(ds, {"meta": entry["meta"], "systems": {}})
            for name, sres in entry["systems"].items():
                old = have["systems"].get(name)
                if name == "hopgraph" and old is not None:
                    for q, qr in sres.get("queries", {}).items():
                        if qr.get("hops") != old.get("queries", {}).get(q, {}).get("hops"):
                            raise SystemExit(f"{ds} {q}: the hopgraph runs disagree on hop counts")
                have["systems"][name] = sres
        out["commands"].append(f"`{r['command']}` ({r['date']}, hopgraph "
                               f"{r['versions'].get('hopgraph_commit', '?')}: "
                               + "; ".join(f"{ds}: {', '.join(e['systems'])}" for ds, e in r["datasets"].items())
                               + ")")
    out["date"] = " / ".join(dict.fromkeys(r["date"] for r in results))
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("--name", help="output name (default: the JSON file's)")
    a = ap.parse_args()
    res = merge([json.load(open(p)) for p in a.json])
    d = os.path.dirname(os.path.abspath(a.json[0]))
    name = a.name or os.path.splitext(os.path.basename(a.json[0]))[0]
    print(write(res, d, name))
