"""Column contract of per-record results: what `run.run` writes and what measure/ and report/ read.

One record per (run, item, shuffle), for every question type (single, multi, truefalse, short). Option-indexed
lists are in ORIGINAL option order (index into `Item.options`), so records from different shuffles line up;
positions are 0-based places in the shown (shuffled) order. `records.results.load_results(dir)` returns a DataFrame
with exactly these columns (plus `extra`). Every record is built by `records.factory.make_record`.

Status vocabulary: correct | partial | incorrect (graded answers), unanswered (nothing could be
read from the output), refused (the model declined), error (the answer could not be graded, e.g. a judge output
that is not a number in range: its points are NaN, never 0). `correct` (bool) is status == "correct", kept
because the single-answer analyses (accuracy, kappa, position, IRT) are shares of correct records.
"""
from __future__ import annotations

import json
import logging
from typing import Any

import pandas as pd

# identity of the run ------------------------------------------------------------------------------
RUN_COLUMNS = (
    "run_id",          # str: "<model>__<dataset>__<language>__<strategy>" (folder name under outputs/)
    "model",           # str: model name as given to load_model (e.g. "gemma-3-270m")
    "dataset",         # str: dataset registry name (e.g. "demo", "enem")
    "strategy",        # str: strategy name (e.g. "S5", "enem_4shot")
    "strategy_hash",   # str: sha256[:12] of the strategy's fields
    "method",          # str: a method of scoring.methods.METHODS (first_token | loglik | cloze | generate)
    "normalization",   # str: scoring.methods.NORMALIZATIONS (sum | token | char | byte | pmi); "" without one
    "shots",           # int
    "seed",            # int
)
# the item ---------------------------------------------------------------------------------------
ITEM_COLUMNS = (
    "item_id", "parallel_id",
    "language",        # str: the exam version's language (Item.exam_language: the prompt's; ENEM's English and
                       #      Spanish questions of the Portuguese exam are "pt")
    "subject", "exam", "year",
    "answer_type",     # str: single | multi | truefalse | short (the item's)
    "n_options",       # int: number of options of the item (kappa uses it per item; 0 for short answers)
    "answer",          # int: single-answer key as an original option index (-1 when annulled / not single)
)
# the shuffle and the model's response -----------------------------------------------------------
RESPONSE_COLUMNS = (
    "shuffle",         # int: 0..N-1; shuffle 0 is the original order when Strategy.keep_original
    "permutation",     # list[int]: permutation[pos] = original option index shown at position pos
    "option_scores",   # list[float]: the method's score per ORIGINAL option (higher = preferred)
    "option_probs",    # list[float]: softmax of option_scores over the item's options (sums to 1)
    "choice",          # int: chosen ORIGINAL option index (single only), -1 otherwise / when not answered
    "choice_position", # int: shown position of the choice, -1 when there is no choice
    "correct_position",# int: shown position of the single-answer key, -1 when annulled / not single
    "response",        # str: JSON of the normalised answer: index (single), sorted list of original indices
                       #      (multi), list of bools (truefalse), text (short); "null" when none was read
    "points_earned",   # float: points under the exam rule (single/truefalse exact, multi partial credit, short
                       #        the judge); 0 when unanswered/refused; NaN when status is error
    "points_possible", # float: the item's points (0 for an annulled item)
    "correct",         # bool: status == "correct"
    "status",          # str: correct | partial | incorrect | unanswered | refused | error
    "extraction_rule", # str: which rule read the answer ("" for scoring methods, "none" if unanswered)
    "generated_text",  # str: generation output ("" for scoring methods)
    "judgements",      # str: JSON list of judge verdicts for short answers (judge, prompt_hash, raw_output,
                       #      score, status, justification); "" when not judged
    "n_prompt_tokens", # int: tokens of the full prompt for this record (naive cost)
    "n_forwarded_tokens", # int: tokens this record actually forwarded (prefix sharing amortised)
    "seconds",         # float: wall time attributed to this record
)
COLUMNS = RUN_COLUMNS + ITEM_COLUMNS + RESPONSE_COLUMNS

STATUSES = ("correct", "partial", "incorrect", "unanswered", "refused", "error")
ANSWERED = ("correct", "partial", "incorrect")   # a response was read and graded
LEGACY_STATUSES = ("answered", "unanswered", "refused")  # records written before the per-type schema
KEY = ["item_id", "shuffle"]   # one record per key in a run


def unique_records(df: pd.DataFrame, source: Any = "records") -> pd.DataFrame:
    """One record per (item_id, shuffle), the first written: a folder two processes wrote at once, without the
    one-writer lock (records.lock), holds some twice. Dropping them is logged, naming `source`."""
    dup = df.duplicated(KEY, keep="first") if len(df) else pd.Series(dtype=bool)
    if not dup.any():
        return df
    logging.getLogger("mcqa_toolkit.records").warning("%s: %d duplicate record(s) of an (item, shuffle) dropped, the "
                                                  "first written kept", source, int(dup.sum()))
    return df[~dup].reset_index(drop=True)


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Records -> DataFrame with the schema's columns first (plus `extra`, a JSON string of method details)."""
    df = pd.DataFrame.from_records(records)
    if df.empty:
        return pd.DataFrame(columns=list(COLUMNS) + ["extra"])
    return conform(df)


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """A records frame (legacy records upgraded) with the schema's columns first; missing columns raise."""
    df = upgrade_legacy(df)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"records lack column(s) {missing}")
    rest = [c for c in df.columns if c not in COLUMNS]
    return df[list(COLUMNS) + rest]


def upgrade_legacy(df: pd.DataFrame) -> pd.DataFrame:
    """Records written before the per-type schema (single-answer only; status answered | unanswered | refused,
    no points) in the current schema: answered becomes correct / incorrect from `correct`, the response is the
    choice, one point per keyed item (0 for an annulled one). Frames already in the schema pass unchanged."""
    if "points_earned" in df.columns or "status" not in df.columns or not set(df["status"]) <= set(LEGACY_STATUSES):
        return df
    answered = df["status"] == "answered"
    keyed = df["answer"] >= 0
    return df.assign(
        answer_type="single", response=[json.dumps(int(c)) if c >= 0 else "null" for c in df["choice"]],
        points_possible=keyed.astype(float), points_earned=(df["correct"].astype(bool) & keyed).astype(float),
        status=df["status"].where(~answered, df["correct"].map({True: "correct", False: "incorrect"})),
        judgements="")
