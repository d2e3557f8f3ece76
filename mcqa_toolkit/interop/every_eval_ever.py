"""Run folder -> Every Eval Ever instance-level JSONL (schema 0.3.0: InstanceLevelEvaluationLog, one per line).

One line per record: `sample_id` is the item id (with `#<shuffle>` when the run has several shuffles, so each
administration is its own row), `input` the question with its shown choices and the key as reference,
`output.raw` what the model answered, `answer_attribution` how the answer was read (the record's extraction
rule, or its scoring method), `evaluation` the points share and correctness, token counts and latency, and
the record's status and permutation in `metadata` (strings, as the schema asks). The file is validated in
the tests with the `every-eval-ever` package's own validator.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mcqa_toolkit.items import LETTERS, Item

__all__ = ["SCHEMA_VERSION", "export_eee", "instance_row"]

SCHEMA_VERSION = "0.3.0"


def instance_row(rec: Mapping[str, Any], item: Item, several_shuffles: bool) -> dict[str, Any]:
    """The instance-level object of one record."""
    perm = [int(p) for p in rec["permutation"]]
    shown = [item.options[p] for p in perm]
    raw = item.stem + ("\n\n" + "\n".join(f"{LETTERS[i]}) {o}" for i, o in enumerate(shown)) if shown else "")
    if item.answer_type == "single" and isinstance(item.answer, int):
        reference = [item.options[item.answer]]
    else:
        reference = [json.dumps(item.answer if not isinstance(item.answer, tuple) else list(item.answer),
                                ensure_ascii=False)]
    letter = LETTERS[int(rec["choice_position"])] if int(rec["choice_position"]) >= 0 else ""
    extracted = letter or (rec["response"] if rec["response"] != "null" else "")
    output = str(rec["generated_text"]) or (f"ANSWER: {letter}" if letter else "")
    possible = float(rec["points_possible"])
    earned = float(rec["points_earned"])
    score = earned / possible if possible > 0 and earned == earned else 0.0
    status = str(rec["status"])
    sample_id = str(item.item_id) + (f"#{int(rec['shuffle'])}" if several_shuffles else "")
    return {
        "schema_version": SCHEMA_VERSION, "evaluation_id": str(rec["run_id"]), "model_id": str(rec["model"]),
        "evaluation_name": f"{rec['dataset']}/{rec['strategy']}", "sample_id": sample_id,
        "sample_hash": hashlib.sha256((raw + "".join(reference)).encode("utf-8")).hexdigest(),
        "interaction_type": "single_turn",
        "input": {"raw": raw, "formatted": None, "reference": reference, "choices": shown or None},
        "output": {"raw": [output]},
        "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": str(extracted),
                                "extraction_method": str(rec["extraction_rule"] or rec["method"] or "custom"),
                                "is_terminal": True}],
        "evaluation": {"score": score, "is_correct": bool(rec["correct"])},
        "token_usage": {"input_tokens": int(rec["n_prompt_tokens"]), "output_tokens": 0,
                        "total_tokens": int(rec["n_prompt_tokens"])},
        "performance": {"latency_ms": float(rec["seconds"]) * 1000.0},
        "error": status if status in ("error", "refused") else None,
        "metadata": {"status": status, "shuffle": str(int(rec["shuffle"])), "permutation": json.dumps(perm),
                     "exam": str(item.exam), "language": str(item.language), "strategy": str(rec["strategy"]),
                     "method": str(rec["method"])},
    }


def export_eee(records: pd.DataFrame, items: Mapping[str, Item], out_dir: str | Path, name: str) -> Path:
    """Write `<out_dir>/<name>.jsonl`, one instance-level object per record (sorted by item and shuffle)."""
    records = records.sort_values(["item_id", "shuffle"], kind="stable")
    several = bool(records["shuffle"].nunique() > 1)
    rows = [instance_row(rec, items[rec["item_id"]], several) for rec in records.to_dict("records")]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{name}.jsonl"
    target.write_text("".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows),
                      encoding="utf-8")
    return target
