"""Before any work: every combination of a params file checked as far as it can be without a model, so that
`mcqa run` (and `--dry-run`) refuses what cannot start with one line each, before a kernel starts or a run
folder is created.

Checked per job: the strategy builds (a name that is not predefined, a field out of range), the dataset loads
with its arguments and holds the job's language (Item.exam_language), the few-shot pool loads, and the run can
be planned: the shots its rule needs exist (e.g. `easiest` with k=4 needs four subjects with IRT parameters in
the exam version) and items are left to evaluate. Each dataset (and pool) is loaded once for all the jobs that
use it. The checks are the run's own planning (run.recipe.prepare), which also gives each job's identity.
What needs the model (a backend that cannot serve the method, a missing API key) is refused by the run
itself, before any request (run.dispatch.check_plan).
"""
from __future__ import annotations

import json
from typing import Any

from mcqa_toolkit.datasets import load_items
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.records.identity import RunIdentity
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import prepare

__all__ = ["preflight"]


def preflight(jobs: list[Job]) -> tuple[list[Job], list[tuple[Job, str]], dict[str, RunIdentity]]:
    """(the jobs that can start, [(job, one-line reason)] for those that cannot), in the given order, and the
    identity of each job that can (by run folder name: what `mcqa run --dry-run` compares folders with)."""
    loaded: dict[str, ItemSet | Exception] = {}

    def items(dataset: str, args: dict[str, Any], language: str | None) -> ItemSet:
        key = json.dumps([dataset, args, language], sort_keys=True, default=str)
        if key not in loaded:
            try:
                loaded[key] = load_items(dataset, args, language)
            except (ValueError, FileNotFoundError, OSError, ImportError) as e:
                loaded[key] = e
        got = loaded[key]
        if isinstance(got, Exception):
            raise got
        return got

    ok, refused, identities = [], [], {}
    for job in jobs:
        try:
            identities[job.run_dir.name] = prepare(job, items).identity
            ok.append(job)
        except (ValueError, FileNotFoundError, OSError, ImportError) as e:
            refused.append((job, " ".join(f"{type(e).__name__}: {e}".split())))
    return ok, refused, identities
