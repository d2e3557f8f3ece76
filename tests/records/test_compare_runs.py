"""records.compare_runs and scripts/compare_records.py: two runs are the same by the equality rule and an unchanged
identity, or the verdict says what differs; the score delta and same-choice share are what a naive loop over the
records gives, and so are the sizes per column (record_changes); the script's verdict per run and overall, its exit
status and its JSON (no machine paths)."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from lookup_backend import demo_table, lookup_cache, lookup_job
from paths import REPO

from mcqa_toolkit.records.compare_runs import compare_runs, pair_runs, record_changes, score_delta, verdicts
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run.recipe import run_job


def _script():
    spec = importlib.util.spec_from_file_location("compare_records", REPO / "scripts" / "compare_records.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two run folders of the lookup model (enem_1shot, S5), written by run_job."""
    root = tmp_path_factory.mktemp("runs")
    table = demo_table()
    for strategy in ("enem_1shot", "S5"):
        job = lookup_job(root, strategy=strategy)
        run_job(dataclasses.replace(job, run_dir=root / "a" / f"lookup__demo__pt__{strategy}"), lookup_cache(table),
                progress=False)
    return root / "a"


def _copy(runs, tmp_path, name="b"):
    return shutil.copytree(runs, tmp_path / name)


def _shift(run_dir, delta, row=0, option=0):
    """Move one option score of one record of a complete run by `delta`."""
    path = RunDir(run_dir).parquet
    frame = pd.read_parquet(path)
    scores = [np.array(s, dtype=float) for s in frame["option_scores"]]
    scores[row][option] += delta
    frame["option_scores"] = scores
    frame.to_parquet(path, index=False)


def _naive_delta(a, b):
    worst, same, n = 0.0, 0, 0
    right = {(r.item_id, r.shuffle): r for r in b.itertuples()}
    for r in a.itertuples():
        other = right[(r.item_id, r.shuffle)]
        for x, y in zip(r.option_scores, other.option_scores, strict=True):
            worst = max(worst, abs(float(x) - float(y)))
        same += int(r.choice == other.choice)
        n += 1
    return worst, same / n


def test_the_same_runs_are_the_same_and_a_score_past_the_rule_is_not(runs, tmp_path):
    b = _copy(runs, tmp_path)
    assert [v.same for v in verdicts(runs, b)] == [True, True]
    name = sorted(p.name for p in runs.iterdir())[0]
    _shift(b / name, 5e-7)
    within = compare_runs(RunDir(runs / name), RunDir(b / name))
    assert within.same and within.delta.max_abs_delta == pytest.approx(5e-7, rel=1e-3)
    _shift(b / name, 2e-6, row=3, option=1)
    past = compare_runs(RunDir(runs / name), RunDir(b / name))
    assert not past.same and any("option_scores" in r for r in past.reasons)
    worst, same = _naive_delta(RunDir(runs / name).load(), RunDir(b / name).load())
    assert past.delta.max_abs_delta == pytest.approx(worst, abs=1e-12) and past.delta.same_choice == same


def test_score_delta_equals_a_naive_loop_and_counts_other_choices(runs):
    a = RunDir(next(iter(sorted(runs.iterdir())))).load()
    b = a.copy()
    rng = np.random.default_rng(0)
    b["option_scores"] = [np.array(s) + rng.normal(0, 1e-3, len(s)) for s in b["option_scores"]]
    b.loc[[0, 2], "choice"] = (b.loc[[0, 2], "choice"] + 1) % b.loc[[0, 2], "n_options"]
    got = score_delta(a, b)
    worst, same = _naive_delta(a, b)
    assert got.records == len(a) and got.max_abs_delta == pytest.approx(worst) and got.same_choice == same < 1
    generated = a.assign(option_scores=[np.full(len(s), np.nan) for s in a["option_scores"]])
    assert score_delta(generated, generated).max_abs_delta is None  # nothing compared is not 0
    assert score_delta(a, a.iloc[0:0]).as_dict() == {"records": 0, "max_abs_delta": None, "same_choice": None}


def _naive_changes(a, b):
    """Largest |difference| of option_scores, option_probs and points_earned, and the records whose choice,
    response or forwarded tokens differ, by a loop over the records."""
    right = {(r["item_id"], r["shuffle"]): r for r in b.to_dict("records")}
    worst = {"option_scores": 0.0, "option_probs": 0.0, "points_earned": 0.0}
    changed = {"choice": 0, "response": 0, "n_forwarded_tokens": 0}
    for r in a.to_dict("records"):
        other = right[(r["item_id"], r["shuffle"])]
        for col in ("option_scores", "option_probs"):
            for x, y in zip(r[col], other[col], strict=True):
                worst[col] = max(worst[col], abs(float(x) - float(y)))
        worst["points_earned"] = max(worst["points_earned"], abs(r["points_earned"] - other["points_earned"]))
        for col in changed:
            changed[col] += int(json.loads(r[col]) != json.loads(other[col]) if col == "response"
                                else r[col] != other[col])
    return worst, changed


