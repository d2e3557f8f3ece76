"""load_runs / merged_items / dataset_items: the analyses take the runs' items from the run folders alone (imported runs
and our own carry them; folders written before are read by loading their recorded dataset again), pick the runs'
one dataset when none is named, and refuse items two runs hold differently."""
import json
import shutil

import pytest
from lookup_backend import demo_table, lookup_cache, lookup_job
from paths import REPO

from mcqa_toolkit.datasets import load
from mcqa_toolkit.interop import export_run, import_run
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.report.headline import dataset_items, load_runs, merged_items, runs_dataset
from mcqa_toolkit.run.recipe import run_job

SAMPLE = REPO / "data" / "demo" / "results"
SRC = SAMPLE / "gemma-3-270m__demo__pt__enem_1shot"


def _without_payload(samples):
    """The exported samples as another tool would write them: no `mcqa` payload in the docs."""
    lines = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        del line["doc"]["mcqa"]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return samples


def test_imported_runs_carry_their_items(tmp_path):
    samples = _without_payload(export_run("lm-eval", SRC, tmp_path / "x", items=load("demo")))
    subset = load("demo", language="pt")
    import_run("lm-eval", samples, tmp_path / "runs" / "a", items=subset, dataset="enem-like")
    runs = load_runs(tmp_path / "runs")                        # no loader is registered under this name
    assert runs.dataset == "enem-like" and len(runs.records) == 300
    assert {it.item_id for it in runs.items} == set(runs.records["item_id"])
    assert all(it.irt is not None for it in runs.items)       # the matched items keep their IRT parameters


def test_our_runs_carry_the_items_they_were_given(tmp_path):
    table = demo_table()
    job = lookup_job(tmp_path / "runs")
    run_job(job, lookup_cache(table), progress=False)
    runs = load_runs(tmp_path / "runs")
    assert runs.dataset == "demo" and list(runs.items) == list(job.items())   # shots and all, not only the 4 run
    assert dataset_items(tmp_path / "runs").fingerprint() == job.items().fingerprint()


def test_folders_from_before_items_were_carried_load_their_recorded_dataset(tmp_path):
    """The committed sample runs (four languages of the demo, written without items.jsonl) read as the demo loader
    gives it, and their course-exam run is reported apart: the runs' one dataset is the demo."""
    assert runs_dataset(SAMPLE) == "demo"
    items = dataset_items(SAMPLE)
    assert {it.item_id for it in items} == {it.item_id for it in load("demo")} and items.name == "demo"
    assert len(load_runs(SAMPLE, "course_exam").items) == len(load("course_exam"))
    with pytest.raises(ValueError, match="name the dataset to explore"):
        dataset_items(tmp_path)
    assert len(dataset_items(tmp_path, "demo", {"language": "es"})) == len(load("demo", language="es"))  # no runs


def test_two_datasets_or_two_versions_of_an_item_are_refused(tmp_path):
    for name in ("gemma-3-270m__demo__pt__S5", "gemma-3-270m__course_exam__en__course_generate"):
        shutil.copytree(SAMPLE / name, tmp_path / "both" / name)
    (tmp_path / "both" / "gemma-3-270m__course_exam__en__course_generate" / "provenance.json").write_text(
        json.dumps({**json.loads((SAMPLE / "gemma-3-270m__demo__pt__S5" / "provenance.json").read_text()),
                    "dataset": "enem"}))
    with pytest.raises(ValueError, match=r"are of the datasets \['demo', 'enem'\]: choose one"):
        runs_dataset(tmp_path / "both")
    table = demo_table()
    run_job(lookup_job(tmp_path / "a"), lookup_cache(table), progress=False)
    run_job(lookup_job(tmp_path / "b", strategy="S5"), lookup_cache(table), progress=False)
    edited = tmp_path / "b" / "run" / "items.jsonl"
    lines = edited.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    edited.write_text("\n".join([json.dumps({**first, "stem": first["stem"] + " (edited)"}), *lines[1:]]) + "\n",
                      encoding="utf-8")
    with pytest.raises(ValueError, match=f"item '{first['item_id']}' differs between the runs"):
        merged_items([RunDir(tmp_path / "a" / "run"), RunDir(tmp_path / "b" / "run")])
