"""What the analysis notebooks share: the runs of one dataset with their items, read from the run folders alone
(each carries the items it was given, records.store), and recording the notebook's headline numbers (printed, and
written as `<LATEX_DIR>/<notebook>_headline.json` where the regression tests and the README read them)."""
from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.measure.abilities import GROUP_BY
from mcqa_toolkit.records.dataset import run_dataset
from mcqa_toolkit.records.results import complete_runs
from mcqa_toolkit.records.store import RunDir

REPORTED_APART = ("course_exam",)   # datasets with a notebook of their own (16_course_exam), not the default one


@dataclass(frozen=True)
class Runs:
    """Every complete run of one dataset: its name, its records and its items."""

    records: pd.DataFrame
    items: ItemSet
    dataset: str = ""

    def overview(self) -> pd.DataFrame:
        """Shuffles per model x strategy (rows) and language (columns)."""
        return self.records.groupby(["model", "strategy", "language"])["shuffle"].nunique().unstack("language")

    def describe(self) -> str:
        r = self.records
        return (f"{len(r):,} records from {r['run_id'].nunique()} runs; {len(self.items)} items in "
                f"{self.items.name!r}")


def runs_dataset(runs_dir: str | Path, dataset: str | None = None) -> str:
    """`dataset`, or the one dataset of the complete runs under `runs_dir` (not counting those reported apart,
    REPORTED_APART, when others are there); several is a ValueError naming them."""
    if dataset is not None:
        return dataset
    found = sorted({run_dataset(r).name for r in complete_runs(runs_dir)})
    main = [d for d in found if d not in REPORTED_APART] or found
    if len(main) != 1:
        raise ValueError(f"the runs under {runs_dir} are of " + (f"the datasets {main}: choose one (mcqa report "
                         "--dataset NAME, or DATASET in a notebook)" if main else "no dataset: no complete run"))
    return main[0]


def merged_items(runs: Sequence[RunDir], name: str = "") -> ItemSet:
    """The items of `runs`, merged by item_id: the items each was given (items.jsonl) or, for folders without
    items.jsonl, their dataset loaded again with the arguments their run.json records, once
    for all of them, kept to their exam versions (in the loader's order, as reports read it then). An item two runs
    hold differently (e.g. an exam file edited between them) is a ValueError naming both folders: such runs are
    reported apart."""
    legacy: dict[str, list[Any]] = {}   # (name, args) of folders without items.jsonl -> their exam versions
    for rd in runs:
        if not rd.items_file.exists():
            ds = run_dataset(rd)
            legacy.setdefault(json.dumps([ds.name, ds.args], sort_keys=True, default=str), []).append(ds.language)
    merged: dict[str, Any] = {}
    where: dict[str, Path] = {}
    for rd in runs:
        items: Iterable[Item] | None = rd.items()
        if items is None:
            ds = run_dataset(rd)
            languages = legacy.pop(json.dumps([ds.name, ds.args], sort_keys=True, default=str), None)
            if languages is None:   # its dataset was loaded for an earlier folder
                continue
            items = [it for it in load(ds.name, **ds.args) if None in languages or it.exam_language in languages]
        for it in items:
            if it.item_id not in merged:
                merged[it.item_id], where[it.item_id] = it, rd.dir
            elif merged[it.item_id] != it:
                raise ValueError(f"item {it.item_id!r} differs between the runs {where[it.item_id]} and {rd.dir}; "
                                 "report them apart (one runs folder each)")
    return ItemSet(list(merged.values()), name)


def dataset_runs(runs_dir: str | Path, dataset: str) -> list[RunDir]:
    """The complete runs of `dataset` under `runs_dir` (any depth)."""
    return [r for r in complete_runs(runs_dir) if run_dataset(r).name == dataset]


def dataset_items(runs_dir: str | Path, dataset: str | None = None,
                  dataset_args: dict[str, Any] | None = None) -> ItemSet:
    """The items of `dataset`'s runs under `runs_dir` (merged_items); with no run there (the question inspector
    exploring an exam before any run), the loader's items with `dataset_args`."""
    runs = dataset_runs(runs_dir, runs_dataset(runs_dir, dataset)) if complete_runs(runs_dir) else []
    if runs:
        return merged_items(runs, run_dataset(runs[0]).name)
    if dataset is None:
        raise ValueError(f"no complete run under {runs_dir}: name the dataset to explore (DATASET)")
    return load(dataset, **(dataset_args or {}))


def load_runs(runs_dir: str | Path, dataset: str | None = None) -> Runs:
    """The complete runs of `dataset` (default: the runs' one dataset, runs_dataset) under `runs_dir` (any
    depth), with their records and items, from the run folders alone."""
    name = runs_dataset(runs_dir, dataset)
    runs = dataset_runs(runs_dir, name)
    if not runs:
        raise FileNotFoundError(f"no complete run of dataset {name!r} under {runs_dir}")
    records = pd.concat([r.load() for r in runs], ignore_index=True)
    return Runs(records, merged_items(runs, name), name)


def writable_dir(path: str | Path | None, kind: str) -> Path:
    """`path`, or a new temporary folder when None (a notebook re-executed by tests never writes into the
    project); `mcqa report` always passes real folders."""
    return Path(path) if path is not None else Path(tempfile.mkdtemp(prefix=f"mcqa_{kind}_"))


def as_headline(values: pd.DataFrame | pd.Series, keys: Sequence[str] = GROUP_BY, value: str = "",
                digits: int | None = 4) -> dict[str, float | None]:
    """A notebook's headline numbers as JSON-ready {"key / key": number}: a frame's `value` column indexed by
    `keys`, or a Series by its own index; NaN -> None; rounded to `digits` (None keeps p-values exact)."""
    series = values.set_index(list(keys))[value] if isinstance(values, pd.DataFrame) else values
    out: dict[str, float | None] = {}
    for key, v in series.items():
        name = " / ".join(map(str, key if isinstance(key, tuple) else (key,)))
        out[name] = None if pd.isna(v) else float(v) if digits is None else round(float(v), digits)
    return out


def write_headline(latex_dir: str | Path, notebook: str, headline: dict[str, Any]) -> str:
    """Write `<latex_dir>/<notebook>_headline.json` and return the JSON text (the notebook prints it)."""
    text = json.dumps(headline, indent=2)
    path = Path(latex_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{notebook}_headline.json").write_text(text)
    return text
