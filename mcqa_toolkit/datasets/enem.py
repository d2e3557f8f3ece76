"""ENEM: INEP item-parameter files (ITENS_PROVA_<year>.csv); exam CSV/JSON loaders are added below.

INEP files are ';'-separated and latin-1 (some re-exports are utf-8); the 2009 file has no TP_LINGUA
column; annulled items (IN_ITEM_ABAN = 1) have empty NU_PARAM_A/B/C.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.datasets._common import read_text
from mcqa_toolkit.items import DatasetError

ITENS_PROVA_REQUIRED = ("CO_POSICAO", "SG_AREA", "CO_ITEM", "TX_GABARITO", "IN_ITEM_ABAN",
                        "NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C", "CO_PROVA")
AREAS = ("CH", "CN", "LC", "MT")


def read_itens_prova(path: str | Path) -> pd.DataFrame:
    """Validated ITENS_PROVA rows: one row per (CO_PROVA, item), params as floats (NaN when annulled).

    Adds TP_LINGUA (NaN) when the file lacks it (2009). Raises DatasetError naming the data row
    (1-based, header excluded) and column of the first bad value.
    """
    text = read_text(path, encodings=("utf-8", "latin-1"))
    first = text.split("\n", 1)[0]
    if ";" not in first:
        raise DatasetError(path, "header", None, "expected a ';'-separated INEP ITENS_PROVA file")
    df = pd.read_csv(io.StringIO(text), sep=";", dtype=str, keep_default_na=False)
    missing = [c for c in ITENS_PROVA_REQUIRED if c not in df.columns]
    if missing:
        raise DatasetError(path, "header", missing[0], f"missing column(s) {missing}")
    if "TP_LINGUA" not in df.columns:
        df["TP_LINGUA"] = ""
    out = pd.DataFrame(index=df.index)
    for col in ("CO_POSICAO", "CO_ITEM", "CO_PROVA"):
        out[col] = _int_column(df[col], path, col)
    out["IN_ITEM_ABAN"] = _int_column(df["IN_ITEM_ABAN"].replace("", "0"), path, "IN_ITEM_ABAN")
    out["SG_AREA"] = df["SG_AREA"].str.strip()
    bad = ~out["SG_AREA"].isin(AREAS)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetError(path, i + 1, "SG_AREA", f"unknown area {df['SG_AREA'].iloc[i]!r}; expected {AREAS}")
    out["TX_GABARITO"] = df["TX_GABARITO"].str.strip().str.upper()
    for col in ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"):
        out[col] = _float_column(df[col], path, col)
    lingua = df["TP_LINGUA"].str.strip()
    out["TP_LINGUA"] = _float_column(lingua, path, "TP_LINGUA")
    for col in ("CO_HABILIDADE", "TX_MOTIVO_ABAN", "TX_COR", "IN_ITEM_ADAPTADO", "NU_ANO"):
        if col in df.columns:
            out[col] = df[col]
    kept = out["IN_ITEM_ABAN"] == 0
    for col in ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"):
        nan = kept & out[col].isna()
        if nan.any():
            i = int(np.flatnonzero(nan)[0])
            raise DatasetError(path, i + 1, col, "empty parameter for an item that is not annulled")
    a_bad = kept & (out["NU_PARAM_A"] <= 0)
    c_bad = kept & ((out["NU_PARAM_C"] < 0) | (out["NU_PARAM_C"] >= 1))
    for mask, col, msg in ((a_bad, "NU_PARAM_A", "a must be > 0"), (c_bad, "NU_PARAM_C", "c must be in [0, 1)")):
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            raise DatasetError(path, i + 1, col, f"{msg}, got {out[col].iloc[i]}")
    return out


def _int_column(s: pd.Series, path, col: str) -> pd.Series:
    num = pd.to_numeric(s.str.strip(), errors="coerce")
    bad = num.isna() | (num % 1 != 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetError(path, i + 1, col, f"not an integer: {s.iloc[i]!r}")
    return num.astype("int64")


def _float_column(s: pd.Series, path, col: str) -> pd.Series:
    stripped = s.str.strip().str.replace(",", ".", regex=False)
    num = pd.to_numeric(stripped, errors="coerce")
    bad = num.isna() & (stripped != "")
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetError(path, i + 1, col, f"not a number: {s.iloc[i]!r}")
    return num.astype("float64")
