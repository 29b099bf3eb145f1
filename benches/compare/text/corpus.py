#!/usr/bin/env python3
"""Builds the comparison corpus and its known-item queries.

Corpus: real text nobody in this project wrote, from this Debian machine: the English
manual pages (/usr/share/man/man[1-8]/*.gz, roff markup stripped crudely) and the package
changelogs and copyright files under /usr/share/doc. Each file is cut into documents of
30-120 words at paragraph breaks; a document's title is its source ("ls(1)",
"changelog of bash", ...). Output: docs.jsonl ({"key","title","content"} per line).

Queries (queries.jsonl): for a seeded sample of documents, the 3 rarest words of the
document (corpus document frequency, ties by word), in three families:
  lower     - as is, lower case:                   "foo bar baz"
  recased   - re-cased and punctuated:             "Foo, BAR baz?"
  inflected - each word inflected by a fixed rule (strip a trailing -s/-ed/-ing, else add
              -s), stemmer-independent; kept only when every word changed.
Usage: corpus.py OUT_DIR N_DOCS N_QUERIES
"""
import gzip, json, os, random, re, sys
from collections import Counter

WORD = re.compile(r"[a-z]+")


def read(path):
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rt", errors="replace") as f:
                return f.read()
        with open(path, errors="replace") as f:
            return f.read()
    except (OSError, EOFError, gzip.BadGzipFile):
        return ""


def strip_roff(text):
    out = []
    for line in text.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith("."):
            parts = line.split(None, 1)
            if parts[0] in (".PP", ".P", ".LP", ".SH", ".SS", ".TP", ".IP", ".sp", ".br"):
                out.append("")
            line = parts[1] if len(parts) > 1 else ""
        line = re.sub(r"\\f[A-Z1-9PR]|\\\(..|\\[-e&|^]|\\s[-+]?\d", " ", line)
        out.append(line.replace('"', " "))
    return "\n".join(out)


def sources():
    for sec in range(1, 9):
        d = f"/usr/share/man/man{sec}"
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                base = name[:-3] if name.endswith(".gz") else name
                yield f"{base.rsplit('.', 1)[0]}({sec})", strip_roff(read(os.path.join(d, name)))
    for pkg in sorted(os.listdir("/usr/share/doc")):
        d = os.path.join("/usr/share/doc", pkg)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.startswith(("changelog", "copyright", "NEWS", "README")):
                kind = name.split(".")[0]
                yield f"{kind} of {pkg}", read(os.path.join(d, name))


def docs(limit):
    n = 0
    while True:  # cycle the sources with a different cut if more documents are wanted
        for title, text in sources():
            cur = []
            for para in re.split(r"\n\s*\n", text):
                cur.extend(para.split())
                if len(cur) >= 30:
                    for i in range(0, len(cur), 120):
                        chunk = cur[i : i + 120]
                        if len(chunk) >= 10:
                            yield title, " ".join(chunk)
                            n += 1
                            if n >= limit:
                                return
                    cur = []
        if n == 0:
            return
        break


def inflect(w):
    for suf in ("ing", "ed", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w + "s"


def main():
    out, n_docs, n_queries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    rows = list(docs(n_docs))
    df = Counter()
    for _, text in rows:
        df.update(set(WORD.findall(text.lower())))
    with open(os.path.join(out, "docs.jsonl"), "w") as f:
        for i, (title, text) in enumerate(rows):
            f.write(json.dumps({"key": f"d{i}", "title": title, "content": text}) + "\n")
    rng = random.Random(7)
    queries = []
    for i in rng.sample(range(len(rows)), min(n_queries, len(rows))):
        words = sorted({w for w in WORD.findall(rows[i][1].lower()) if len(w) >= 3},
                       key=lambda w: (df[w], w))[:3]
        if len(words) < 3:
            continue
        key = f"d{i}"
        queries.append({"family": "lower", "target": key, "q": " ".join(words)})
        a, b, c = words
        queries.append({"family": "recased", "target": key,
                        "q": f"{a.capitalize()}, {b.upper()} {c}?"})
        inf = [inflect(w) for w in words]
        if all(x != w for x, w in zip(inf, words)):
            queries.append({"family": "inflected", "target": key, "q": " ".join(inf)})
    with open(os.path.join(out, "queries.jsonl"), "w") as f:
        for q in queries:
            f.write(json.dumps(q) + "\n")
    print(f"{len(rows)} docs, {len(queries)} queries -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
