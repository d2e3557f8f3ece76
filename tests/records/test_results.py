"""records.results: every run folder under a folder, at any depth (complete ones only unless asked), as one frame,
and the Min-K% tables of many runs, one row per model x item; one definition of a complete run (records compacted
and summary.json written) that every reader of completeness shares."""
from __future__ import annotations

import pandas as pd
import pytest

from mcqa_toolkit.items import Item
from mcqa_toolkit.records.factory import make_record, run_fields
from mcqa_toolkit.records.identity import RunIdentity
from mcqa_toolkit.records.results import complete_runs, load_min_k, load_results, run_dirs
from mcqa_toolkit.records.state import RunState, run_state
from mcqa_toolkit.records.store import RunDir


def _identity(model: str) -> RunIdentity:
    return RunIdentity(f"hf:{model}", "demo", "f1", "h1")


def _run(path, model: str, items=("q1", "q2"), complete: bool = True, summary: bool = True) -> RunDir:
    """A run folder of `model` over `items`: records only, or (complete) compacted and, unless told, summarised."""
    rd = RunDir(path)
    rd.write_run_info({"dataset": "demo", "identity": _identity(model).to_dict()})
    rd.append([make_record(Item(item_id=i, source="t", exam="e", stem="?", options=("a", "b"), answer=0),
                           run_fields(model=model, run_id=rd.name, dataset="demo"), choice=0) for i in items])
    if complete:
        rd.finalize({"model": {"model": model}, "dataset": "demo", "identity": _identity(model).to_dict()})
        if summary:
            rd.write_summary({"accuracy": 1.0, "n_items": len(items)}, _identity(model))
    return rd


def test_load_results_gathers_run_folders_at_any_depth(tmp_path):
    _run(tmp_path / "a" / "m1__demo__pt__S1", "m1")
    _run(tmp_path / "b" / "deeper" / "m2__demo__pt__S1", "m2", items=("q1",))
    _run(tmp_path / "b" / "m3__demo__pt__S1", "m3", complete=False)  # still running (or killed)
    (tmp_path / "c").mkdir()  # not a run folder
    assert [rd.dir.relative_to(tmp_path).as_posix() for rd in run_dirs(tmp_path)] == [
        "a/m1__demo__pt__S1", "b/deeper/m2__demo__pt__S1", "b/m3__demo__pt__S1"]
    done = load_results(tmp_path)
    assert done[["model", "item_id"]].values.tolist() == [["m1", "q1"], ["m1", "q2"], ["m2", "q1"]]
    everything = load_results(tmp_path, complete_only=False)
    assert everything.groupby("model").size().to_dict() == {"m1": 2, "m2": 1, "m3": 2}
    assert list(everything.columns) == list(done.columns)
    with pytest.raises(FileNotFoundError, match="no complete runs under .*b/m3"):
        load_results(tmp_path / "b" / "m3__demo__pt__S1")
    assert len(load_results(tmp_path / "b" / "m3__demo__pt__S1", complete_only=False)) == 2
    with pytest.raises(FileNotFoundError, match="no runs under"):
        load_results(tmp_path / "c", complete_only=False)


def test_a_compacted_run_without_its_summary_is_complete_for_no_reader(tmp_path):
    """RunDir.is_complete is the one definition (records compacted, summary.json written: what a report needs);
    the folder's state, the results, the report's runs and its overview all read it, so they agree."""
    from mcqa_toolkit.report.headline import dataset_runs, runs_dataset
    from mcqa_toolkit.report.overview import runs_frame

    done = _run(tmp_path / "m1__demo__pt__S1", "m1")
    half = _run(tmp_path / "m2__demo__pt__S1", "m2", summary=False)   # killed between Parquet and summary.json
    assert half.is_compacted() and not half.is_complete() and done.is_complete()
    assert (run_state(half, _identity("m2")) is RunState.RESUMABLE
            and run_state(done, _identity("m1")) is RunState.COMPLETE)
    assert complete_runs(tmp_path) == [done] and complete_runs(tmp_path / "nowhere") == []
    assert set(load_results(tmp_path)["model"]) == {"m1"}
    assert runs_frame(tmp_path)["model"].tolist() == ["m1"]
    assert runs_dataset(tmp_path) == "demo" and dataset_runs(tmp_path, "demo") == [done]
    half.write_summary({"accuracy": 0.5}, _identity("m2"))
    assert complete_runs(tmp_path) == [done, half] and runs_frame(tmp_path)["model"].tolist() == ["m1", "m2"]
    assert run_state(half, _identity("m2")) is RunState.COMPLETE


def _min_k(model: str, item_ids, value: float) -> pd.DataFrame:
    return pd.DataFrame({"model": model, "language": "pt", "item_id": list(item_ids), "parallel_id": list(item_ids),
                         "min_k_prob": value, "n_tokens": 10})


def test_load_min_k_keeps_one_row_per_model_and_item(tmp_path):
    assert load_min_k(tmp_path) is None
    # runs of one model share the question texts: each of its runs measured the same items
    for run, model, items, value in (("m1__demo__pt__S1", "m1", ["q1", "q2"], 1.0),
                                     ("x/m1__demo__pt__S5", "m1", ["q2", "q3"], 2.0),
                                     ("m2__demo__pt__S1", "m2", ["q1"], 3.0)):
        _run(tmp_path / run, model).write_min_k(_min_k(model, items, value))
    got = load_min_k(tmp_path)
    assert got[["model", "item_id", "min_k_prob"]].values.tolist() == [
        ["m1", "q1", 1.0], ["m1", "q2", 1.0], ["m2", "q1", 3.0], ["m1", "q3", 2.0]]
    _run(tmp_path / "bad" / "m3__demo__pt__S1", "m3").write_min_k(_min_k("m3", ["q1"], 1.0).drop(columns=["model"]))
    with pytest.raises(ValueError, match=r"m3__demo__pt__S1/min_k.parquet: lacks column\(s\) \['model'\]"):
        load_min_k(tmp_path / "bad")
    with pytest.raises(ValueError, match=r"m3__demo__pt__S1/min_k.parquet: lacks column"):   # beside good files too
        load_min_k(tmp_path)
