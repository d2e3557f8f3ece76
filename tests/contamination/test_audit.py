"""The audit of one model on one exam (contamination.audit.audit_model) on the tiny Gemma 3: every measurement in its
file, byte for byte what the measurements give when made one after the other by hand; the folder written as a run
folder is (records.audit_dir.AuditDir through records.state.open_for_write): its identity recorded, a second call
reading what is there, an audit killed at any step resuming without measuring a finished step again or duplicating
a record, an audit of another model or of other items refused in one line, a second writer refused while another
process holds the lock, and a folder without run.json (audits written before they recorded their identity) refused
for writing but read, with a note."""
import dataclasses
import logging

import pandas as pd
import pytest
from held_lock import held_by_another_process

import mcqa_toolkit.run.runner as runner_mod
from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.contamination import audit as audit_module
from mcqa_toolkit.contamination.audit import AUDIT_STRATEGY, audit_identity, audit_model, load_audit
from mcqa_toolkit.contamination.familiarity import familiarity_table
from mcqa_toolkit.contamination.probe import probe_table
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.audit_dir import FAMILIARITY, LETTERS, PROBE, AuditDir
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.lock import RunLocked
from mcqa_toolkit.records.state import RunRefused, RunState, run_state
from mcqa_toolkit.run.runner import run
from mcqa_toolkit.run.strategy import strategy


@pytest.fixture(scope="module")
def items():
    return load("demo", language="en").filter(subject="chemistry")[:4]


@pytest.fixture(scope="module")
def by_hand(tiny_gemma, items, tmp_path_factory):
    """What the audit measured before its folder was a run folder: the letters run, then each table made on the
    same fresh backend and written with to_parquet(index=False)."""
    out = tmp_path_factory.mktemp("by_hand")
    backend = HFBackend(tiny_gemma)
    run(items, backend, AUDIT_STRATEGY, out / LETTERS, progress=False)
    for name, make in ((FAMILIARITY, familiarity_table), (PROBE, probe_table)):
        make(backend, items, progress=False).to_parquet(out / name, index=False)
    return out


def _fail(*a, **k):
    raise AssertionError("measured again")


def _assert_as_by_hand(folder, by_hand, ignore=()):
    for name in (FAMILIARITY, PROBE):
        assert (folder / name).read_bytes() == (by_hand / name).read_bytes(), name
    assert_same_records(AuditDir(folder).letters.load(), AuditDir(by_hand).letters.load(), ignore=ignore)


def test_the_audit_measures_every_step_once_as_by_hand(tiny_gemma, items, by_hand, tmp_path, monkeypatch):
    backend = HFBackend(tiny_gemma)
    got = audit_model(backend, items, tmp_path, progress=False)
    assert len(got.records) == AUDIT_STRATEGY.shuffles * len(items) and set(got.records["shuffle"]) == set(range(5))
    assert list(got.familiarity["item_id"]) == items.ids and list(got.probe["item_id"]) == items.ids
    _assert_as_by_hand(tmp_path, by_hand)
    folder = AuditDir(tmp_path)
    assert folder.is_complete() and folder.run_info()["identity_hash"] == audit_identity(backend, items,
                                                                                         AUDIT_STRATEGY).hash
    assert run_state(folder, audit_identity(backend, items, AUDIT_STRATEGY)) is RunState.COMPLETE

    monkeypatch.setattr(audit_module, "familiarity_table", _fail)
    monkeypatch.setattr(audit_module, "probe_table", _fail)
    monkeypatch.setattr(audit_module, "run", _fail)
    again = audit_model(backend, items, tmp_path, progress=False)
    for frame in ("records", "familiarity", "probe"):
        pd.testing.assert_frame_equal(getattr(again, frame), getattr(got, frame))
        pd.testing.assert_frame_equal(getattr(load_audit(tmp_path), frame), getattr(got, frame))


@pytest.mark.parametrize("owner, name, call", [(runner_mod, "ask", 2),              # inside the letters run
                                               (audit_module, "familiarity_table", 1),
                                               (audit_module, "probe_table", 1)])
