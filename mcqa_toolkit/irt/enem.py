"""Official ENEM scoring, reproducing INEP's NU_NOTA to 0.1: `score_answers` and `score_microdata`.

INEP's method (reference/irt_reference.json -> enem.method): 3PL with D = 1 and the published
NU_PARAM_A/B/C; EAP over 40 equally spaced points on [-4, 4] with N(0, 1) weights normalised over the
grid; score = round(k * theta + d, 1) with per-area constants. Items are the booklet's ITENS_PROVA rows
sorted by CO_POSICAO (LC: by TP_LINGUA, then CO_POSICAO, common items last) and paired with the answer
string by position; annulled items (IN_ITEM_ABAN = 1) leave the likelihood; '.' (blank) and '*'
(double mark) are wrong. LC answer strings of 45 characters (2020+) start with the 5 answers of the
chosen foreign language (TP_LINGUA 0 = English, 1 = Spanish) and the other language's items are not
administered; 50-character strings (up to 2019) hold both blocks, '9' marking the language not taken.
A booklet with no answer at all scores 0 (theta and psd are still those of the all-wrong pattern).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.datasets.enem import read_itens_prova
from mcqa_toolkit.irt.ability import ability_eap, normal_grid

ENEM_CONSTANTS: dict[str, tuple[float, float]] = {
    "CH": (112.31, 501.489), "CN": (113.102, 501.144), "LC": (108.086, 499.978), "MT": (129.646, 500.02)}


def _readonly(x: np.ndarray) -> np.ndarray:
    x.flags.writeable = False                    # module constants, never state
    return x


ENEM_GRID = tuple(_readonly(v) for v in normal_grid(40, -4.0, 4.0))   # (points, weights): INEP's quadrature
_VALID = _readonly(np.isin(np.arange(256), np.frombuffer(b"ABCDE.*", dtype=np.uint8)))  # byte -> valid mark
_BLANK = ord(".")
_COLUMNS = ["CO_PROVA", "TP_LINGUA", "theta", "psd", "score", "NU_NOTA", "n_correct", "n_scored"]


@dataclass(frozen=True)
class EnemScore:
    """One candidate's result: EAP theta and psd, official-scale score, correct and scored item counts."""

    theta: float
    psd: float
    score: float
    n_correct: int
    n_scored: int

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(self)])


@dataclass(frozen=True)
class _Booklet:
    """A booklet's items in INEP order: key letters as bytes, language (-1 = common), annulled flag, a, b, c."""

    co_prova: int
    key: np.ndarray       # (n,) uint8
    lingua: np.ndarray    # (n,) int: 0 English, 1 Spanish, -1 common
    scored: np.ndarray    # (n,) bool: not annulled
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray


def _check_area(area: str) -> str:
    key = str(area).strip().upper()
    if key not in ENEM_CONSTANTS:
        raise ValueError(f"area = {area!r}: unknown ENEM area; expected one of {sorted(ENEM_CONSTANTS)}")
    return key


