"""Column contract of per-record results: what `run.run` writes and what measure/ and report/ read.

One record per (run, item, shuffle). Option-indexed lists are in ORIGINAL option order (index into
`Item.options`), so records from different shuffles line up; positions are 0-based places in the
shown (shuffled) order. `run.store.load_results(dir)` returns a DataFrame with exactly these columns.
"""
from __future__ import annotations

# identity of the run ------------------------------------------------------------------------------
RUN_COLUMNS = (
    "run_id",          # str: "<model>__<dataset>__<language>__<strategy>" (folder name under outputs/)
    "model",           # str: model name as given to load_model (e.g. "gemma-3-270m")
    "dataset",         # str: dataset registry name (e.g. "demo", "enem")
    "strategy",        # str: strategy name (e.g. "S5", "enem_4shot")
    "strategy_hash",   # str: sha256[:12] of the strategy's fields
    "method",          # str: first_token | loglik | generate | cloze
    "normalization",   # str: sum | token | char | byte | pmi | "" (first_token/generate)
    "shots",           # int
    "seed",            # int
)
# the item ---------------------------------------------------------------------------------------
ITEM_COLUMNS = (
    "item_id", "parallel_id", "language", "subject", "exam", "year",
    "n_options",       # int: number of options of the item (kappa uses it per item)
    "answer",          # int: key as an original option index (-1 when annulled / not single-answer)
)
# the shuffle and the model's response -----------------------------------------------------------
RESPONSE_COLUMNS = (
    "shuffle",         # int: 0..N-1; shuffle 0 is the original order when Strategy.keep_original
    "permutation",     # list[int]: permutation[pos] = original option index shown at position pos
    "option_scores",   # list[float]: the method's score per ORIGINAL option (higher = preferred)
    "option_probs",    # list[float]: softmax of option_scores over the item's options (sums to 1)
    "choice",          # int: chosen ORIGINAL option index, -1 when unanswered/refused
    "choice_position", # int: shown position of the choice, -1 when unanswered/refused
    "correct_position",# int: shown position of the key, -1 when annulled
    "correct",         # bool: choice == answer (False when unanswered; see `status`)
    "status",          # str: answered | unanswered | refused
    "extraction_rule", # str: which extract.py rule fired ("" for scoring methods, "none" if unanswered)
    "generated_text",  # str: generation output ("" for scoring methods)
    "n_prompt_tokens", # int: tokens of the full prompt for this record (naive cost)
    "n_forwarded_tokens", # int: tokens this record actually forwarded (prefix sharing amortised)
    "seconds",         # float: wall time attributed to this record
)
COLUMNS = RUN_COLUMNS + ITEM_COLUMNS + RESPONSE_COLUMNS

STATUSES = ("answered", "unanswered", "refused")

METHODS = ("first_token", "loglik", "generate", "cloze")
NORMALIZATIONS = ("sum", "token", "char", "byte", "pmi")
