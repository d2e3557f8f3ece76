"""The audit of one model on one exam (contamination.audit.audit_model) on the tiny Gemma 3: every measurement in its
file, the records a shuffled run's, a second call reads what is there instead of measuring again, and a folder
measured for another model, an unknown step or a run without shuffles are refused before anything is measured."""
import pandas as pd
import pytest

from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.datasets import load
from mcqa_toolkit.contamination import audit as audit_module
from mcqa_toolkit.contamination.audit import AUDIT_STRATEGY, FAMILIARITY, PROBE, audit_model
from mcqa_toolkit.run.strategy import strategy


@pytest.fixture(scope="module")
def items():
    return load("demo", language="en").filter(subject="chemistry")[:4]


def test_audit_measures_every_step_once(tiny_backend, items, tmp_path, monkeypatch):
    got = audit_model(tiny_backend, items, tmp_path, progress=False)
    assert len(got.records) == AUDIT_STRATEGY.shuffles * len(items) and set(got.records["shuffle"]) == set(range(5))
    assert list(got.familiarity["item_id"]) == items.ids and list(got.probe["item_id"]) == items.ids
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / FAMILIARITY), got.familiarity)
    assert (tmp_path / PROBE).exists() and (tmp_path / "letters" / "records.parquet").exists()

    def fail(*a, **k):
        raise AssertionError("measured again")
    monkeypatch.setattr(audit_module, "familiarity_table", fail)
    monkeypatch.setattr(audit_module, "probe_table", fail)
    again = audit_model(tiny_backend, items, tmp_path, progress=False)
    pd.testing.assert_frame_equal(again.probe, got.probe)
    pd.testing.assert_frame_equal(again.records, got.records)


def test_what_is_refused(tiny_gemma, items, tmp_path):
    audit_model(HFBackend(tiny_gemma), items, tmp_path, steps=("familiarity",), progress=False)
    other = HFBackend(tiny_gemma)
    other.name = "another-model"
    with pytest.raises(ValueError, match="measured for \\['tiny-gemma3'\\], not 'another-model'"):
        audit_model(other, items, tmp_path, steps=("familiarity",), progress=False)
    with pytest.raises(ValueError, match="unknown audit step"):
        audit_model(other, items, tmp_path / "x", steps=("letters", "lz"))
    with pytest.raises(ValueError, match="needs option shuffles"):
        audit_model(other, items, tmp_path / "y", strategy("enem_0shot", shuffles=1))
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
