"""Reading LoCoMo (snap-research/locomo) into conversations, turns and questions.

Accepts either layout the repository has shipped:

* ``data/locomo10.json``: a list of ``{"sample_id", "conversation": {...}, "qa": [...]}``;
* the directory ``data/multimodal_dialog/locomo10_v2/`` of ``NN.json`` files (what
  ``data/locomo10.zip`` unpacks to), each one conversation's dict with a ``qa`` list.

Conversations are ordered by their number (26, 30, 41, ... 50), which is the order of
``locomo10.json``; "conversation 0" is the first of that order.
"""

import glob
import json
import os
import re

SESSION = re.compile(r"^session_(\d+)$")
DIA = re.compile(r"^D(\d+):(\d+)$")


def load(path):
    """Returns a list of conversations: {name, turns: [{id, speaker, text, session, date}],
    questions: [{question, category, evidence: [ids]}], dropped: n}."""
    raw = []
    if os.path.isdir(path):
        files = glob.glob(os.path.join(path, "*.json"))
        files.sort(key=lambda f: int(re.sub(r"\D", "", os.path.basename(f)) or 0))
        for f in files:
            with open(f) as fh:
                d = json.load(fh)
            raw.append(("conv-" + os.path.splitext(os.path.basename(f))[0], d, d["qa"]))
    else:
        with open(path) as fh:
            for s in json.load(fh):
                raw.append((s["sample_id"], s["conversation"], s["qa"]))
    return [conversation(name, conv, qa) for name, conv, qa in raw]


def conversation(name, conv, qa):
    turns = []
    sessions = sorted(
        (int(m.group(1)), k) for k in conv if (m := SESSION.match(k)) and conv[k]
    )
    for n, key in sessions:
        date = conv.get(f"session_{n}_date_time", "")
        for t in conv[key]:
            turns.append({
                "id": t["dia_id"].strip(),
                "speaker": t["speaker"],
                "text": t["text"],
                "session": n,
                "date": date,
            })
    ids = {t["id"] for t in turns}
    questions, dropped = [], 0
    for q in qa:
        ev = []
        for e in q.get("evidence", []):
            # A few evidence entries hold several ids ("D8:6; D9:17") or stray spaces.
            for part in re.split(r"[;,\s]+", e):
                if part in ids and part not in ev:
                    ev.append(part)
        if not ev:
            dropped += 1
            continue
        questions.append({
            "question": q["question"],
            "category": int(q["category"]),
            "evidence": ev,
        })
    return {"name": name, "turns": turns, "questions": questions, "dropped": dropped}
