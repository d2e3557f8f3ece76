"""records.equality: when two record frames are the same run (timing aside, scores within 1e-6, NaN equal to NaN,
JSON columns compared decoded, duplicated keys reported), on the records of a real run."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from lookup_backend import LookupBackend

from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.equality import assert_same_records, record_differences
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import BackendCache, run_job


@pytest.fixture(scope="module")
def table():
    items = load("demo", language="pt")
    return {it.item_id: [math.log(0.6 if o == (it.answer + 1) % it.n_options else 0.4 / (it.n_options - 1))
                         for o in range(it.n_options)] for it in items}


def _cache(table) -> BackendCache:
    cache = BackendCache()
    cache.put("lookup", LookupBackend(table))
    return cache


def _job(tmp_path: Path, strategy="enem_1shot", **kw) -> Job:
    return Job("lookup", "demo", {}, "pt", strategy, tmp_path / "run", **{"shuffles": 2, "limit": 4, **kw})


def _records(tmp_path, table):
    return run_job(_job(tmp_path, min_k=False), _cache(table), progress=False).records


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
