"""Loaders: one module per source format, each `path -> ItemSet`; `load(name, **kwargs)` dispatches by name.

Modules are imported lazily so that `load('medicina', ...)` does not import `datasets` (the HF library).
`load_items(name, args, language)` is what a run is given: the loaded set restricted to one exam version.
"""
from __future__ import annotations

import importlib
import inspect
import json
from typing import Any, Callable

from mcqa_toolkit.items import ItemSet

# name -> "module:function"
REGISTRY: dict[str, str] = {
    "demo": "mcqa_toolkit.datasets.demo:load_demo",
    "enem": "mcqa_toolkit.datasets.enem:load_enem",
    "enem_params": "mcqa_toolkit.enem.itens_prova:load_item_params",   # INEP's ITENS_PROVA as Items
    "enade": "mcqa_toolkit.datasets.enade:load_enade",
    "medicina": "mcqa_toolkit.datasets.medicina:load_medicina",
    "uned": "mcqa_toolkit.datasets.uned:load_uned",
    "course_exam": "mcqa_toolkit.datasets.course_exam:load_course_exam",
    "mmlu": "mcqa_toolkit.datasets.mmlu:load_mmlu",
    "oab": "mcqa_toolkit.datasets.oab:load_oab",
    "head_qa": "mcqa_toolkit.datasets.head_qa:load_head_qa",
    "exams": "mcqa_toolkit.datasets.exams:load_exams",
    "agieval": "mcqa_toolkit.datasets.agieval:load_agieval",
    "hub": "mcqa_toolkit.datasets.hub:load_hub",
}


def loader(name: str) -> Callable[..., Any]:
    """The loader function registered under `name`."""
    try:
        target = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {sorted(REGISTRY)}") from None
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def load(name: str, **kwargs: Any) -> ItemSet:
    """Load a dataset by registry name, e.g. `load('medicina', path='test.jsonl')`. Arguments the loader does not
    take (a misspelt key in a params file's `args`, a missing `path`) are one ValueError naming the dataset."""
    func = loader(name)
    try:
        inspect.signature(func).bind(**kwargs)
    except TypeError as e:
        raise ValueError(f"dataset {name!r}: {e} (it takes {list(inspect.signature(func).parameters)})") from None
    return func(**kwargs)


def args_from_json(text: str | None) -> dict[str, Any]:
    """A loader's keyword arguments as the command line gives them (`--dataset-args '{"languages": ["pt"]}'`): a
    JSON object, {} for none; anything else is a ValueError that quotes it."""
    try:
        args = json.loads(text) if text else {}
    except json.JSONDecodeError as e:
        raise ValueError(f"--dataset-args is not JSON ({e.msg}): {text!r}") from None
    if not isinstance(args, dict):
        raise ValueError(f"--dataset-args is not a JSON object of keyword arguments: {text!r}")
    return args


def load_items(name: str, args: dict[str, Any] | None = None, language: str | None = None) -> ItemSet:
    """The items a run is given: dataset `name` loaded with `args`, restricted to the exam version in `language`
    (`Item.exam_language`: a Portuguese ENEM keeps its English and Spanish questions; the demo is loaded in that
    language only); None keeps every item. A language the dataset lacks is a ValueError."""
    args = dict(args or {})
    if name == "demo" and language is not None:
        args.setdefault("language", language)
    items = load(name, **args)
    if language is not None:
        items = items.filter(exam_language=language)
        if not len(items):
            raise ValueError(f"dataset {name!r} has no items in language {language!r}")
    return items


__all__ = ["load", "load_items", "loader", "args_from_json", "REGISTRY"]
