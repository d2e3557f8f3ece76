"""Synthetic INEP-format ENEM microdata, to check `score_microdata` and `mcqa validate-enem` at scale without
INEP's multi-GB files. SYNTHETIC: simulated candidates on real item parameters, not INEP's data.

Candidates (theta ~ N(0, 1)) answer real booklets' ITENS_PROVA items by the 3PL, with a few blanks ('.'),
double marks ('*') and fully blank sheets; LC candidates pick English or Spanish (45-character strings, the
50-character key of 2020+). NU_NOTA is INEP's EAP computed here independently of `enem.official` (the posterior
written out on the 40-point grid), then a known share is perturbed by OFFSETS and a known share of rows is
made unusable (booklet absent from the item file, a key of no item set, a 'Z' mark), so a validation report
has known answers: `truth` says, per candidate and area, the booklet, item set, offset and problem.
`publish_zip`, `publish_key` and `publish_unpublished` plant INEP's known errors in item rows (the candidates are
simulated on the true rows, the file is published with the error), for `enem.errata.discover` to find.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS, ENEM_GRID, booklet_sets, layout

OFFSETS = np.array([0.1, -0.1, 0.4, -0.7, 1.0, -1.5, 2.0, -3.2, 6.0])   # NU_NOTA perturbations, in points
ABSENT_BOOKLET = 99999
_ROTATE2, _SHIFT1 = str.maketrans("ABCDE", "CDEAB"), str.maketrans("ABCDE", "BCDEA")
_LETTERS = np.frombuffer(b"ABCDE", dtype=np.uint8)
FILLER = [f"Q{i:03d}" for i in range(1, 26)]    # questionnaire-like columns, so rows are as wide as INEP's


def two_set_booklet(rows: pd.DataFrame, co_prova: int) -> pd.DataFrame:
    """ITENS_PROVA rows for a code with two item sets built from one booklet's rows, set after set: set 1 =
    those items, set 2 = keys rotated (A -> C, ...), a x 0.9, b + 0.4, new CO_ITEM."""
    s1 = rows.assign(CO_PROVA=co_prova)
    key = s1["TX_GABARITO"].where(s1["IN_ITEM_ABAN"] == 1, s1["TX_GABARITO"].str.translate(_ROTATE2))
    s2 = s1.assign(CO_ITEM=s1["CO_ITEM"] + 900_000, TX_GABARITO=key, NU_PARAM_A=s1["NU_PARAM_A"] * 0.9,
                   NU_PARAM_B=s1["NU_PARAM_B"] + 0.4)
    return pd.concat([s1, s2], ignore_index=True)


def itens_prova_layout(items: pd.DataFrame) -> pd.DataFrame:
    """Validated ITENS_PROVA rows (read_itens_prova) back in the file's layout: INEP's columns as text,
    empty where a value is missing; write with `.to_csv(path, sep=";", index=False, encoding="latin-1")`."""
    cols = ["CO_POSICAO", "SG_AREA", "CO_ITEM", "TX_GABARITO", "IN_ITEM_ABAN", "NU_PARAM_A", "NU_PARAM_B",
            "NU_PARAM_C", "CO_PROVA", "TP_LINGUA"]
    out = items[cols].astype(object).where(items[cols].notna(), "")
    out["TP_LINGUA"] = [x if x == "" else int(x) for x in out["TP_LINGUA"]]
    return out


def simulate_microdata(items: pd.DataFrame, booklets: Mapping[str, Sequence[int]], n: int,
                       rng: np.random.Generator, first_row: int = 0, perturb: float = 0.02,
                       unusable: float = 0.001, absent: float = 0.1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(microdata, truth) for n candidates; booklets: area -> the CO_PROVA codes candidates are spread over.

    microdata: INEP's column layout (a subset, plus filler columns). truth: one row per present candidate and
    area: row, area, CO_PROVA, item_set, offset (added to NU_NOTA), problem ("" or an iter_microdata kind).
    `unusable` is the share of present rows for each of the three problems.
    """
    rows = np.arange(first_row, first_row + n)
    out = {"NU_INSCRICAO": 230_000_000_000 + rows, "NU_ANO": 2023, "NO_MUNICIPIO_PROVA": "São João d'Aliança",
           "TP_LINGUA": rng.integers(0, 2, n)}
    out.update({c: rng.choice(list("ABCDEFGH"), n) for c in FILLER})
    truth = []
    for area, codes in booklets.items():
        present = rng.random(n) >= absent
        co = np.asarray(codes)[rng.integers(0, len(codes), n)]
        answers, key = np.full(n, "", dtype=object), np.full(n, "", dtype=object)
        nota, item_set = np.full(n, np.nan), np.zeros(n, dtype=int)
        for code in codes:
            sets = booklet_sets(items[(items["CO_PROVA"] == code) & (items["SG_AREA"] == area)], area)
            pick = rng.integers(1, len(sets) + 1, n)
            for bk in sets:
                for lang in ((0, 1) if area == "LC" else (None,)):
                    m = present & (co == code) & (pick == bk.item_set)
                    if lang is not None:
                        m &= out["TP_LINGUA"] == lang
                    idx = np.flatnonzero(m)
                    answers[idx], nota[idx] = _candidates(bk, lang, area, idx.size, rng)
                    key[idx], item_set[idx] = bk.key.tobytes().decode(), bk.item_set
        offset = np.where(rng.random(n) < perturb, rng.choice(OFFSETS, n), 0.0)
        nota = np.round(nota + offset, 1)
        problem = np.full(n, "", dtype=object)
        for kind, share in (("absent from item file", unusable), ("key mismatch", unusable),
                            ("invalid answer characters", unusable)):
            problem[present & (problem == "") & (rng.random(n) < share)] = kind
        co = np.where(problem == "absent from item file", ABSENT_BOOKLET, co)
        mismatch = problem == "key mismatch"
        key[mismatch] = [k.translate(_SHIFT1) for k in key[mismatch]]
        invalid = problem == "invalid answer characters"
        answers[invalid] = ["Z" + s[1:] for s in answers[invalid]]
        out.update({f"TP_PRESENCA_{area}": present.astype(int), f"CO_PROVA_{area}": co,
                    f"NU_NOTA_{area}": np.where(present, nota, np.nan), f"TX_RESPOSTAS_{area}": answers,
                    f"TX_GABARITO_{area}": np.where(present, key, "")})
        truth.append(pd.DataFrame({"row": rows, "area": area, "CO_PROVA": co, "item_set": item_set,
                                   "offset": offset, "problem": problem})[present])
    return pd.DataFrame(out), pd.concat(truth, ignore_index=True)


