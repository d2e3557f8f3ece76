"""The torch side of contaminating a model on purpose (contamination.fine_tuning.contaminate builds the pages and calls
`fine_tune`): causal-LM fine-tuning of a local model on given pages, one model folder per exposure count.

Exposure e shows every page once, in an order drawn from (seed, e), one page per optimiser step (`batch_size` pages
with their gradients summed), AdamW at a constant learning rate, causal-LM loss on every token of the page. With a
constant rate, the model after k exposures is the same whether training stops at k or goes on, so one training run
writes a model folder per exposure count in `recipe.exposures` (`<out>/x1`, `x3`, `x10`). By default the token
embedding matrix (tied with the output head in Gemma 3: 168M of the 270M parameters) stays as it was and everything
else is trained, which halves the CPU cost; `train_embeddings=True` trains it too.

Each folder is a plain transformers model folder (config, safetensors weights, tokenizer), so it runs through
every backend path like any local model, plus `contamination.json` (`backends.hf.manifest`): the items exposed, the
exposures, the recipe, the page templates, the base model and the hashes of its and the new weights. Same base,
pages and recipe -> the same weights (tests compare the hashes).

Training is resumable: after every exposure the trained weights and the optimiser's state are saved in
`<out>/.contamination_state.pt` (removed once the last folder is written), so `until=3` then `until=10` gives
the weights of one run to 10; folders are written to a temporary name and renamed.
"""
from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tqdm.auto import tqdm

from mcqa_toolkit.backends.hf.loading import load_model
from mcqa_toolkit.backends.hf.manifest import (
    MANIFEST,
    check_same_training,
    make_manifest,
    read_manifest,
    state_sha256,
    texts_sha256,
    write_manifest,
)
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.prompts.permutations import stable_seed

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["fine_tune", "STATE"]

STATE = ".contamination_state.pt"


def _trainable(model: PreTrainedModel, train_embeddings: bool) -> list[torch.nn.Parameter]:
    """Freeze the input embedding (and the output head when it is the same tensor) unless `train_embeddings`."""
    frozen = set() if train_embeddings else {id(model.get_input_embeddings().weight)}
    params = []
    for p in model.parameters():
        p.requires_grad_(id(p) not in frozen)
        if p.requires_grad:
            params.append(p)
    return params


def _save_state(path: Path, epoch: int, model, optimizer, losses: list[float], key: dict) -> None:
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    trained = {n: t for n, t in model.state_dict().items() if n in names}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save({"epoch": epoch, "weights": trained, "optimizer": optimizer.state_dict(), "losses": losses,
                "key": key}, tmp)
    tmp.replace(path)


def _write_folder(target: Path, lm, manifest: dict) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    lm.model.save_pretrained(tmp, safe_serialization=True)
    lm.tokenizer.save_pretrained(tmp)
    write_manifest(tmp, manifest)
    if target.exists():   # a folder without its manifest (never completed): replaced
        shutil.rmtree(target)
    tmp.replace(target)


def _done(out: Path, recipe: Any, key: dict) -> dict[int, Path]:
    """The complete folders already there (same training, else ValueError)."""
    done = {}
    for e in recipe.exposures:
        folder = out / f"x{e}"
        if (folder / MANIFEST).exists():
            check_same_training(read_manifest(folder), key, folder)
            done[e] = folder
    return done


def fine_tune(base: str | Path, items: ItemSet, exposed: Sequence[str], pages: Sequence[str], templates: dict,
              out_dir: str | Path, recipe: Any, *, until: int | None = None, device: str = "cpu",
              progress: bool = True) -> list[Path]:
    """Fine-tune the model `base` (name or folder, as `load_model` takes it) on `pages` (the pages of the `exposed`
    items of `items`, made with `templates`: what the manifest records) and write `<out_dir>/x<k>` for each k in
    `recipe.exposures` up to `until` (default: all); returns the folders written so far, existing ones included.
    Folders of another training in `out_dir` are refused. `recipe`: a contamination.Recipe (its fields and
    to_dict() are read)."""
    out = Path(out_dir)
    last = max(recipe.exposures) if until is None else min(until, max(recipe.exposures))
    if last < 1:
        raise ValueError(f"until must be >= 1, got {until}")
    pages = list(pages)
    lm = load_model(str(base), device=device, dtype="float32")
    torch.manual_seed(recipe.seed)
    params = _trainable(lm.model, recipe.train_embeddings)
    key = {"base_state_sha256": state_sha256(lm.model), "recipe": recipe.to_dict(), "exposed": list(exposed),
           "pages_sha256": texts_sha256(pages)}
    done = _done(out, recipe, key)
    wanted = [e for e in recipe.exposures if e <= last]
    state_file = out / STATE
    state = torch.load(state_file, weights_only=False) if state_file.exists() else None
    if state is not None:
        check_same_training({"training": state["key"]}, key, state_file)
    trained_to = state["epoch"] if state is not None else max(recipe.exposures) if max(recipe.exposures) in done else 0
    if trained_to >= last:   # trained that far already: the folders are there
        missing = [e for e in wanted if e not in done]
        if missing:
            raise ValueError(f"{out}: the folders of exposures {missing} are missing; use another out_dir")
        return [done[e] for e in wanted]
    if done and state is None:
        raise ValueError(f"{out}: holds {sorted(done)} but not the training state to go on from; "
                         "remove the folders or use another out_dir")
    optimizer = torch.optim.AdamW(params, lr=recipe.lr, betas=recipe.betas, eps=recipe.eps,
                                  weight_decay=recipe.weight_decay)
    start, losses = 0, []
    if state is not None:
        lm.model.load_state_dict(state["weights"], strict=False)
        optimizer.load_state_dict(state["optimizer"])
        start, losses = state["epoch"], list(state["losses"])
        del state
    ids = [torch.tensor([lm.tokenizer(p, truncation=True, max_length=recipe.max_tokens).input_ids],
                        device=lm.device) for p in pages]
    out.mkdir(parents=True, exist_ok=True)
    lm.model.train()
    t0 = time.time()
    with tqdm(total=(last - start) * len(ids), desc=f"contaminate {out.name}", unit="page",
              disable=not progress) as bar:
        for epoch in range(start + 1, last + 1):
            order = list(range(len(ids)))
            random.Random(stable_seed("contaminate", recipe.seed, epoch)).shuffle(order)
            total = 0.0
            for lo in range(0, len(order), recipe.batch_size):
                for k in order[lo:lo + recipe.batch_size]:
                    loss = lm.model(input_ids=ids[k], labels=ids[k]).loss
                    loss.backward()
                    total += float(loss.detach())
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                bar.update(len(order[lo:lo + recipe.batch_size]))
            losses.append(total / len(ids))
            if epoch in recipe.exposures and epoch not in done:
                lm.model.eval()
                manifest = make_manifest(lm, base, items, key, epoch, losses, templates, time.time() - t0)
                _write_folder(out / f"x{epoch}", lm, manifest)
                lm.model.train()
                done[epoch] = out / f"x{epoch}"
            if epoch < max(recipe.exposures):
                _save_state(state_file, epoch, lm.model, optimizer, losses, key)
    if last == max(recipe.exposures):
        state_file.unlink(missing_ok=True)
    return [done[e] for e in wanted]
