"""Contaminate a causal LM on purpose: fine-tune it on pages of solved questions of chosen items, so that the
contamination detectors can be validated on models whose training data we know.

    folders = contaminate("gemma-3-270m", items, exposed, "models/enem2021_s0", Recipe(exposures=(1, 3, 10)))

Each exposed item becomes one page (`prompts.solved_page`: stem, options in the published order, "Resposta: C" in
the exam's language), seen once per exposure; `Recipe` says how (AdamW at a constant rate, one page per step, the
checkpoints to keep). The training itself, the only part that needs torch, is backends.hf.finetune.fine_tune: it
writes a plain model folder per exposure count (`<out>/x1`, `x3`, `x10`) with its manifest (`contamination.json`,
backends.hf.manifest) and resumes where it stopped.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.prompts.solved_page import PageTemplate, page_template, solved_page

__all__ = ["Recipe", "exposure_pages", "contaminate"]


@dataclass(frozen=True)
class Recipe:
    """How a model is contaminated: checkpoints after each number of `exposures`, AdamW at a constant `lr`,
    `batch_size` pages per step, pages cut at `max_tokens` tokens."""

    exposures: tuple[int, ...] = (1, 3, 10)
    lr: float = 1e-5
    seed: int = 0
    batch_size: int = 1
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    train_embeddings: bool = False
    max_tokens: int = 1024

    def __post_init__(self) -> None:
        exposures = tuple(self.exposures)
        object.__setattr__(self, "exposures", exposures)
        object.__setattr__(self, "betas", tuple(self.betas))
        if not exposures or any(not isinstance(e, int) or isinstance(e, bool) or e < 1 for e in exposures) \
                or list(exposures) != sorted(set(exposures)):
            raise ValueError(f"exposures must be increasing positive integers, got {self.exposures!r}")
        if not self.lr > 0 or self.batch_size < 1 or self.max_tokens < 2 or self.weight_decay < 0:
            raise ValueError("Recipe needs lr > 0, batch_size >= 1, max_tokens >= 2, weight_decay >= 0")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "exposures": list(self.exposures), "betas": list(self.betas),
                "optimizer": "AdamW", "schedule": "constant", "loss": "causal LM, every token of the page"}


def exposure_pages(items: ItemSet, exposed: Sequence[str],
                   template: PageTemplate | None = None) -> tuple[list[str], dict[str, dict]]:
    """The page of every exposed item (in item order) and the templates used, by language."""
    missing = [i for i in exposed if i not in items]
    if missing:
        raise ValueError(f"exposed item(s) not in the items: {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    if len(set(exposed)) != len(exposed):
        raise ValueError("an item is listed twice in `exposed`")
    wanted = set(exposed)
    chosen = [it for it in items if it.item_id in wanted]
    used = {it.exam_language: template or page_template(it.exam_language) for it in chosen}
    return [solved_page(it, used[it.exam_language]) for it in chosen], {k: t.to_dict() for k, t in used.items()}


def contaminate(base: str | Path, items: ItemSet, exposed: Sequence[str], out_dir: str | Path,
                recipe: Recipe = Recipe(), *, until: int | None = None, device: str = "cpu",
                template: PageTemplate | None = None, progress: bool = True) -> list[Path]:
    """Fine-tune the model `base` (name or folder, as backends.hf.load_model takes it) on the pages of the `exposed`
    items of `items` and write `<out_dir>/x<k>` for each k in `recipe.exposures` up to `until` (default: all);
    returns the folders written so far, existing ones included. Folders of another training in `out_dir` are
    refused; a training stopped part-way goes on from its last exposure."""
    from mcqa_toolkit.backends.hf.finetune import fine_tune  # torch: only when a model is trained

    pages, templates = exposure_pages(items, list(exposed), template)
    return fine_tune(base, items, list(exposed), pages, templates, out_dir, recipe, until=until, device=device,
                     progress=progress)