def _booklet(items: pd.DataFrame, area: str) -> _Booklet:
    need = ["CO_POSICAO", "TX_GABARITO", "IN_ITEM_ABAN", "NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]
    missing = [col for col in need if col not in items.columns]
    if missing:
        raise ValueError(f"booklet_items lacks column(s) {missing} (expected INEP ITENS_PROVA rows)")
    if "SG_AREA" in items.columns and (items["SG_AREA"] != area).any():
        raise ValueError(f"booklet_items has rows of area(s) {sorted(set(items['SG_AREA']) - {area})}, not {area}")
    booklets = items["CO_PROVA"].unique() if "CO_PROVA" in items.columns else [-1]
    if len(booklets) != 1:
        raise ValueError(f"booklet_items holds {len(booklets)} booklets (CO_PROVA {sorted(booklets)}): pass one")
    lingua = (items["TP_LINGUA"] if "TP_LINGUA" in items.columns else pd.Series(np.nan, items.index))
    df = items.assign(_L=lingua.fillna(-1).astype(int)).assign(_S=lambda d: d["_L"].where(d["_L"] >= 0, 9))
    df = df.sort_values(["_S", "CO_POSICAO"], kind="stable")
    dup = df.duplicated(["_L", "CO_POSICAO"])
    if dup.any():
        raise ValueError(f"booklet {booklets[0]}: position CO_POSICAO {df['CO_POSICAO'][dup].iloc[0]} appears "
                         "twice for the same language; the booklet is ambiguous")
    scored = df["IN_ITEM_ABAN"].to_numpy() != 1
    key = df["TX_GABARITO"].astype(str).str.strip().str.upper().str[:1].str.pad(1).to_numpy().astype("S1")
    return _Booklet(int(booklets[0]), key.view(np.uint8), df["_L"].to_numpy(), scored,
                    *(df[col].to_numpy(dtype=float) for col in ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C")))


def _layout(bk: _Booklet, length: int, lingua: int | None) -> np.ndarray:
    """For each booklet item (n,), the position of its answer in a string of `length`, -1 if not taken."""
    n, langs = bk.key.size, bk.lingua >= 0
    if not langs.any():
        if length != n:
            raise ValueError(f"answer string has {length} characters but booklet {bk.co_prova} has {n} items")
        return np.arange(n)
    if lingua not in (0, 1):
        raise ValueError(f"foreign_language = {lingua!r}: LC needs TP_LINGUA 0 (English) or 1 (Spanish)")
    other = bk.lingua == 1 - lingua
    if length == n:                              # both language blocks present (50 characters)
        return np.where(other, -1, np.arange(n))
    if length == n - other.sum():                # chosen language first, then the common items (45)
        return np.where(other, -1, np.cumsum(~other) - 1)
    raise ValueError(f"answer string has {length} characters but booklet {bk.co_prova} takes "
                     f"{n - other.sum()} or {n}")


def _score(chars: np.ndarray, bk: _Booklet, src: np.ndarray, area: str,
           rows: np.ndarray) -> dict[str, np.ndarray]:
    """Score answer strings of one layout: chars (m, length) uint8 -> per-row arrays (m,)."""
    taken = src >= 0
    sheet = chars[:, src[taken]]
    bad = ~_VALID[sheet]
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"answer string of row {rows[i]}: character {bytes([sheet[i, j]])!r} at position "
                         f"{src[taken][j]}; expected A-E, '.' or '*'")
    cols = taken & bk.scored
    u = (chars[:, src[cols]] == bk.key[cols]).astype(np.uint8)
    est = ability_eap(u, bk.a[cols], bk.b[cols], bk.c[cols], 1.0, *ENEM_GRID)
    k, d = ENEM_CONSTANTS[area]
    blank = (sheet == _BLANK).all(axis=1)
    score = np.where(blank, 0.0, np.round(k * est.theta + d, 1))
    return {"theta": est.theta, "psd": est.psd, "score": score,
            "n_correct": u.sum(axis=1, dtype=np.int64), "n_scored": np.full(u.shape[0], int(cols.sum()))}


def _infer_lingua(answers: str, bk: _Booklet) -> int | None:
    if not (bk.lingua >= 0).any() or len(answers) != bk.key.size:
        return None
    nines = [all(answers[i] == "9" for i in np.flatnonzero(bk.lingua == lang)) for lang in (0, 1)]
    if nines[0] != nines[1]:
        return 1 if nines[0] else 0
    raise ValueError("cannot tell the foreign language from the answer string ('9' must fill exactly one "
                     "language block); pass foreign_language=0 (English) or 1 (Spanish)")


def score_answers(answers: str, booklet_items: pd.DataFrame, area: str,
                  foreign_language: int | None = None) -> EnemScore:
    """Official ENEM score of one answer string (case-insensitive) for one booklet's ITENS_PROVA rows.

    foreign_language: TP_LINGUA, 0 English or 1 Spanish; needed for 45-character LC strings, inferred
    from the '9' block of 50-character ones.
    """
    area = _check_area(area)
    if not isinstance(answers, str):
        raise ValueError(f"answers must be a str, got {type(answers).__name__}")
    bk = _booklet(booklet_items, area)
    ans = answers.strip().upper()
    lingua = foreign_language if foreign_language is not None else _infer_lingua(ans, bk)
    src = _layout(bk, len(ans), lingua)
    try:
        chars = np.frombuffer(ans.encode("ascii"), dtype=np.uint8)[None, :]
    except UnicodeEncodeError:
        raise ValueError(f"answers {answers!r}: contains a non-ASCII character") from None
    r = _score(chars, bk, src, area, np.array([0]))
    return EnemScore(float(r["theta"][0]), float(r["psd"][0]), float(r["score"][0]),
                     int(r["n_correct"][0]), int(r["n_scored"][0]))


def score_microdata(microdata_csv: str | Path, item_params_csv: str | Path, area: str,
                    chunksize: int = 200_000) -> pd.DataFrame:
    """Score every present candidate of INEP's MICRODADOS_ENEM_<year>.csv for one area, streaming.

    Reads only the area's columns (';', latin-1) in chunks; skips candidates with TP_PRESENCA_<area>
    != 1. Returns one row per scored candidate, indexed by the 0-based data row of the file:
    CO_PROVA, TP_LINGUA, theta, psd, score (ours), NU_NOTA (official), n_correct, n_scored.
    Each chunk is scored per (booklet, string length, language) group, never per candidate. When the
    file's TX_GABARITO_<area> disagrees with item_params_csv on a scored item, raises ValueError.
    """
    area = _check_area(area)
    if int(chunksize) < 1:
        raise ValueError(f"chunksize = {chunksize}: must be >= 1")
    items = read_itens_prova(item_params_csv)
    items = items[items["SG_AREA"] == area]
    cols = {f"TX_RESPOSTAS_{area}": "answers", f"TX_GABARITO_{area}": "key", f"CO_PROVA_{area}": "booklet",
            f"NU_NOTA_{area}": "NU_NOTA", f"TP_PRESENCA_{area}": "present", "TP_LINGUA": "lingua"}
    header = pd.read_csv(microdata_csv, sep=";", encoding="latin-1", nrows=0).columns
    missing = [col for col in cols if col not in header and (col != "TP_LINGUA" or area == "LC")]
    if missing:
        raise ValueError(f"{microdata_csv}: missing column(s) {missing}")
    usecols = [col for col in cols if col in header]
    booklets: dict[int, _Booklet] = {}
    out = []
    # object (Python str) columns parse and join faster than Arrow strings; `with` closes on errors too
    with pd.read_csv(microdata_csv, sep=";", encoding="latin-1", usecols=usecols, dtype=object,
                     keep_default_na=False, chunksize=int(chunksize)) as reader:
        for chunk in reader:
            chunk = chunk.rename(columns=cols)
            chunk = chunk[chunk["present"].str.strip() == "1"]
            if chunk.empty:
                continue
            # the foreign language only changes the layout of LC strings
            lang_col = chunk["lingua"].str.strip() if area == "LC" else ""
            chunk = chunk.assign(lingua=lang_col, length=chunk["answers"].str.len())
            groups = chunk.groupby(["booklet", "lingua", "length"], sort=False).indices
            for (co, lang, length), idx in groups.items():
                group = chunk.iloc[idx]
                if co not in booklets:
                    booklets[co] = _microdata_booklet(items, co, area, group.index[0])
                out.append(_score_group(group, booklets[co], lang, int(length), area))
    if not out:
        return pd.DataFrame(columns=_COLUMNS)
    df = pd.concat(out).sort_index()[_COLUMNS]
    df.index.name = "row"
    return df


def _score_group(group: pd.DataFrame, bk: _Booklet, lang: str, length: int, area: str) -> pd.DataFrame:
    """Score the candidates of one (booklet, language, string length) group of a chunk at once."""
    if length == 0:
        raise ValueError(f"row {group.index[0]}: present candidate with an empty {area} answer string")
    lingua = int(lang) if lang in ("0", "1") else None
    try:
        src = _layout(bk, length, lingua)
    except ValueError as err:                    # name the first row of the group in the message
        raise ValueError(f"row {group.index[0]}: {err}") from None
    _check_key(group["key"].unique(), bk, lingua, bk.co_prova, area)
    chars = np.frombuffer("".join(group["answers"]).encode("latin-1"), dtype=np.uint8)
    res = _score(chars.reshape(len(group), length), bk, src, area, group.index.to_numpy())
    return pd.DataFrame({"CO_PROVA": bk.co_prova, "TP_LINGUA": pd.array([lingua] * len(group), "Int64"), **res,
                         "NU_NOTA": pd.to_numeric(group["NU_NOTA"], errors="coerce")}, index=group.index)


def _microdata_booklet(items: pd.DataFrame, co: str, area: str, row: int) -> _Booklet:
    try:
        code = int(co)
    except ValueError:
        raise ValueError(f"row {row}: CO_PROVA_{area} = {co!r} is not a booklet code") from None
    rows = items[items["CO_PROVA"] == code]
    if rows.empty:
        raise ValueError(f"row {row}: booklet CO_PROVA_{area} = {code} is not in item_params_csv for {area}")
    return _booklet(rows, area)


def _check_key(keys: np.ndarray, bk: _Booklet, lingua: int | None, co: int, area: str) -> None:
    """The microdata's own answer key must agree with ITENS_PROVA on every scored, administered item."""
    for key in keys:
        try:
            src = _layout(bk, len(key), lingua)
        except ValueError:
            continue                              # a key laid out differently from the answers: not comparable
        cols = (src >= 0) & bk.scored
        got = np.frombuffer(key.encode("latin-1"), dtype=np.uint8)[src[cols]]
        bad = got != bk.key[cols]
        if bad.any():
            j = int(np.flatnonzero(cols)[np.argmax(bad)])
            raise ValueError(f"booklet {co}: TX_GABARITO_{area} says {chr(got[np.argmax(bad)])!r} for item {j} "
                             f"but item_params_csv says {chr(bk.key[j])!r}; are both files from the same year?")
