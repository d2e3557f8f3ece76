"""load_runs / dataset_items: the analyses take a dataset's items from its loader, or, for runs that carry their
items (imported runs), from the run folders, so no loader arguments are needed."""
import json

import pytest
from paths import REPO

from mcqa_toolkit.datasets import load
from mcqa_toolkit.interop import export_run, import_run
from mcqa_toolkit.report.headline import dataset_items, load_runs

SRC = REPO / "data" / "demo" / "results" / "gemma-3-270m__demo__pt__enem_1shot"


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
    runs = load_runs(tmp_path / "runs", "enem-like")          # no loader is registered under this name
    assert len(runs.records) == 300 and {it.item_id for it in runs.items} == set(runs.records["item_id"])
    assert all(it.irt is not None for it in runs.items)       # the matched items keep their IRT parameters
    # loader arguments win over carried items
    assert len(dataset_items(tmp_path / "runs", "demo", {"language": "es"})) == len(load("demo", language="es"))


def test_runs_without_items_use_the_loader(tmp_path):
    assert len(dataset_items(REPO / "data" / "demo" / "results", "demo")) == len(load("demo"))
    with pytest.raises(ValueError, match="unknown dataset"):
        dataset_items(tmp_path, "no-such-dataset")
