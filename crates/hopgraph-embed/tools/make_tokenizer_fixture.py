#!/usr/bin/env python3
"""Writes tests/fixtures/all-MiniLM-L6-v2-tokens.json: varied texts and the token ids that
Hugging Face's tokenizers library gives them with all-MiniLM-L6-v2's tokenizer.json,
truncated to the model's 256-token window as sentence-transformers does. The crate's own
WordPiece tokenizer must give the same ids (tests/it/tokenizer.rs).

    pip install tokenizers==0.23.*   # or any version; the fixture records the one used
    python3 tools/make_tokenizer_fixture.py MODEL_DIR > tests/fixtures/all-MiniLM-L6-v2-tokens.json

The texts: the sentences of the embedding fixture; lines of this machine's documentation
(/usr/share/doc, plain text files; seeded sample); hand-written cases for every rule of
BERT's tokenization (special tokens written in the text, controls and format characters,
whitespace kinds, accents and combining marks, CJK, Hangul, Greek sigma, Turkish dotted I,
long words, punctuation of every class, symbols, emoji of several Unicode versions,
unassigned and private-use code points); and seeded random strings drawn from a mix of
Unicode blocks.
"""
import gzip
import json
import os
import random
import sys

from tokenizers import Tokenizer, __version__ as tokenizers_version

WINDOW = 256


def doc_lines(rng, count):
    paths = []
    for root, _dirs, files in os.walk("/usr/share/doc"):
        for f in files:
            if f in ("copyright", "README", "NEWS", "changelog.Debian.gz", "changelog.gz"):
                paths.append(os.path.join(root, f))
    paths.sort()
    lines = []
    for p in rng.sample(paths, min(len(paths), 400)):
        try:
            raw = gzip.open(p).read() if p.endswith(".gz") else open(p, "rb").read()
            text = raw.decode("utf-8", errors="replace")
        except OSError:
            continue
        ls = [x.strip() for x in text.splitlines() if len(x.strip()) > 3]
        if ls:
            lines.append(rng.choice(ls))
    return lines[:count]


HAND = [
    "", " ", "\t\n\r", "hello", "Hello, World!", "unaffable", "don't stop-believing...",
    "[CLS]", "[SEP] [SEP]", "x[MASK]y", "[cls] [Mask]", "[UNK][PAD]", "a [CLS][SEP] b",
    "\x00a\x07b\ufffdc\x1bd", "zero\u200bwidth\ufeffbom\u00adsoft", "nbsp\u00a0here\u3000there",
    "line\u2028sep\u2029para\x85nel", "tab\there", "crlf\r\nlf\n",
    "café naïve Ångström ÉCOLE façade", "e\u0301 a\u0308 o\u0302\u0323", "Việt Nam tiếng Việt",
    "ΟΔΟΣ Σίσυφος", "İstanbul ISTANBUL ı", "Straße STRASSE ẞ", "Ǆemal ǅ ǆ",
    "中文分词测试", "日本語のテキスト、カタカナ", "한국어 텍스트", "𠀀𪜀𫝀𫠠𬺰 丽 ㄅ ㆠ",
    "Привет, мир", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "ﬁne ﬂow ² ① ½ Ⅷ ㎏", "$+<=>^`|~ © ™ € £ ¥ § ¶ °", "！，。？「」《》", "— – ‐ ‑ ‒ ― …",
    "“quoted” ‘single’ «guillemets» „low“", "∑∫√∞≠≤≥ ⊂⊃ →⇒", "١٢٣ ۴۵۶ ०१२",
    "😀 🥰 🫠 🧿 🩰 👍🏽 👨‍👩‍👧 🏳️‍🌈", "\u0378\u0379 \U000e0001 \ue000\uf8ff \U000f0000",
    "x" * 99, "x" * 100, "x" * 101, "é" * 100, "é" * 101, "ab" * 60 + " tail",
    "a" + "\u0301" * 50, " ".join(["word"] * 300), "The quick brown fox jumps over the lazy dog.",
    "HTTP/1.1 200 OK; Content-Type: text/html; charset=utf-8",
    "fn main() { println!(\"{}\", x?); } // ok", "user@example.com https://x.y/z?q=1&r=2#f",
    "3.14159 1,000,000 -42 +7e10 0x1F", "C++ C# F# .NET node.js", "snake_case camelCase kebab-case",
]

BLOCKS = [
    (0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
    (0x590, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F),
    (0x2070, 0x209F), (0x20A0, 0x20CF), (0x2100, 0x214F), (0x2190, 0x22FF), (0x3000, 0x30FF),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xE0FF), (0xF900, 0xFAFF),
    (0xFB00, 0xFB4F), (0xFE00, 0xFE6F), (0xFF00, 0xFFEF), (0x1F300, 0x1FAFF), (0x20000, 0x2FA1F),
    (0xE0000, 0xE007F), (0x0, 0x1F),
]


def random_text(rng):
    out = []
    for _ in range(rng.randint(1, 40)):
        if rng.random() < 0.5:
            lo, hi = BLOCKS[0]
        else:
            lo, hi = rng.choice(BLOCKS)
        cp = rng.randint(lo, hi)
        if 0xD800 <= cp <= 0xDFFF:
            continue
        out.append(chr(cp))
        if rng.random() < 0.2:
            out.append(" ")
    return "".join(out)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    model_dir = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    embed_fixture = os.path.join(here, "..", "tests", "fixtures", "all-MiniLM-L6-v2.json")
    rng = random.Random(20261129)
    texts = list(json.load(open(embed_fixture))["sentences"])
    texts += HAND
    texts += doc_lines(rng, 1200)
    texts += [random_text(rng) for _ in range(600)]
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=WINDOW)
    cases = [{"text": t, "ids": tok.encode(t).ids} for t in texts]
    json.dump(
        {
            "model": "sentence-transformers/all-MiniLM-L6-v2",
            "tokenizers": tokenizers_version,
            "window": WINDOW,
            "cases": cases,
        },
        sys.stdout,
        ensure_ascii=True,
        separators=(",", ":"),
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