def test_record_changes_equal_a_naive_loop_per_column(runs):
    a = RunDir(next(iter(sorted(runs.iterdir())))).load()
    b = a.copy()
    rng = np.random.default_rng(1)
    b["option_scores"] = [np.array(s) + rng.normal(0, 1e-3, len(s)) for s in b["option_scores"]]
    b["option_probs"] = [np.array(s) + rng.normal(0, 1e-5, len(s)) for s in b["option_probs"]]
    b.loc[1, "points_earned"] = b.loc[1, "points_earned"] + 0.25
    b.loc[[0, 2], "choice"] = (b.loc[[0, 2], "choice"] + 1) % b.loc[[0, 2], "n_options"]
    b.loc[[0, 2, 3], "response"] = ['"moved"'] * 3
    b.loc[4, "n_forwarded_tokens"] = b.loc[4, "n_forwarded_tokens"] + 7
    got = record_changes(a, b)
    worst, changed = _naive_changes(a, b)
    for col, value in worst.items():
        assert got.max_abs_delta[col] == pytest.approx(value, abs=1e-15)
    assert got.changed == changed == {"choice": 2, "response": 3, "n_forwarded_tokens": 1}
    assert "choice" not in got.max_abs_delta and "seconds" not in got.max_abs_delta  # ints, timing: not floats
    same = record_changes(a, a.copy())
    assert set(same.changed.values()) == {0} and set(same.max_abs_delta.values()) == {0.0}


def test_record_changes_reads_floats_in_json_and_leaves_out_nan():
    frame = pd.DataFrame({"item_id": ["q1", "q2"], "shuffle": [0, 0], "choice": [1, -1],
                          "response": ["1", "null"], "option_scores": [[0.5, float("nan")], [0.0, 1.0]],
                          "extra": ['{"min_k": -1.5, "n": 3}', '{"min_k": -2.0, "n": 4}']})
    other = frame.assign(option_scores=[[0.75, 2.0], [0.0, 0.5]], extra=['{"min_k": -1.0, "n": 5}', '""'])
    got = record_changes(frame, other)
    assert got.max_abs_delta == {"option_scores": 0.5, "extra": 0.5}  # NaN vs 2.0 left out; ints are not floats
    assert got.changed == {"choice": 0, "response": 0}  # a column absent on both sides is not counted
    assert record_changes(frame, frame.iloc[0:0]).as_dict() == {"max_abs_delta_by_column": {},
                                                                 "records_changed": {"choice": 0, "response": 0}}


def test_a_changed_identity_or_a_missing_run_is_a_difference(runs, tmp_path):
    b = _copy(runs, tmp_path)
    name = sorted(p.name for p in runs.iterdir())[0]
    prov = RunDir(b / name).provenance_file
    prov.write_text(json.dumps({**json.loads(prov.read_text()), "strategy_hash": "0" * 12}))
    v = compare_runs(RunDir(runs / name), RunDir(b / name))
    before = RunDir(runs / name).provenance()["strategy_hash"]
    assert not v.same and v.reasons == (f"strategy_hash: {before!r} != '000000000000'",)
    shutil.rmtree(b / name)
    missing = [v for v in verdicts(runs, b) if not v.same]
    assert [(v.name, v.reasons, v.records[1]) for v in missing] == [(name, ("no such run in B",), None)]
    single = pair_runs(runs / name, tmp_path / "b" / sorted(p.name for p in b.iterdir())[0])
    assert len(single) == 1 and single[0][1] is not None and single[0][2] is not None  # two run folders: paired


def test_the_script_prints_a_verdict_per_run_and_overall(runs, tmp_path, capsys):
    script = _script()
    b = _copy(runs, tmp_path)
    out_json = tmp_path / "v.json"
    assert script.main([str(runs), str(b), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert out.count("\nsame ") + out.startswith("same ") == 2 and "overall: same (2 of 2 runs" in out
    data = json.loads(out_json.read_text())
    assert data["kind"] == "folder" and data["a"] == runs.name and data["b"] == "b" and data["same"] is True
    assert str(tmp_path) not in out_json.read_text()  # folders by name: no machine paths
    name = sorted(p.name for p in runs.iterdir())[1]
    _shift(b / name, 1e-3)
    assert script.main([str(runs), str(b)]) == 1
    out = capsys.readouterr().out
    assert f"DIFFERENT {name}" in out and "overall: DIFFERENT (1 of 2 runs" in out
    assert "max |delta| by column: option_scores 0.001" in out and "records changed: choice 0," in out
    assert script.main([str(runs), "no-such-commit-or-folder"]) == 2
    assert "neither a folder nor a commit" in capsys.readouterr().err
    assert script.main([str(runs), str(b), "--strategies", "S9"]) == 2
    assert "unknown strategies ['S9']" in capsys.readouterr().err


def test_a_commit_is_exported_without_touching_the_checkout_and_runs_every_strategy(tmp_path):
    script = _script()
    head = script.commit_of("HEAD")
    assert head and len(head) == 40 and script.commit_of("no-such-ref") is None
    status = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout
    script.export(head, tmp_path / "tree")
    assert (tmp_path / "tree" / "mcqa_toolkit" / "__init__.py").exists() and not (tmp_path / "tree.tar").exists()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout == status
    names = [s if isinstance(s, str) else s["name"] for s in script.strategies(16)]
    assert set(script.STRATEGIES) < set(names) and names[-1] == "enem_4shot_cat"
    capped = {s["name"]: s["max_new_tokens"] for s in script.strategies(16) if isinstance(s, dict) and "base" in s
              and s["name"] != "enem_4shot_cat"}
    assert set(capped) == {n for n, s in script.STRATEGIES.items() if s.method in ("generate", "cot")}
    assert set(capped.values()) == {16}
    assert script.strategies(16, ["S5", "enem_4shot_cat"])[0] == "S5"