def test_an_audit_killed_at_any_step_resumes_without_measuring_a_finished_step_again(
        tiny_gemma, items, by_hand, tmp_path, killed_at_call, monkeypatch, owner, name, call):
    with killed_at_call(owner, name, call):
        audit_model(HFBackend(tiny_gemma), items, tmp_path, progress=False)
    folder = AuditDir(tmp_path)
    identity = audit_identity(HFBackend(tiny_gemma), items, AUDIT_STRATEGY)
    assert not folder.is_complete() and folder.holder() is None            # the lock went with the writer
    assert run_state(folder, identity) is RunState.RESUMABLE
    finished = [s for s in ("letters", "familiarity", "probe") if folder.done(s)]
    assert finished == {"ask": [], "familiarity_table": ["letters"], "probe_table": ["letters", "familiarity"]}[name]
    n, full = len(folder.letters.read_records()), AUDIT_STRATEGY.shuffles * len(items)
    assert 0 < n < full if name == "ask" else n == full                     # the letters run cut short, or done
    if "letters" in finished:
        monkeypatch.setattr(audit_module, "run", _fail)
    if "familiarity" in finished:
        monkeypatch.setattr(audit_module, "familiarity_table", _fail)
    resumed = audit_model(HFBackend(tiny_gemma), items, tmp_path, progress=False)
    assert folder.is_complete() and len(folder.letters.read_records()) == AUDIT_STRATEGY.shuffles * len(items)
    assert not resumed.records.duplicated(["item_id", "shuffle"]).any()
    # a letters run resumed in a fresh backend forwards the prompt prefix its KV cache lost: cost, not a score
    _assert_as_by_hand(tmp_path, by_hand, ignore=("n_forwarded_tokens",) if name == "ask" else ())


def test_an_audit_of_another_model_or_other_items_is_refused_in_one_line(tiny_gemma, items, tmp_path):
    audit_model(HFBackend(tiny_gemma), items, tmp_path, steps=("familiarity",), progress=False)
    files = sorted(p.name for p in tmp_path.iterdir())
    other = HFBackend(dataclasses.replace(tiny_gemma, name="another-model"))
    for backend, given, field in ((other, items, "model 'hf:tiny-gemma3' \\(this run: 'hf:another-model'\\)"),
                                  (HFBackend(tiny_gemma), items[:3], "dataset_fingerprint '")):
        with pytest.raises(RunRefused, match=f"holds a different run, made with {field}") as refused:
            audit_model(backend, given, tmp_path, steps=("familiarity",), progress=False)
        assert "\n" not in str(refused.value)
    with pytest.raises(RunRefused, match="strategy_hash"):
        audit_model(HFBackend(tiny_gemma), items, tmp_path, strategy("enem_0shot", shuffles=5), steps=("familiarity",))
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    with pytest.raises(ValueError, match="unknown audit step"):
        audit_model(other, items, tmp_path / "x", steps=("letters", "lz"))
    with pytest.raises(ValueError, match="needs option shuffles"):
        audit_model(other, items, tmp_path / "y", strategy("enem_0shot", shuffles=1))
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_a_second_writer_is_refused_and_a_complete_audit_read_while_another_process_holds_the_lock(
        tiny_backend, items, tmp_path, monkeypatch):
    busy = tmp_path / "busy"
    with held_by_another_process(busy) as holder:
        monkeypatch.setattr(audit_module, "familiarity_table", _fail)
        with pytest.raises(RunLocked, match=f"pid {holder.pid} "):
            audit_model(tiny_backend, items, busy, steps=("familiarity",), progress=False)
        assert sorted(p.name for p in busy.iterdir()) == ["run.lock"]          # nothing written
    monkeypatch.undo()
    done = tmp_path / "done"
    got = audit_model(tiny_backend, items, done, steps=("familiarity",), progress=False)
    with held_by_another_process(done):
        again = audit_model(tiny_backend, items, done, steps=("familiarity",), progress=False)   # nothing to write
    pd.testing.assert_frame_equal(again.familiarity, got.familiarity)


def test_a_folder_without_run_json_is_refused_for_writing_and_read_with_a_note(tiny_backend, items, tmp_path,
                                                                               caplog):
    got = audit_model(tiny_backend, items, tmp_path, steps=("familiarity",), progress=False)
    (tmp_path / "run.json").unlink()                       # what an audit wrote before audits recorded identities
    with pytest.raises(RunRefused) as refused:
        audit_model(tiny_backend, items, tmp_path, steps=("familiarity",), progress=False)
    assert str(refused.value) == (f"{tmp_path} holds the audit output {FAMILIARITY} but no run.json saying what "
                                  "produced them; use another output folder or delete it")
    with caplog.at_level(logging.WARNING, logger="mcqa_toolkit.contamination"):
        old = load_audit(tmp_path)
    pd.testing.assert_frame_equal(old.familiarity, got.familiarity)
    assert old.records is None and old.probe is None
    assert "without run.json: the model and items it measured are not recorded" in caplog.text
