"""What the analysis notebooks share: loading the runs of one dataset with its items, and recording the
notebook's headline numbers (printed, and written as `<LATEX_DIR>/<notebook>_headline.json` where the
regression tests and the README read them)."""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import ItemSet, item_from_dict
from mcqa_toolkit.measure.abilities import GROUP_BY
from mcqa_toolkit.records.results import load_results, run_dirs


@dataclass(frozen=True)
class Runs:
    """Every complete run of one dataset: its records and its items."""

    records: pd.DataFrame
    items: ItemSet

    def overview(self) -> pd.DataFrame:
        """Shuffles per model x strategy (rows) and language (columns)."""
        return self.records.groupby(["model", "strategy", "language"])["shuffle"].nunique().unstack("language")

    def describe(self) -> str:
        r = self.records
        return (f"{len(r):,} records from {r['run_id'].nunique()} runs; {len(self.items)} items in "
                f"{self.items.name!r}")


def stored_items(results_dir: str | Path, dataset: str) -> ItemSet | None:
    """The items the complete runs of `dataset` under `results_dir` carry in their items.jsonl (imported runs,
    interop), merged by item_id; None unless every such run carries them."""
    runs = [r for r in run_dirs(results_dir) if r.is_complete() and r.provenance().get("dataset") == dataset]
    if not runs or not all(r.items_file.exists() for r in runs):
        return None
    merged = {d["item_id"]: d for r in runs for d in r.read_items()}
    return ItemSet([item_from_dict(d) for d in merged.values()], dataset)


def dataset_items(results_dir: str | Path, dataset: str, dataset_args: dict[str, Any] | None = None) -> ItemSet:
    """The items of `dataset`: the loader's with `dataset_args`, or, without them, the items its runs under
    `results_dir` carry when every run carries them (imported runs need no loader)."""
    carried = None if dataset_args or not Path(results_dir).is_dir() else stored_items(results_dir, dataset)
    return carried if carried is not None else load(dataset, **(dataset_args or {}))


def load_runs(results_dir: str | Path, dataset: str, dataset_args: dict[str, Any] | None = None) -> Runs:
    """The complete runs of `dataset` under `results_dir` (any depth) and the dataset's items: the loader's
    (`load(dataset, **dataset_args)`), or, without loader arguments, the items the runs carry when every run
    carries them (imported runs need no loader)."""
    records = load_results(results_dir)
    records = records[records["dataset"] == dataset].reset_index(drop=True)
    if records.empty:
        raise FileNotFoundError(f"no complete run of dataset {dataset!r} under {results_dir}")
    return Runs(records, dataset_items(results_dir, dataset, dataset_args))


def output_dir(path: str | Path | None, kind: str) -> Path:
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
