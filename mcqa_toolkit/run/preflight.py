"""Before any work: every combination of a params file checked as far as it can be without a model, so that
`mcqa run` (and `--dry-run`) refuses what cannot start with one line each, before a kernel starts or a run
folder is created.

Checked per job: the strategy builds (a name that is not predefined, a field out of range), the dataset loads
with its arguments and holds the job's language (Item.exam_language), the few-shot pool loads, and the run can
be planned: the shots its rule needs exist (e.g. `easiest` with k=4 needs four subjects with IRT parameters in
the exam version) and items are left to evaluate. Each dataset (and pool) is loaded once for all the jobs that
use it. What needs the model (a backend that cannot serve the method, a missing API key) is refused by the run
itself, before any request (run.dispatch.check_plan).
"""
from __future__ import annotations

import json
from typing import Any

from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.run.jobs import Job, load_items
from mcqa_toolkit.run.runner import plan_run

__all__ = ["preflight"]


def preflight(jobs: list[Job]) -> tuple[list[Job], list[tuple[Job, str]]]:
    """(the jobs that can start, [(job, one-line reason)] for those that cannot), in the given order."""
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

    ok, refused = [], []
    for job in jobs:
        try:
            strategy = job.build_strategy()
            pool = None
            if job.shot_pool is not None:
                try:
                    pool = items(job.shot_pool["name"], job.shot_pool.get("args") or {}, job.language)
                except (ValueError, FileNotFoundError, OSError, ImportError) as e:
                    raise ValueError(f"shot_pool: {e}") from None
            plan_run(items(job.dataset, job.dataset_args, job.language), strategy, job.dataset, shot_pool=pool,
                     limit=job.limit, combine=job.judge_combine)
            ok.append(job)
        except (ValueError, FileNotFoundError, OSError, ImportError) as e:
            refused.append((job, " ".join(f"{type(e).__name__}: {e}".split())))
    return ok, refused
