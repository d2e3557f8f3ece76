"""The ENEM+IRT paper's released response patterns (BU-UFMG-Research/irt-llms) -> per-item records for DIF and IRT.

The release is one CSV row per model x exam x language x seed: MODEL_NAME, MODEL_SIZE (empty for API models),
SYSTEM_PROMPT_TYPE (the prompt, e.g. few-shot), ENEM_EXAM, CO_PROVA (booklet), EXAM_YEAR, EXAM_SUBJECT (area),
LANGUAGE (pt-br | en), SEED, TX_RESPOSTAS (the model's letters, X = no answer read), TX_GABARITO (the key; a
letter outside A-E marks an annulled item, V in the 2021 file), RESPONSE_PATTERN (0/1 per item in booklet order,
a string: it starts with zeros), CTT_SCORE, IRT_SCORE (theta), IRT_SCORE_SE, LZ_SCORE, ENEM_IRT_SCORE. Every
field is read as text, so patterns keep their leading zeros.

`read_response_patterns` checks every row (errors name the file, the 1-based line and the field) and returns
`ResponsePatterns`: `patterns`, one row per file row, and `records`, one row per row x item in the record
columns that measure/ reads (model, strategy, language, shuffle, item_id, parallel_id, answer, choice, correct,
status, ...). The model is MODEL_NAME-MODEL_SIZE; `shuffle` numbers a model's seeds per exam and language in
file order (the release's replicates: temperature sampling, questions and options in their original order).
Ids follow our ENEM loader (parallel_id ENEM_<year>_<area>_<booklet>_q<number>, item_id <parallel_id>-<language>,
a foreign-language question keeping its own language), so the records line up with our runs of the booklet.

The pattern is the paper's scoring and must agree with the letters: 1 exactly where the answer equals the key.
At an annulled item the bit is not checked, and the record gets answer -1 and correct False, so analyses leave
the item out: the 2021 release gives MT question 178 (key V, answer V in every row) a 1 in 80 of its 300 MT rows
and a 0 in the others. `patterns` keeps the strings and CTT_SCORE as released.

Languages items (LC): positions 1-5 are the foreign-language questions; the 2021 release answers the Spanish
ones (its keys at those positions are INEP's Spanish keys of booklet 896, not the English ones), hence
`foreign_language="es"`, which puts the `_es` suffix of our loader's parallel ids on them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.datasets.enem.formats import AREA_NAMES, LANGUAGES, area_of, is_foreign_position, language_of
from mcqa_toolkit.items import LETTERS, DatasetError

__all__ = ["REQUIRED", "ResponsePatterns", "read_response_patterns"]

REQUIRED = ("MODEL_NAME", "MODEL_SIZE", "SYSTEM_PROMPT_TYPE", "EXAM_YEAR", "EXAM_SUBJECT", "CO_PROVA", "LANGUAGE",
            "SEED", "TX_RESPOSTAS", "TX_GABARITO", "RESPONSE_PATTERN")
NUMBERS = {"CTT_SCORE": "ctt_score", "IRT_SCORE": "theta", "IRT_SCORE_SE": "theta_se", "LZ_SCORE": "lz",
           "ENEM_IRT_SCORE": "enem_score"}
KEYS = LETTERS[:5]


@dataclass(frozen=True)
class ResponsePatterns:
    """patterns: one row per file row (line, model, strategy, language, year, area, co_prova, seed, shuffle, the
    three strings, and the paper's scores); records: one row per file row x item. to_frame() gives records."""

    patterns: pd.DataFrame
    records: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        return self.records.copy()


def _fail(path: Path, df: pd.DataFrame, bad: np.ndarray, field: str, message: str) -> None:
    if bad.any():
        i = int(np.argmax(bad))
        raise DatasetError(path, int(df["line"].iloc[i]), field, message.format(value=df[field].iloc[i]))


def _integers(path: Path, df: pd.DataFrame, field: str) -> pd.Series:
    _fail(path, df, ~df[field].str.fullmatch(r"\d+").to_numpy(), field, "{value!r} is not a whole number")
    return df[field].astype(np.int64)


def _check(path: Path, df: pd.DataFrame) -> None:
    _fail(path, df, (df["MODEL_NAME"].str.strip() == "").to_numpy(), "MODEL_NAME", "empty")
    _fail(path, df, ~df["EXAM_SUBJECT"].isin(list(AREA_NAMES)).to_numpy(), "EXAM_SUBJECT",
          f"{{value!r}} is not an ENEM area {sorted(AREA_NAMES)}")
    _fail(path, df, df["LANGUAGE"].map(language_of).isna().to_numpy(), "LANGUAGE",
          f"{{value!r}} is not one of ENEM's languages {LANGUAGES} (by name or code)")
    _fail(path, df, ~df["RESPONSE_PATTERN"].str.fullmatch(r"[01]+").to_numpy(), "RESPONSE_PATTERN",
          "{value!r} is not a string of 0s and 1s (read it as text: it may start with zeros)")
    n = df["RESPONSE_PATTERN"].str.len()
    for field in ("TX_RESPOSTAS", "TX_GABARITO"):
        _fail(path, df, (df[field].str.len() != n).to_numpy(), field,
              "{value!r} does not have one letter per item of RESPONSE_PATTERN")
    layout = pd.DataFrame({"year": df["EXAM_YEAR"].astype(int), "area": df["EXAM_SUBJECT"], "n": n})
    for year, area, k in layout.drop_duplicates().itertuples(index=False):   # one check per exam layout
        if area_of(year, _first(year, area) + k - 1) != area:
            bad = ((layout["year"] == year) & (layout["area"] == area) & (layout["n"] == k)).to_numpy()
            _fail(path, df, bad, "RESPONSE_PATTERN", "{value!r} has more items than the area has questions")


def _numbering(year: int, area: str, n_items: int, foreign_language: str) -> tuple[np.ndarray, np.ndarray]:
    """(question numbers, parallel-id suffixes) of an area's n_items booklet positions."""
    numbers = _first(year, area) + np.arange(n_items)
    return numbers, np.array([f"_{foreign_language}" if is_foreign_position(year, area, int(q)) else ""
                              for q in numbers], dtype=object)


def _first(year: int, area: str) -> int:
    """The booklet number of the area's first question (LC, CH, CN, MT since 2017; CH, CN, LC, MT before)."""
    return next(q for q in range(1, 181, 45) if area_of(year, q) == area)


def read_response_patterns(path: str | Path, foreign_language: str = "es") -> ResponsePatterns:
    """Read and check the released CSV (see the module docstring). Raises DatasetError naming the file, line and
    field of the first bad value: a missing column, a non-numeric year/booklet/seed, an unknown area or language,
    a pattern that is not 0/1 or disagrees with the letters, letters of the wrong length."""
    path = Path(path)
    if foreign_language not in ("en", "es"):
        raise ValueError(f"foreign_language {foreign_language!r}: expected 'en' or 'es'")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise DatasetError(path, None, None, f"not a readable CSV ({e})") from None
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise DatasetError(path, 1, missing[0], f"missing column (the header has {list(df.columns)})")
    if df.empty:
        raise DatasetError(path, None, None, "no rows")
    df.insert(0, "line", np.arange(2, len(df) + 2))
    for field in ("EXAM_YEAR", "CO_PROVA", "SEED"):
        df[field] = _integers(path, df, field).astype(str)
    _check(path, df)
    n_items = df["RESPONSE_PATTERN"].str.len().to_numpy()
    # one (rows x items) block per pattern length, so a file mixing lengths is handled without a loop over rows
    rows = []
    for length in np.unique(n_items):
        part = df[n_items == length]
        chars = {f: np.frombuffer("".join(part[f]).encode("ascii", "replace"), np.uint8).reshape(len(part), length)
                 for f in ("TX_RESPOSTAS", "TX_GABARITO", "RESPONSE_PATTERN")}
        valid_key = np.isin(chars["TX_GABARITO"], np.frombuffer(KEYS.encode(), np.uint8))
        right = valid_key & (chars["TX_RESPOSTAS"] == chars["TX_GABARITO"])
        clash = valid_key & ((chars["RESPONSE_PATTERN"] == ord("1")) != right)   # annulled items: not checked
        _fail(path, part, clash.any(axis=1), "RESPONSE_PATTERN",
              "{value!r} disagrees with TX_RESPOSTAS and TX_GABARITO (1 must mean: the answer equals a valid key)")
        rows.append((part, chars, valid_key, right))
    patterns = _patterns(df)
    records = pd.concat([_records(patterns.loc[part.index], c, k, r, foreign_language) for part, c, k, r in rows],
                        ignore_index=True)
    return ResponsePatterns(patterns.reset_index(drop=True), records)


def _patterns(df: pd.DataFrame) -> pd.DataFrame:
    size = df["MODEL_SIZE"].str.strip()
    model = df["MODEL_NAME"].str.strip() + np.where(size != "", "-" + size, "")
    out = pd.DataFrame({"line": df["line"], "model": model,
                        "strategy": df["SYSTEM_PROMPT_TYPE"], "language": df["LANGUAGE"].map(language_of),
                        "year": df["EXAM_YEAR"].astype(int), "area": df["EXAM_SUBJECT"],
                        "co_prova": df["CO_PROVA"].astype(int), "seed": df["SEED"].astype(np.int64)})
    out["shuffle"] = out.groupby(["model", "year", "area", "co_prova", "language"]).cumcount()
    out["responses"], out["key"], out["pattern"] = df["TX_RESPOSTAS"], df["TX_GABARITO"], df["RESPONSE_PATTERN"]
    for src, name in NUMBERS.items():
        out[name] = pd.to_numeric(df[src], errors="coerce") if src in df.columns else np.nan
    return out


def _option_index(letters: np.ndarray) -> np.ndarray:
    """Letters (as bytes) -> option indices A=0 .. E=4, -1 for anything else; flattened."""
    valid = np.isin(letters, np.frombuffer(KEYS.encode(), np.uint8))
    return np.where(valid, letters.astype(np.int64) - ord("A"), -1).ravel()


def _records(p: pd.DataFrame, chars: dict[str, np.ndarray], valid_key: np.ndarray, right: np.ndarray,
             foreign_language: str) -> pd.DataFrame:
    n_rows, n_items = right.shape
    rep = np.repeat(np.arange(n_rows), n_items)
    position = np.tile(np.arange(n_items), n_rows)
    f = p.iloc[rep].reset_index(drop=True)
    codes, exams = pd.MultiIndex.from_arrays([p["year"], p["area"]]).factorize()   # one numbering per exam
    numbering = [_numbering(int(y), a, n_items, foreign_language) for y, a in exams]
    number = np.stack([q for q, _ in numbering])[codes].ravel()
    suffix = np.stack([x for _, x in numbering])[codes].ravel()
    exam = "ENEM_" + f["year"].astype(str) + "_" + f["area"] + "_" + f["co_prova"].astype(str)
    parallel = exam + "_q" + pd.Series(number).astype(str) + suffix
    choice = _option_index(chars["TX_RESPOSTAS"])
    correct = right.ravel()
    status = np.where(correct, "correct", np.where(choice < 0, "unanswered", "incorrect"))
    return pd.DataFrame({"model": f["model"], "strategy": f["strategy"], "dataset": "enem", "language": f["language"],
                         "shuffle": f["shuffle"], "seed": f["seed"], "exam": exam, "year": f["year"],
                         "subject": f["area"].map(AREA_NAMES),
                         "item_id": parallel + "-" + np.where(suffix != "", foreign_language, f["language"]),
                         "parallel_id": parallel, "position": position + 1, "answer_type": "single", "n_options": 5,
                         "answer": np.where(valid_key.ravel(), _option_index(chars["TX_GABARITO"]), -1),
                         "choice": choice,
                         "correct": correct, "status": status, "line": f["line"]})
