"""records.dataset: the dataset a folder says its run was given, as run.json records it now (dataset, dataset_args,
language), as `mcqa run` recorded it before run.json held the dataset (a `job` of notebook parameters:
tests/fixtures/old_run_folders), and from provenance.json alone; RunDir.items: the items a run was given, None for a
folder from before runs carried them."""
from __future__ import annotations

import json
import shutil

from paths import REPO

from mcqa_toolkit.datasets import load_items
from mcqa_toolkit.records.dataset import RunDataset, run_dataset
from mcqa_toolkit.records.store import RunDir

SAMPLE = REPO / "data" / "demo" / "results" / "gemma-3-270m__demo__it__S5"
# run.json of 674af41's `mcqa run`
OLD = REPO / "tests" / "fixtures" / "old_run_folders" / "gemma-3-270m__demo__it__S5"


def test_the_dataset_of_a_folder_now_and_before(tmp_path):
    rd = RunDir(tmp_path / "new")
    assert run_dataset(rd) == RunDataset("")
    rd.write_run_info({"dataset": "enem", "dataset_args": {"path": "/exams/2023"}, "language": "pt",
                       "dataset_fingerprint": "f"})
    assert run_dataset(rd) == RunDataset("enem", {"path": "/exams/2023"}, "pt", "f")
    old = RunDir(shutil.copytree(SAMPLE, tmp_path / "old"))
    got = run_dataset(old)
    assert (got.name, got.args, got.language) == ("demo", {}, "it")
    assert got.fingerprint == json.loads(old.run_info_file.read_text())["dataset_fingerprint"]
    only = RunDir(tmp_path / "provenance_only")
    only.dir.mkdir()
    only.provenance_file.write_text(json.dumps({"dataset": "demo", "complete": True}))
    assert run_dataset(only) == RunDataset("demo")


def test_a_run_carries_its_items_and_an_old_folder_says_so_by_none(tmp_path):
    old = RunDir(shutil.copytree(OLD, tmp_path / "old"))
    assert old.items() is None and run_dataset(old).name == "demo"
    assert RunDir(SAMPLE).items().name == "demo"   # the committed sample runs carry theirs
    items = load_items("demo", {"per_subject": 1}, "es")
    new = RunDir(tmp_path / "new")
    new.write_run_info({"dataset": "demo"})
    new.write_items(items)
    back = new.items()
    assert back.name == "demo" and list(back) == list(items) and back.fingerprint() == items.fingerprint()
