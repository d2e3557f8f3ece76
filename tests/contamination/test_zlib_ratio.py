"""The zlib detector (contamination.zlib_ratio): the compressed size as zlib gives it, and the score by hand."""
import zlib

import pandas as pd
import pytest

from mcqa_toolkit.contamination.zlib_ratio import zlib_bytes, zlib_score

FAM = pd.DataFrame({"model": "m", "language": "pt", "item_id": ["a", "b"], "parallel_id": ["a", "b"],
                    "n_tokens": [10, 20], "n_bytes": [40, 100], "zlib_bytes": [30, 50], "loglik_sum": [-20.0, -10.0],
                    "min_k_prob": [5.0, 3.0], "min_k_pp": [-1.0, 0.5]})


def test_zlib_score_by_hand():
    assert list(zlib_score(FAM)) == pytest.approx([-2.0 / 30, -0.5 / 50])   # (loglik_sum / n_tokens) / zlib_bytes


def test_zlib_bytes_is_the_size_of_the_utf8_compression():
    text = "Questão 12 — a água ferve a 100 °C " * 3
    assert zlib_bytes(text) == len(zlib.compress(text.encode("utf-8")))
    assert zlib_bytes(text) < len(text.encode("utf-8"))    # a repeated text compresses
