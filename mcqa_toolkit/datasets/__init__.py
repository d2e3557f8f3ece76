"""Loaders: one module per source format, each `path -> ItemSet`; `load(name, **kwargs)` dispatches by name.

Modules are imported lazily so that `load('medicina', ...)` does not import `datasets` (the HF library).
`load_items(name, args, language)` is what a run is given: the loaded set restricted to one exam version.
"""
from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

from mcqa_toolkit.items import ItemSet

Loader = Callable[..., ItemSet]


def _demo() -> Loader:
    from mcqa_toolkit.datasets.demo import load_demo
    return load_demo


def _enem() -> Loader:
    from mcqa_toolkit.datasets.enem import load_enem
    return load_enem


def _enem_params() -> Loader:  # INEP's ITENS_PROVA as Items
    from mcqa_toolkit.enem.itens_prova import load_item_params
    return load_item_params


def _enade() -> Loader:
    from mcqa_toolkit.datasets.enade import load_enade
    return load_enade


def _medicina() -> Loader:
    from mcqa_toolkit.datasets.medicina import load_medicina
    return load_medicina


def _uned() -> Loader:
    from mcqa_toolkit.datasets.uned import load_uned
    return load_uned


def _course_exam() -> Loader:
    from mcqa_toolkit.datasets.course_exam import load_course_exam
    return load_course_exam


def _mmlu() -> Loader:
    from mcqa_toolkit.datasets.mmlu import load_mmlu
    return load_mmlu


def _oab() -> Loader:
    from mcqa_toolkit.datasets.oab import load_oab
    return load_oab


def _head_qa() -> Loader:
    from mcqa_toolkit.datasets.head_qa import load_head_qa
    return load_head_qa


def _exams() -> Loader:
    from mcqa_toolkit.datasets.exams import load_exams
    return load_exams


def _agieval() -> Loader:
    from mcqa_toolkit.datasets.agieval import load_agieval
    return load_agieval


def _hub() -> Loader:
    from mcqa_toolkit.datasets.hub import load_hub
    return load_hub


# name -> a function that imports the loader when that dataset is asked for (a loader's module may import
# heavy libraries: `datasets`, pyarrow)
REGISTRY: dict[str, Callable[[], Loader]] = {
    "demo": _demo,
    "enem": _enem,
    "enem_params": _enem_params,
    "enade": _enade,
    "medicina": _medicina,
    "uned": _uned,
    "course_exam": _course_exam,
    "mmlu": _mmlu,
    "oab": _oab,
    "head_qa": _head_qa,
    "exams": _exams,
    "agieval": _agieval,
    "hub": _hub,
}


def loader(name: str) -> Loader:
    """The loader function registered under `name`."""
    try:
        target = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {sorted(REGISTRY)}") from None
    return target()


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
