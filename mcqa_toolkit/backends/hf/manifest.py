"""The manifest each contaminated model folder carries (`contamination.json`; the folders: backends.hf.finetune,
the recipe: contamination.fine_tuning).

The manifest says what the model saw and how: the exposed items (ids and parallel ids, so a translation of an
exposed question can be labelled), the items of the set that were held out, the exposures, the recipe, the page
templates, the base model (name, GGUF sha256 when it came from one, and the sha256 of its weights as loaded), the
sha256 of the new weights, the training loss of each exposure (the mean over its pages) and the seconds of training
of the call that wrote the folder (training resumed across calls counts its last call only). `read_manifest` is
what an audit reads to know which items a model was trained on.
Weight hashes are over the tensors (name, dtype, shape, bytes), so they do not depend on the file format.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

__all__ = ["MANIFEST", "FORMAT", "state_sha256", "texts_sha256", "make_manifest", "write_manifest",
           "read_manifest", "check_same_training"]

MANIFEST = "contamination.json"
FORMAT = "mcqa_toolkit.contamination/1"


def state_sha256(model: Any) -> str:
    """sha256 over a model's tensors (sorted names, dtype, shape, bytes): equal weights <-> equal hash."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.view(-1).view(dtype=torch.uint8).numpy().tobytes())
    return h.hexdigest()


def texts_sha256(texts: Iterable[str]) -> str:
    return hashlib.sha256("\x1e".join(texts).encode("utf-8")).hexdigest()


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for pkg in ("mcqa_toolkit", "torch", "transformers"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def make_manifest(lm: Any, base: Any, items: Any, key: dict[str, Any], exposures: int, losses: list[float],
                  templates: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The manifest of the model trained for `exposures` exposures (`key`: the training's identity)."""
    exposed = set(key["exposed"])
    n_trained = sum(p.numel() for p in lm.model.parameters() if p.requires_grad)
    return {
        "format": FORMAT,
        "exposures": exposures,
        "base_model": {"model": str(base), "gguf_sha256": lm.weights_sha256 or None,
                       "weights_sha256": key["base_state_sha256"]},
        "weights_sha256": state_sha256(lm.model),
        "recipe": key["recipe"],
        "parameters": {"trained": int(n_trained), "total": int(sum(p.numel() for p in lm.model.parameters()))},
        "items": {"dataset": items.name, "fingerprint": items.fingerprint(), "exposed": list(key["exposed"]),
                  "exposed_parallel_ids": [it.parallel_id for it in items if it.item_id in exposed],
                  "held_out": [it.item_id for it in items if it.item_id not in exposed]},
        "templates": templates,
        "pages_sha256": key["pages_sha256"],
        "train_loss": [round(x, 6) for x in losses[:exposures]],
        "training": key,
        "packages": _versions(),
        "seconds": round(seconds, 1),
    }


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    path = Path(folder) / MANIFEST
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of a contaminated model folder (ValueError naming the file when it is missing or not one)."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        raise ValueError(f"{path}: no contamination manifest (not a folder written by `mcqa contaminate`)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a JSON manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: field 'format' is not {FORMAT!r}")
    for field in ("exposures", "items", "recipe", "training"):
        if field not in manifest:
            raise ValueError(f"{path}: field {field!r} missing")
    return manifest


def check_same_training(manifest: dict[str, Any], key: dict[str, Any], where: Path) -> None:
    """ValueError naming `where` and the first field that differs when it holds another training's output."""
    theirs = manifest["training"]
    for field in ("base_state_sha256", "recipe", "exposed", "pages_sha256"):
        if theirs.get(field) != key[field]:
            raise ValueError(f"{where}: made by another training ({field} differs); use another output folder")
