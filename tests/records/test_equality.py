"""records.equality: when two record frames are the same run (timing aside, scores within 1e-6, NaN equal to NaN,
JSON columns compared decoded, duplicated keys reported), on the records of a real run."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from lookup_backend import demo_table, lookup_cache, lookup_job

from mcqa_toolkit.records.equality import assert_same_records, record_differences
from mcqa_toolkit.run.recipe import run_job


@pytest.fixture(scope="module")
def table():
    return demo_table()




def _records(tmp_path, table):
    return run_job(lookup_job(tmp_path, min_k=False), lookup_cache(table), progress=False).records


def test_equality_rule(tmp_path, table):
    a = _records(tmp_path, table)
    b = a.copy()
    b["seconds"] = b["seconds"] + 5  # timing never counts
    assert record_differences(a, b) == []
    b["option_scores"] = [list(np.asarray(s) + 5e-7) for s in a["option_scores"]]
    assert record_differences(a, b) == []  # within 1e-6
    b["option_scores"] = [list(np.asarray(s) + 5e-6) for s in a["option_scores"]]
    assert any("option_scores" in d for d in record_differences(a, b))
    c = a.copy()
    c.loc[0, "choice"] = (c.loc[0, "choice"] + 1) % c.loc[0, "n_options"]
    assert record_differences(a, c) and "choice" in record_differences(a, c)[0]
    d = a.copy()
    d.loc[0, "extra"] = json.dumps({**json.loads(d.loc[0, "extra"]), "letter_token_ids": [1]})
    assert any("extra" in x for x in record_differences(a, d))
    e = pd.concat([a, a.iloc[:1]], ignore_index=True)
    assert "duplicated keys: 0 vs 1" in record_differences(a, e)[0]
    nan = a.copy()
    nan.at[0, "option_scores"] = [float("nan")] * len(a.at[0, "option_scores"])
    assert record_differences(nan, nan.copy()) == [] and record_differences(a, nan)
    with pytest.raises(AssertionError, match="records differ"):
        assert_same_records(a, c)
