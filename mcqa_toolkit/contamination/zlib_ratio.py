"""The zlib detector (Carlini et al. 2021): the text's mean token log-prob divided by the size of its zlib
compression. Compressible text is predictable for any model; the ratio keeps what only this model finds easy."""
from __future__ import annotations

import zlib

import pandas as pd

__all__ = ["zlib_bytes", "zlib_score"]


def zlib_bytes(text: str) -> int:
    """Size in bytes of the text's UTF-8 zlib compression (default level), Carlini et al.'s zlib entropy."""
    return len(zlib.compress(text.encode("utf-8")))


def zlib_score(familiarity: pd.DataFrame) -> pd.Series:
    """-(log-perplexity / zlib bytes) = (loglik_sum / n_tokens) / zlib_bytes (higher = more familiar)."""
    return familiarity["loglik_sum"] / familiarity["n_tokens"] / familiarity["zlib_bytes"]
