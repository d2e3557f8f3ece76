"""records.audit_dir.AuditDir, written by hand: a step is done when its output is there whole (the letters run
complete, a table written), the audit is complete when every step asked of it is, records.state decides an audit
folder's state through that one definition (new, resumable, complete, refused) and opens it as it opens a run
folder (a complete audit without the lock, the lock held otherwise), and a folder holding audit output without
run.json is refused naming what it holds."""
from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from mcqa_toolkit.items import Item
from mcqa_toolkit.records.audit_dir import FAMILIARITY, LETTERS, PROBE, STEPS, AuditDir
from mcqa_toolkit.records.factory import make_record, run_fields
from mcqa_toolkit.records.identity import RunIdentity
from mcqa_toolkit.records.state import RunRefused, RunState, open_for_write, run_state

IDENTITY = RunIdentity("hf:m", "", "f1", "h1")
TABLE = pd.DataFrame({"model": ["m"], "item_id": ["q1"], "min_k_prob": [1.5]})


def _letters_done(folder: AuditDir) -> None:
    """A complete letters run (records compacted, summary.json written), as run() leaves it."""
    item = Item(item_id="q1", source="t", exam="e", stem="?", options=("a", "b"), answer=0)
    letters = folder.letters
    letters.write_run_info({"identity": IDENTITY.to_dict()})
    letters.append([make_record(item, run_fields(model="m"), choice=0)])
    letters.finalize({"identity": IDENTITY.to_dict()})
    assert not folder.done("letters")   # compacted, not complete: no summary.json yet
    letters.write_summary({"accuracy": 1.0}, IDENTITY)


def test_a_step_is_done_when_its_output_is_whole_and_complete_means_every_step_asked(tmp_path):
    folder = AuditDir(tmp_path / "audit")
    assert folder.steps == STEPS and not folder.is_complete() and not any(folder.done(s) for s in STEPS)
    folder.write_table("familiarity", TABLE)
    assert folder.done("familiarity") and (folder.dir / FAMILIARITY).exists() and not folder.is_complete()
    assert AuditDir(folder.dir, ("familiarity",)).is_complete()          # complete for the steps asked of it
    pd.testing.assert_frame_equal(folder.read_table("familiarity"), TABLE)
    assert folder.read_table("probe") is None
    _letters_done(folder)
    assert folder.done("letters") and not folder.is_complete()
    folder.write_table("probe", TABLE)
    assert folder.is_complete() and (folder.dir / PROBE).exists()
    assert not list(folder.dir.glob(".*.tmp"))                         # written through a temporary name
    with pytest.raises(ValueError, match=r"unknown audit step\(s\) \['lz'\]; steps: "):
        AuditDir(tmp_path / "other", ("letters", "lz"))


def test_records_state_decides_an_audit_folder_through_its_one_definition_of_complete(tmp_path):
    folder = AuditDir(tmp_path / "audit", ("familiarity", "probe"))
    assert run_state(folder, IDENTITY) is RunState.NEW and not folder.dir.exists()
    with open_for_write(folder, IDENTITY) as opened:
        assert opened.state is RunState.NEW
        assert json.loads(folder.lock_file.read_text())["pid"] == os.getpid()   # the lock is held
        opened.start({"n_items": 1})
        folder.write_table("familiarity", TABLE)
    assert folder.holder() is None and run_state(folder, IDENTITY) is RunState.RESUMABLE
    with pytest.raises(RunRefused, match=r"holds a different run, made with model 'hf:m' \(this run: 'hf:x'\)"):
        run_state(folder, RunIdentity("hf:x", "", "f1", "h1"))
    folder.write_table("probe", TABLE)
    assert run_state(folder, IDENTITY) is RunState.COMPLETE
    folder.lock_file.unlink()
    with open_for_write(folder, IDENTITY) as opened:   # nothing to write: read without the lock
        assert opened.state is RunState.COMPLETE
    assert not folder.lock_file.exists()
    assert run_state(AuditDir(folder.dir), IDENTITY) is RunState.RESUMABLE   # the letters step not done


def test_audit_output_without_run_json_is_refused_naming_it(tmp_path):
    folder = AuditDir(tmp_path / "audit")
    folder.dir.mkdir(parents=True)
    (folder.dir / ".familiarity.parquet.99.tmp").write_text("half a table of a killed writer")
    (folder.dir / "run.lock").write_text("")
    assert folder.held_output() == "" and run_state(folder, IDENTITY) is RunState.NEW   # no output yet
    folder.write_table("probe", TABLE)
    folder.letters.dir.mkdir()
    assert folder.held_output() == f"the audit output {LETTERS}/, {PROBE}"
    with pytest.raises(RunRefused) as refused:
        run_state(folder, IDENTITY)
    assert str(refused.value) == (f"{folder.dir} holds the audit output {LETTERS}/, {PROBE} but no run.json saying "
                                  "what produced them; use another output folder or delete it")
