"""Contaminating a model on purpose, on the tiny Gemma 3 saved as a folder: the weights change, deterministically for
a seed (and the same when training is stopped and resumed), the frozen embedding stays as it was, the manifest says
what was trained on what, the folder runs like any local model, and a folder of another training is refused."""
import json

import pytest
import torch

from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.hf import load_model
from mcqa_toolkit.backends.hf.finetune import STATE
from mcqa_toolkit.backends.hf.manifest import FORMAT, MANIFEST, read_manifest, state_sha256
from mcqa_toolkit.contamination.fine_tuning import Recipe, contaminate
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.run import run, strategy


def _items():
    stems = ["What is the boiling point of water?", "Qual é a capital do Brasil?", "Choose the colour of the sky.",
             "Quanto é 2 + 2?", "Which is a prime number?", "Qual é a capital da Itália?"]
    return ItemSet([Item(item_id=f"q{k}", source="t", exam="T", year=2021, stem=s, options=("red", "blue", "4", "Roma"),
                         answer=k % 4, subject="s", language="en" if k % 2 == 0 else "pt", meta={"number": k + 1})
                    for k, s in enumerate(stems)], name="tiny-exam")


ITEMS = _items()
EXPOSED = ["q0", "q1", "q3"]


@pytest.fixture(scope="module")
def trained(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("contaminated")
    folders = contaminate(tiny_model_dir, ITEMS, EXPOSED, out, Recipe(exposures=(1, 2), lr=1e-3, seed=3),
                          progress=False)
    return out, folders


def test_weights_change_but_the_frozen_embedding_does_not(trained, tiny_model_dir):
    _, (x1, x2) = trained
    base, m1, m2 = (load_model(str(d), device="cpu").model for d in (tiny_model_dir, x1, x2))
    assert len({state_sha256(m) for m in (base, m1, m2)}) == 3
    emb = "model.embed_tokens.weight"
    assert torch.equal(base.state_dict()[emb], m2.state_dict()[emb])
    changed = [n for n, t in base.state_dict().items() if not torch.equal(t, m2.state_dict()[n])]
    assert changed and all("layers" in n or "norm" in n for n in changed)


def test_same_seed_same_weights_and_resuming_changes_nothing(trained, tiny_model_dir, tmp_path):
    _, (x1, x2) = trained
    again = contaminate(tiny_model_dir, ITEMS, EXPOSED, tmp_path / "a", Recipe(exposures=(1, 2), lr=1e-3, seed=3),
                        until=1, progress=False)
    assert [p.name for p in again] == ["x1"] and (tmp_path / "a" / STATE).exists()
    assert read_manifest(again[0])["weights_sha256"] == read_manifest(x1)["weights_sha256"]
    resumed = contaminate(tiny_model_dir, ITEMS, EXPOSED, tmp_path / "a", Recipe(exposures=(1, 2), lr=1e-3, seed=3),
                          progress=False)
    assert read_manifest(resumed[1])["weights_sha256"] == read_manifest(x2)["weights_sha256"]
    assert not (tmp_path / "a" / STATE).exists()   # removed with the last folder
    other = contaminate(tiny_model_dir, ITEMS, EXPOSED, tmp_path / "b", Recipe(exposures=(1,), lr=1e-3, seed=4),
                        progress=False)
    assert read_manifest(other[0])["weights_sha256"] != read_manifest(x1)["weights_sha256"]


def test_manifest_says_what_was_trained_on_what(trained, tiny_model_dir):
    _, (x1, x2) = trained
    m = read_manifest(x2)
    assert m["format"] == FORMAT and m["exposures"] == 2 and m["recipe"]["exposures"] == [1, 2]
    assert m["recipe"]["lr"] == 1e-3 and m["recipe"]["seed"] == 3 and m["recipe"]["schedule"] == "constant"
    assert m["items"]["exposed"] == EXPOSED and m["items"]["held_out"] == ["q2", "q4", "q5"]
    assert m["items"]["fingerprint"] == ITEMS.fingerprint() and m["items"]["exposed_parallel_ids"] == EXPOSED
    base = load_model(str(tiny_model_dir), device="cpu")
    assert m["base_model"]["weights_sha256"] == state_sha256(base.model)
    assert m["weights_sha256"] == state_sha256(load_model(str(x2), device="cpu").model)
    assert set(m["templates"]) == {"en", "pt"} and m["templates"]["pt"]["answer"] == "\nResposta: {letter}\n"
    assert len(m["train_loss"]) == 2 and m["train_loss"][1] < m["train_loss"][0]
    n_emb = base.model.get_input_embeddings().weight.numel()
    assert m["parameters"]["trained"] == m["parameters"]["total"] - n_emb
    assert len(read_manifest(x1)["train_loss"]) == 1


def test_the_folder_runs_like_any_local_model(trained, tmp_path):
    _, (_, x2) = trained
    backend = load_backend(str(x2))
    records = run(ITEMS, backend, strategy("enem_0shot", shuffles=2), tmp_path / "run", progress=False)
    assert len(records) == 2 * len(ITEMS) and set(records["model"]) == {str(x2)}


def test_training_lowers_the_loss_of_the_exposed_pages_most(trained, tiny_model_dir):
    _, (_, x2) = trained

    def loss(model, item):   # the stem: the one part of the page no other item shares
        ids = model.tokenizer(item.stem, return_tensors="pt").input_ids
        with torch.no_grad():
            return float(model.model(input_ids=ids, labels=ids).loss)

    base, after = load_model(str(tiny_model_dir), device="cpu"), load_model(str(x2), device="cpu")
    drop = {it.item_id: loss(base, it) - loss(after, it) for it in ITEMS}
    assert min(drop[i] for i in EXPOSED) > max(v for k, v in drop.items() if k not in EXPOSED)


def test_another_training_in_the_same_folder_is_refused(trained, tiny_model_dir):
    out, _ = trained
    with pytest.raises(ValueError, match="another training"):
        contaminate(tiny_model_dir, ITEMS, EXPOSED, out, Recipe(exposures=(1, 2), lr=2e-3, seed=3), progress=False)
    with pytest.raises(ValueError, match="not in the items"):
        contaminate(tiny_model_dir, ITEMS, ["nope"], out, progress=False)


def test_manifest_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="no contamination manifest"):
        read_manifest(tmp_path)
    (tmp_path / MANIFEST).write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match=f"{MANIFEST}: field 'format'"):
        read_manifest(tmp_path)


def test_stopping_between_checkpoints_trains_that_far(tiny_model_dir, tmp_path):
    recipe = Recipe(exposures=(1, 3), lr=1e-3, seed=1)
    straight = contaminate(tiny_model_dir, ITEMS, EXPOSED[:2], tmp_path / "a", recipe, progress=False)
    for until in (1, 2):
        contaminate(tiny_model_dir, ITEMS, EXPOSED[:2], tmp_path / "b", recipe, until=until, progress=False)
        assert torch.load(tmp_path / "b" / STATE, weights_only=False)["epoch"] == until
    stepwise = contaminate(tiny_model_dir, ITEMS, EXPOSED[:2], tmp_path / "b", recipe, until=3, progress=False)
    assert read_manifest(stepwise[1])["weights_sha256"] == read_manifest(straight[1])["weights_sha256"]
    assert contaminate(tiny_model_dir, ITEMS, EXPOSED[:2], tmp_path / "b", recipe, progress=False) == stepwise