def _candidates(bk, lang: int | None, area: str, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """m simulated answer strings (45 characters) for one item set and language, and their official scores."""
    src = layout(bk, bk.key.size - 5 if lang is not None else bk.key.size, lang)
    order = np.flatnonzero(src >= 0)[np.argsort(src[src >= 0])]      # administered items, in string order
    key, scored = bk.key[order], bk.scored[order]
    a, b, c = (np.where(scored, x[order], (1.0, 0.0, 0.2)[i]) for i, x in enumerate((bk.a, bk.b, bk.c)))
    theta = rng.standard_normal(m)
    p = c + (1 - c) / (1 + np.exp(-a * (theta[:, None] - b)))
    right = (rng.random(p.shape) < p) & np.isin(key, _LETTERS)
    wrong = _LETTERS[(np.searchsorted(_LETTERS, key).clip(0, 4) + rng.integers(1, 5, p.shape)) % 5]
    chars = np.where(right, key, wrong).astype(np.uint8)
    noise = rng.random(p.shape)
    chars[noise < 0.02] = ord(".")
    chars[(noise >= 0.02) & (noise < 0.023)] = ord("*")
    chars[rng.random(m) < 0.01] = ord(".")                          # a few fully blank sheets
    u = (chars[:, scored] == key[scored]).astype(float)
    points, weights = ENEM_GRID
    pg = c[scored] + (1 - c[scored]) / (1 + np.exp(-a[scored] * (points[:, None] - b[scored])))   # (G, J)
    loglik = u @ np.log(pg).T + (1 - u) @ np.log1p(-pg).T
    post = np.exp(loglik - loglik.max(axis=1, keepdims=True)) * weights
    theta_hat = post @ points / post.sum(axis=1)
    k, d = ENEM_CONSTANTS[area]
    score = np.where((chars == ord(".")).all(axis=1), 0.0, np.round(k * theta_hat + d, 1))
    strings = chars.view(f"S{chars.shape[1]}").ravel().astype(str) if m else np.array([], dtype=str)
    return strings.astype(object), score


# ---- INEP's errors, planted: true rows (what INEP scored with) -> rows as INEP would publish them ------------------

def publish_zip(rows: pd.DataFrame, co_prova: int, area: str, not_scored: Sequence[int]) -> pd.DataFrame:
    """The "zip" error (`enem.errata`): in booklet `co_prova`, the items `not_scored` (flagged IN_ITEM_ABAN = 1
    in `rows`, the truth) are published unflagged, and the scored items' (a, b, c), in position order, are laid
    onto the booklet's unflagged rows: from each such item on, every row carries the next item's parameters and
    the last rows a copy of the last one's. Per CO_ITEM, so every booklet listing those items shows it."""
    ref = rows[(rows["CO_PROVA"] == co_prova) & (rows["SG_AREA"] == area)].sort_values("CO_POSICAO", kind="stable")
    params = ["NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]
    laid = ref[ref["IN_ITEM_ABAN"] == 0][params].to_numpy()
    laid = np.vstack([laid] + [laid[-1:]] * len(not_scored))
    shown = ref[(ref["IN_ITEM_ABAN"] == 0) | ref["CO_ITEM"].isin(not_scored)]["CO_ITEM"].to_numpy()
    table = pd.DataFrame(laid, index=shown, columns=params)
    out = rows.copy()
    hit = (out["SG_AREA"] == area) & out["CO_ITEM"].isin(shown)
    out.loc[hit, params] = table.loc[out.loc[hit, "CO_ITEM"]].to_numpy()
    out.loc[hit, "IN_ITEM_ABAN"] = 0
    return out


def publish_key(rows: pd.DataFrame, co_item: int, key: str) -> pd.DataFrame:
    """A wrong key: item `co_item` published with TX_GABARITO `key` (INEP scored the key in `rows`)."""
    return rows.assign(TX_GABARITO=rows["TX_GABARITO"].where(rows["CO_ITEM"] != co_item, key))


def publish_unpublished(rows: pd.DataFrame, co_item: int) -> pd.DataFrame:
    """An item INEP scored (with the parameters in `rows`) but published flagged abandoned, without parameters."""
    out = rows.copy()
    hit = out["CO_ITEM"] == co_item
    out.loc[hit, "IN_ITEM_ABAN"] = 1
    out.loc[hit, ["NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]] = np.nan
    return out
