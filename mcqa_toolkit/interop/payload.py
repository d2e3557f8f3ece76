"""The `mcqa` payload: our full record inside another tool's file, so our -> tool -> our keeps every record.

Our exporters put, beside what the tool itself reads (lm-eval's `doc`/`resps`, inspect_ai's input/choices/
output/scores), the item (`Item.to_dict`) and the inputs of `records.factory.make_record` that made the record:
run columns, shuffle, permutation, choice or response, option scores, the statuses no rule can derive
(refused, error), judge points and verdicts, extraction rule, generated text, token counts, seconds, extra.
Importing calls make_record with them, so every derived column is derived again, and first checks that the
scores and the choice the tool shows agree with the payload (a file edited after export is refused).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from mcqa_toolkit.items import Item, item_from_dict
from mcqa_toolkit.records.factory import decode_response, make_record

__all__ = ["PAYLOAD_KEY", "payload_of", "record_from_payload", "shown_scores"]

PAYLOAD_KEY = "mcqa"


def _nan_safe(values: Any) -> list[float | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]


def payload_of(record: Mapping[str, Any], item: Item) -> dict[str, Any]:
    """The payload of one record (a row of a records frame) of `item`."""
    status = str(record["status"])
    extra = record.get("extra") or "{}"
    return {"version": 1, "item": item.to_dict(), "record": {
        "run": {k: (v.item() if hasattr(v, "item") else v) for k, v in record.items() if k in (
            "run_id", "model", "dataset", "strategy", "strategy_hash", "method", "normalization", "shots", "seed")},
        "shuffle": int(record["shuffle"]), "permutation": [int(p) for p in record["permutation"]],
        "choice": int(record["choice"]), "response": decode_response(record["response"]),
        "option_scores": _nan_safe(record["option_scores"]),
        "status": _given_status(record, item),
        "points_earned": float(record["points_earned"]) if item.answer_type == "short"
        and item.meta.get("options_parsed") is not False and status not in ("refused", "error")
        and record["response"] != "null" else None,
        "judgements": json.loads(record["judgements"]) if record.get("judgements") else [],
        "extraction_rule": record["extraction_rule"], "generated_text": record["generated_text"],
        "n_prompt_tokens": int(record["n_prompt_tokens"]), "n_forwarded_tokens": int(record["n_forwarded_tokens"]),
        "seconds": float(record["seconds"]), "extra": json.loads(extra) if isinstance(extra, str) else dict(extra)}}


def _given_status(record: Mapping[str, Any], item: Item) -> str | None:
    """The status make_record was given (refused, error, or an 'unanswered' that no rule derives: the runner
    passes it for every item, so only an annulled item's derived one, with 0 points possible, differs)."""
    status = str(record["status"])
    if status in ("refused", "error"):
        return status
    if status == "unanswered" and not (item.answer is None and float(record["points_possible"]) == 0.0):
        return status
    return None


def shown_scores(record: Mapping[str, Any]) -> list[float | None]:
    """A record's option scores in SHOWN order (what a tool's file lists per choice)."""
    scores = list(record["option_scores"])
    return _nan_safe([scores[p] for p in record["permutation"]])


def record_from_payload(payload: Mapping[str, Any], run: Mapping[str, Any], response: Any) -> tuple[Item, dict]:
    """(item, record) from a payload; `run` overrides the run columns that name the new folder (run_id);
    `response` (interop.runfolder.Response) is what the tool's file shows, checked against the payload."""
    if payload.get("version") != 1 or "item" not in payload or "record" not in payload:
        raise ValueError(f"{response.question.key}: not an mcqa payload of version 1")
    item = item_from_dict(payload["item"])
    r = dict(payload["record"])
    perm = r["permutation"]
    if response.scores is not None:
        mine = np.array([np.nan if s is None else s for s in r["option_scores"]], dtype=float)[perm]
        theirs = np.asarray(response.scores, dtype=float)
        if mine.shape != theirs.shape or not np.allclose(mine, theirs, rtol=0, atol=1e-9, equal_nan=True):
            raise ValueError(f"{response.question.key}: the file's scores {theirs.tolist()} disagree with its "
                             f"mcqa payload {mine.tolist()}; was it edited after export?")
    if response.choice >= 0 and item.answer_type == "single" and perm[response.choice] != r["choice"]:
        raise ValueError(f"{response.question.key}: the file's answer (shown position {response.choice}) "
                         f"disagrees with its mcqa payload (option {r['choice']})")
    run_cols = {**r.pop("run"), **{k: v for k, v in run.items() if k == "run_id"}}
    response_value = r.pop("response")
    scores = [np.nan if s is None else s for s in r.pop("option_scores")]
    rec = make_record(item, run_cols, option_scores=scores,
                      response=response_value if item.answer_type != "single" else
                      (response_value if response_value is not None else None), **r)
    return item, rec
