"""runner.run on a tiny random model: records schema, resume after a kill, determinism, guards."""
import json

import numpy as np
import pandas as pd
import pytest

import mcqa_toolkit.run.runner as runner_mod
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.columns import COLUMNS
from mcqa_toolkit.run import Strategy, run, strategy

VOLATILE = ["seconds", "n_forwarded_tokens"]


@pytest.fixture(scope="module")
def demo_pt():
    return load("demo", language="pt").filter(subject=["biology", "physics"])


def _stable(df):
    return df.drop(columns=VOLATILE + ["run_id"]).reset_index(drop=True)


def test_first_token_records(tiny_backend, demo_pt, tmp_path):
    st = Strategy.first_token(shots=1, shuffles=3, style="enem")
    df = run(demo_pt, tiny_backend, st, tmp_path / "r", dataset="demo", limit=4, progress=False)
    assert list(df.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert len(df) == 12 and df.groupby("item_id").size().eq(3).all()
    # shot items (the easiest per subject) and their translations are not evaluated
    shots = {sid for e in df["extra"] for sid in json.loads(e)["shot_ids"]}
    assert shots and not shots & set(df["item_id"])
    for _, r in df.iterrows():
        perm = r["permutation"]
        assert sorted(perm) == list(range(r["n_options"]))
        assert r["choice"] == int(np.argmax(r["option_scores"]))
        assert perm[r["choice_position"]] == r["choice"] and perm[r["correct_position"]] == r["answer"]
        assert r["correct"] == (r["choice"] == r["answer"]) and abs(sum(r["option_probs"]) - 1) < 1e-9
    assert (df[df["shuffle"] == 0]["permutation"].map(lambda p: list(p) == sorted(p))).all()
    prov = json.loads((tmp_path / "r" / "provenance.json").read_text())
    assert prov["complete"] and prov["strategy_hash"] == st.hash and prov["n_records"] == 12
    assert prov["usage"]["forwarded_tokens"] < prov["usage"]["naive"]


@pytest.mark.parametrize("st", [Strategy.first_token(shots=0, shuffles=2, style="enem", seed=7),
                                Strategy.generate(shuffles=2, style="enade", max_new_tokens=3, block_size=2)],
                         ids=["first_token", "generate_batched"])
def test_killed_run_resumes_without_loss_or_duplicates(tiny_backend, demo_pt, tmp_path, killed_at_call, st):
    full = run(demo_pt, tiny_backend, st, tmp_path / "full", limit=6, progress=False)
    with killed_at_call(runner_mod, "ask", 3):
        run(demo_pt, tiny_backend, st, tmp_path / "killed", limit=6, progress=False)
    jsonl = tmp_path / "killed" / "records.jsonl"
    with open(jsonl, "a") as f:  # a record half-written when the process died
        f.write('{"item_id": "demo-bio-0')
    resumed = run(demo_pt, tiny_backend, st, tmp_path / "killed", limit=6, progress=False)
    pd.testing.assert_frame_equal(_stable(resumed), _stable(full))
    assert len(jsonl.read_text().splitlines()) == len(full)


@pytest.mark.parametrize("st", [Strategy.first_token(shots=1, shuffles=2, style="enem"),
                                Strategy.loglik("sum", shuffles=2)], ids=["first_token", "loglik"])
def test_several_items_per_call_resume_to_the_same_records(tiny_gemma, demo_pt, tmp_path, killed_at_call, st):
    """A backend that takes several items per scoring call (the engine on a GPU): blocks of that many items,
    each computed whole, so a run killed mid-way resumes to exactly the records of an uninterrupted run; against
    one item per call only float rounding differs (1e-5 here)."""
    from mcqa_toolkit.backends.hf import HFBackend
    from mcqa_toolkit.records.equality import assert_same_records

    def backend(n):
        b = HFBackend(tiny_gemma, items_per_call=n)
        b.name = "tiny"
        return b

    full = run(demo_pt, backend(2), st, tmp_path / "full", limit=5, progress=False)
    with killed_at_call(runner_mod, "ask", 2):
        run(demo_pt, backend(2), st, tmp_path / "killed", limit=5, progress=False)
    assert len((tmp_path / "killed" / "records.jsonl").read_text().splitlines()) == 2 * 2  # the first block's
    resumed = run(demo_pt, backend(2), st, tmp_path / "killed", limit=5, progress=False)
    pd.testing.assert_frame_equal(_stable(resumed), _stable(full))
    single = run(demo_pt, backend(1), st, tmp_path / "single", limit=5, progress=False)
    assert_same_records(full, single, atol=1e-5, ignore=["run_id", "n_forwarded_tokens"])


def test_same_seed_same_records(tiny_backend, demo_pt, tmp_path):
    st = Strategy.loglik("token", shuffles=2, style="default", seed=3)
    a = run(demo_pt, tiny_backend, st, tmp_path / "a", limit=3, progress=False)
    b = run(demo_pt, tiny_backend, st, tmp_path / "b", limit=3, progress=False)
    pd.testing.assert_frame_equal(_stable(a), _stable(b))
    c = run(demo_pt, tiny_backend, st.with_(seed=4), tmp_path / "c", limit=3, progress=False)
    assert not a["permutation"].equals(c["permutation"])


def test_refuses_to_mix_runs(tiny_backend, demo_pt, tmp_path):
    run(demo_pt, tiny_backend, Strategy.first_token(), tmp_path / "r", limit=2, progress=False)
    with pytest.raises(ValueError, match="holds a different run, made with strategy_hash"):
        run(demo_pt, tiny_backend, Strategy.first_token(shuffles=2), tmp_path / "r", limit=2, progress=False)


@pytest.mark.parametrize("name", ["S1", "S4", "S5", "S6", "uned"])
def test_named_strategies_run(tiny_backend, tmp_path, name):
    items = load("demo", language="es").filter(subject="chemistry")
    st = strategy(name, shuffles=2 if name == "S4" else 1, max_new_tokens=3)
    df = run(items, tiny_backend, st, tmp_path / name, limit=2, progress=False)
    assert len(df) == 2 * st.shuffles
    assert set(df["status"]) <= {"correct", "incorrect", "unanswered", "refused"}
    assert (df["correct"] == (df["status"] == "correct")).all()
    assert (df["points_earned"] == df["correct"].astype(float)).all() and (df["points_possible"] == 1).all()
    if st.method == "generate":
        assert (df["extraction_rule"] != "").all()
        assert ((df["choice"] == -1) == df["status"].isin(["unanswered", "refused"])).all()


def test_short_answers_without_a_judge_rejected_before_any_request(tiny_backend, tmp_path):
    from mcqa_toolkit.items import Item, ItemSet

    it = Item(item_id="x", source="t", exam="e", stem="Why?", options=(), answer="Because.", answer_type="short",
              language="en")
    with pytest.raises(ValueError, match=r"1 short-answer item\(s\) \(e.g. \['x'\]\) need a judge"):
        run(ItemSet([it]), tiny_backend, Strategy.generate(), tmp_path / "r", progress=False)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("st", [Strategy.first_token(shots=1, shuffles=2, style="enem"),
                                Strategy.loglik("sum", shuffles=2)], ids=["first_token", "loglik"])
def test_preparing_the_next_block_ahead_gives_the_same_records(tiny_gemma, demo_pt, tmp_path, st):
    """A PreparingBackend with `prepare_ahead` (the engine on a GPU): each block after the first is tokenised in
    the background while the one before it is scored (the prompts its call then gets), and the records are those
    of the plain loop, token counts included."""
    from mcqa_toolkit.backends.hf import HFBackend

    def backend(ahead):
        b = HFBackend(tiny_gemma, items_per_call=2, prepare_ahead=ahead)
        b.name = "tiny"
        return b

    pipelined, prepared = backend(True), []
    real = pipelined.prepare
    pipelined.prepare = lambda prompts, method: prepared.append([p.text for p in prompts]) or real(prompts, method)
    got = run(demo_pt, pipelined, st, tmp_path / "ahead", limit=5, progress=False)
    want = run(demo_pt, backend(False), st, tmp_path / "plain", limit=5, progress=False)
    stable = lambda df: df.drop(columns=["seconds", "run_id"]).reset_index(drop=True)  # noqa: E731
    pd.testing.assert_frame_equal(stable(got), stable(want))
    assert len(prepared) == 2 and all(prepared)  # blocks 2 and 3 of 3
    shown = got.groupby("item_id", sort=False).size()
    assert [len(x) for x in prepared] == [int(shown.iloc[2:4].sum()), int(shown.iloc[4:].sum())]


def test_a_model_spec_without_a_pool_is_refused_in_one_sentence(tmp_path):
    items = load("demo", language="en", per_subject=1)
    with pytest.raises(ValueError, match="is a model spec: pass a loaded Backend, or pool="):
        run(items, "some/model", strategy("S1"), tmp_path / "r")
