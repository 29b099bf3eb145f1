#!/usr/bin/env python3
"""Builds the comparison corpus and its known-item queries.

Corpus: real text nobody in this project wrote, from this Debian machine: the English
manual pages (/usr/share/man/man[1-8]/*.gz, roff markup stripped crudely) and the package
changelogs and copyright files under /usr/share/doc. Each file is cut into documents of
30-120 words at paragraph breaks; a document's title is its source ("ls(1)",
"changelog of bash", ...). Past about 705,000 documents these run out and the
Rust toolchain's HTML documentation (~/.rustup/toolchains/*/share/doc/rust/html, tags
stripped) follows, then the Markdown files of the crates in cargo's registry cache
and the docstrings of Python's standard library (/usr/lib/python3.11). Output: docs.jsonl ({"key","title","content"} per line).

Queries (queries.jsonl): for a seeded sample of documents, the 3 rarest words of the
document (corpus document frequency, ties by word), in three families:
  lower     - as is, lower case:                   "foo bar baz"
  recased   - re-cased and punctuated:             "Foo, BAR baz?"
  inflected - each word inflected by a fixed rule (strip a trailing -s/-ed/-ing, else add
              -s), stemmer-independent; kept only when every word changed.
and, for a second seeded sample of documents that hold an identifier (snake_case,
camelCase or kebab-case, two or more letter parts):
  identifier - the identifier written in another convention (snake_case and kebab-case
              become camelCase, camelCase becomes snake_case) plus the document's 2
              rarest words that are not its parts: "maxHops quux corge".
Usage: corpus.py OUT_DIR N_DOCS N_QUERIES
"""
import ast, glob, gzip, html, json, os, random, re, sys
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


BLOCK = re.compile(r"</?(p|div|li|h[1-6]|pre|tr|section|br|dt|dd|table)\b[^>]*>", re.I)


def strip_html(text):
    m = re.search(r"<main\b.*?</main>", text, re.S | re.I)
    text = m.group(0) if m else text
    text = re.sub(r"<(script|style|nav|head)\b.*?</\1>", " ", text, flags=re.S | re.I)
    text = BLOCK.sub("\n\n", text)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


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
    # Beyond about 705,000 documents the two sources above run out; the Rust toolchain's
    # HTML documentation (the books, the reference and the standard library's API pages,
    # written by the Rust project) supplies the rest.
    for root in sorted(glob.glob(os.path.expanduser("~/.rustup/toolchains/*/share/doc/rust/html")))[:1]:
        for d, dirs, files in os.walk(root):
            dirs.sort()
            if os.path.relpath(d, root).split(os.sep)[0] == "src":
                dirs.clear()  # source listings, not prose
                continue
            for name in sorted(files):
                if name.endswith(".html"):
                    path = os.path.join(d, name)
                    yield f"rust doc {os.path.relpath(path, root)}", strip_html(read(path))
    # Then the Markdown files (READMEs, changelogs) of the crates in cargo's registry
    # cache, and the docstrings of Python's standard library.
    reg = os.path.expanduser("~/.cargo/registry/src")
    for d, dirs, files in os.walk(reg):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".md"):
                path = os.path.join(d, name)
                yield f"{name} of crate {os.path.relpath(d, reg)}", read(path)
    for d, dirs, files in os.walk("/usr/lib/python3.11"):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(d, name)
                try:
                    tree = ast.parse(read(path))
                except (SyntaxError, ValueError):
                    continue
                docs = [ast.get_docstring(n) for n in ast.walk(tree) if isinstance(
                    n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
                yield f"python {os.path.relpath(path, '/usr/lib')}", "\n\n".join(
                    x for x in docs if x)


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


IDENT = re.compile(r"(?<![\w.\-/])([a-z]+(?:[_-][a-z]+)+|[a-z]+(?:[A-Z][a-z]+)+)(?![\w\-/])")


def parts(ident):
    return [p.lower() for p in re.findall(r"[A-Z]?[a-z]+", ident)]


def restyle(ident):
    """Another convention for an identifier: snake/kebab -> camel, camel -> snake."""
    ps = parts(ident)
    if "_" in ident or "-" in ident:
        return ps[0] + "".join(p.capitalize() for p in ps[1:])
    return "_".join(ps)


def identifier_queries(rows, df, n_queries):
    rng = random.Random(11)
    order = list(range(len(rows)))
    rng.shuffle(order)
    out = []
    for i in order:
        if len(out) >= n_queries:
            break
        idents = [m.group(1) for m in IDENT.finditer(rows[i][1])
                  if all(len(p) >= 2 for p in parts(m.group(1)))]
        if not idents:
            continue
        ident = rng.choice(idents)
        skip = set(parts(ident))
        words = sorted({w for w in WORD.findall(rows[i][1].lower())
                        if len(w) >= 3 and w not in skip}, key=lambda w: (df[w], w))[:2]
        if len(words) < 2:
            continue
        out.append({"family": "identifier", "target": f"d{i}",
                    "q": " ".join([restyle(ident)] + words)})
    return out


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
    queries += identifier_queries(rows, df, n_queries)
    with open(os.path.join(out, "queries.jsonl"), "w") as f:
        for q in queries:
            f.write(json.dumps(q) + "\n")
    print(f"{len(rows)} docs, {len(queries)} queries -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
