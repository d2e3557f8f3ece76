"""Record frames and published tables shared by the measure and report tests: `records` builds a results frame
with the package's record factory; `course_exam_items`, one item per question type; UNED-ACCESS 2024's tables 3
and 5."""
from __future__ import annotations

import pandas as pd

from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.records.columns import records_frame
from mcqa_toolkit.records.factory import make_record, run_fields

ITEM_KEYS = ("item_id", "parallel_id", "language", "subject", "n_options", "answer")
RUN_KEYS = ("model", "strategy", "dataset", "method", "run_id")


def records(rows, **defaults):
    """A results frame built by the package's record factory; `rows` give item_id, choice (+ answer,
    n_options, subject, language, model, strategy, shuffle). Any other key (status, correct, positions)
    overrides the derived value, for tests that need inconsistent or special records."""
    out = []
    for r in rows:
        r = {"model": "m", "strategy": "S1", "language": "en", "subject": "bio", "n_options": 4, "shuffle": 0,
             "answer": 0, **defaults, **r}
        answer = r.pop("answer")
        item = Item(item_id=r.pop("item_id"), source="t", exam="e", stem="q",
                    options=tuple("abcdefghij"[:r.pop("n_options")]),
                    answer=None if answer < 0 else answer, subject=r.pop("subject"), language=r.pop("language"),
                    parallel_id=r.pop("parallel_id", ""))
        run = run_fields(**{k: r.pop(k) for k in RUN_KEYS if k in r})
        rec = make_record(item, run, shuffle=r.pop("shuffle"), permutation=r.pop("permutation", None),
                          choice=r.pop("choice"), status=r.pop("status", None))
        out.append({**rec, **r})
    return records_frame(out)
# UNED-ACCESS 2024, Table 5 (per-subject kappa, 11 subjects) and Table 3 (averages), three models per language
UNED_T5 = {
    ("es", "Claude-3-Opus"): [0.86, 0.96, 1.00, 0.90, 0.98, 0.67, 0.84, 0.69, 0.63, 0.44, 0.89],
    ("es", "Llama-3-8B-Instruct"): [0.57, 0.71, 0.82, 0.56, 0.79, 0.26, 0.37, 0.22, 0.30, 0.25, 0.67],
    ("es", "Leniachat-Gemma-2B"): [0.19, 0.21, 0.03, 0.06, 0.15, 0.05, 0.22, -0.03, 0.20, -0.12, 0.24],
    ("en", "Claude-3-Opus"): [0.81, 0.95, 1.00, 0.90, 0.96, 0.67, 0.78, 0.63, 0.66, 0.44, 0.84],
    ("en", "Llama-3-8B-Instruct"): [0.52, 0.77, 0.90, 0.61, 0.79, 0.38, 0.43, 0.20, 0.28, 0.13, 0.67],
    ("en", "Leniachat-Gemma-2B"): [0.29, 0.32, 0.24, 0.03, 0.13, 0.05, 0.22, 0.08, 0.07, -0.06, 0.27],
}
# UNED-ACCESS 2024 Table 3: model, EN kappa, ES kappa, published gap %
UNED_T3 = [
    ("Claude-3-Opus", 0.79, 0.81, -2.51), ("GPT-4o", 0.78, 0.77, 0.83), ("GPT-4-Turbo", 0.76, 0.78, -1.72),
    ("Llama-3-70B-Instruct", 0.65, 0.67, -3.44), ("Gemma-2-27B-Instruct", 0.64, 0.66, -3.40),
    ("GPT-3.5-Turbo", 0.60, 0.55, 9.19), ("Mixtral-8x7B-Instruct", 0.56, 0.57, -2.32),
    ("Llama-3-8B-Instruct", 0.51, 0.50, 2.73), ("Mistral-7B-Instruct", 0.46, 0.43, 5.67),
    ("Gemma-7B-It", 0.41, 0.38, 8.93), ("Llama-2-7B-Chat", 0.32, 0.25, 26.04),
    ("Leniachat-Gemma-2B", 0.15, 0.11, 37.27),
]


def uned_scores():
    return pd.DataFrame([{"model": m, "language": lang, "kappa": v}
                         for m, en, es, _ in UNED_T3 for lang, v in (("en", en), ("es", es))])


def course_exam_items() -> ItemSet:
    """Four course-exam items, one per question type: s(ingle), m(ulti), t(rue/false), x (short answer)."""
    mk = dict(source="course_exam", exam="E1", stem="?")
    return ItemSet([
        Item(item_id="s", options=("a", "b", "c"), answer=2, points=5, **mk),
        Item(item_id="m", options=("a", "b", "c", "d"), answer=(0, 1, 2), answer_type="multi", points=6, **mk),
        Item(item_id="t", options=("True", "False"), answer=(True, True, False), answer_type="truefalse", points=8,
             **mk),
        Item(item_id="x", options=(), answer="Raft elects a leader", answer_type="short", points=4, **mk),
    ])
