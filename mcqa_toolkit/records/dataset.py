"""The dataset a run folder says it was given: its registry name, the loader's arguments, the exam version it kept
and the administered items' fingerprint, as run.json records them (and, for a folder written before runs carried
their items, as its `job` of notebook parameters did). With items.jsonl (RunDir.items) a folder is reported from
itself alone; for an older folder without it, this is what a reader loads again (report.headline.merged_items)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcqa_toolkit.records.store import RunDir

__all__ = ["RunDataset", "run_dataset"]


@dataclass(frozen=True)
class RunDataset:
    """name: the dataset's registry name ("" for items given by hand); args: the loader's keyword arguments ({}
    when none or when the items were given); language: the exam version kept (None: every item); fingerprint:
    ItemSet.fingerprint of the administered items."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    language: str | None = None
    fingerprint: str = ""


def run_dataset(run_dir: RunDir) -> RunDataset:
    """What the folder records of its run's dataset (RunDir.described; an empty RunDataset when it records none)."""
    info: Mapping[str, Any] = run_dir.described()
    job = info.get("job")
    if not isinstance(job, Mapping):
        job = {}
    args = info.get("dataset_args", job.get("DATASET_ARGS")) or {}
    language = info["language"] if "language" in info else job.get("LANGUAGE")
    return RunDataset(str(info.get("dataset") or ""), dict(args), language, str(info.get("dataset_fingerprint") or ""))
