"""Batch mode for API backends: `mcqa run params.yaml --batch-submit`, later `--batch-fetch`.

Submit runs the job exactly as an online run would (run.recipe.run_job), but with its API backends collecting:
every request the cache lacks is recorded instead of sent (answers are placeholders, and the records they would
give are thrown away), then submitted through the backend's batch client (backends.batch.BatchClient, one interface
for every provider) with custom_id = the request-cache key. The batch state (ids, counts, status, failures) is kept
in the run folder (RunDir.batch_file). Fetch polls; when every batch of the run has ended with every request
answered, it stores the results in the request cache and runs the job normally, which now makes no request and
writes the records an online run would have written. A batch that failed (validation), was cancelled or expired, or
ended with failed requests is never ready: nothing runs online; the CLI prints one line per such batch with the
provider's reason, and a new `--batch-submit` resubmits exactly the requests without an answer (the cache has the
rest). Fetching is idempotent and resumable.
"""
from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

from mcqa_toolkit.backends import backend_entry
from mcqa_toolkit.backends.base import BatchBackend
from mcqa_toolkit.backends.batch import BatchClient
from mcqa_toolkit.run.recipe import BackendCache, run_job


def _entries(job: Any) -> list[dict[str, Any]]:
    """The complete entries of a job's backends: its model, then its judges (run.recipe.run_job's order)."""
    return [backend_entry(spec, device=job.device, dtype=job.dtype)
            for spec in [job.model_entry(), *(job.judges or [])]]


def collect_requests(job: Any, backends: BackendCache) -> tuple[Any, dict[str, tuple[str, dict[str, Any]]]]:
    """(the job's backend, the requests a run of `job` needs that its request cache does not hold yet): the
    recipe (run_job) run into a temporary folder while every API backend of the job (model and judges)
    collects instead of sending (backends.base.BatchBackend), so nothing is sent online. API backends are not
    renewed between runs (BackendCache), so run_job gets these very backends. Judges grade answers, so their requests
    exist only once the answers are known: after a fetch, a new submit collects them (when the judge is the job's own
    model; another judge model answers online when the run executes)."""
    run_backends = backends.for_run(_entries(job))
    backend = run_backends[0]
    if not (isinstance(backend, BatchBackend) and backend.capabilities.batch):  # (capabilities probes a server)
        raise ValueError(f"backend {backend.name!r} has no batch API with documented limits (batch mode: OpenAI and "
                         "servers with its Batch API, Anthropic, Gemini; vLLM: `vllm run-batch`, docs/backends.md)")
    with contextlib.ExitStack() as stack:
        collected = [stack.enter_context(b.collecting()) for b in {id(b): b for b in run_backends}.values()
                     if isinstance(b, BatchBackend)]
        with tempfile.TemporaryDirectory(prefix="mcqa_batch_") as tmp:
            run_job(dataclasses.replace(job, run_dir=Path(tmp)), backends, progress=False)
        return backend, dict(collected[0])


def submit(job: Any, backends: BackendCache) -> dict[str, Any]:
    """Collect and submit one job's missing requests; returns (and stores) the batch state."""
    backend, requests = collect_requests(job, backends)
    rd = job.run_dir
    rd.dir.mkdir(parents=True, exist_ok=True)
    entries = backend.batch_api().submit(requests, rd.dir) if requests else []
    state = {"submitted_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "n_requests": len(requests), "batches": entries,
             "note": "" if requests else "every request is already cached: nothing to submit"}
    rd.write_batch_state(state)
    return state


def _store(api: BatchClient, backend: Any, folder: Path, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Store an ended batch's answers in the request cache; the failures, one per submitted request without an
    answer (whatever the provider returned or left out), so that stored + failed == submitted. Answers are stored
    under the key the backend computes now from the submitted request (the custom_id itself for batches submitted
    by this version); a result whose custom_id was not submitted is ignored."""
    submitted = api.submitted(folder, entry)
    if len(submitted) != entry["n_requests"]:
        raise ValueError(f"{folder / entry['input_file']}: holds {len(submitted)} requests, but batch {entry['id']} "
                         f"was submitted with {entry['n_requests']}")
    ok, failed = api.results(entry)
    stored = 0
    for custom_id, response in ok.items():
        if custom_id in submitted:
            backend.request_cache.put(api.cache_key(*submitted[custom_id]), response)
            stored += 1
    missing = [c for c in submitted if c not in ok]
    why = entry.get("reason") or f"no result (batch {entry['status']})"
    failures = [{"custom_id": c, "batch": entry["id"], "error": failed.get(c) or why} for c in missing]
    entry.update(fetched=True, stored=stored, n_failed=len(failures))
    return failures


def fetch(job: Any, backends: BackendCache) -> dict[str, Any]:
    """Poll the job's batches and store the results of ended ones. state["ready"] is True only when every batch
    has ended and every submitted request has its answer (the job can then run from the cache, making no
    request); a failed, cancelled, expired or partly failed batch is never ready: its failures are listed in
    state["failed"] with the provider's reason, and a new `submit` resubmits exactly them."""
    rd = job.run_dir
    state = rd.batch_state()
    if not state:
        raise ValueError(f"{rd.dir}: no batch was submitted for this run; use --batch-submit first")
    backend = backends.for_run(_entries(job))[0]
    api: BatchClient | None = None
    for i, entry in enumerate(state["batches"]):
        if entry.get("fetched"):
            continue
        if api is None:
            if not isinstance(backend, BatchBackend):
                raise ValueError(f"{rd.dir}: backend {backend.name!r} has no batch API to fetch the batches with")
            api = backend.batch_api()
        entry = state["batches"][i] = api.poll(entry)
        if entry["ended"]:
            state["failed"] = state.get("failed", []) + _store(api, backend, rd.dir, entry)
    state["ready"] = all(e.get("fetched") for e in state["batches"]) and not state.get("failed")
    rd.write_batch_state(state)
    return state


def describe(name: str, state: dict[str, Any]) -> str:
    """What the CLI prints for one run: one line for the run, then one line per batch that ended with failures,
    with the provider's reason."""
    batches = ", ".join(f"{e['id']} {e['status']}" for e in state.get("batches", [])) or state.get("note", "")
    failed = len(state.get("failed", []))
    lines = [f"  {name}: {state.get('n_requests', 0)} requests; {batches}" + (f"; {failed} failed" if failed else "")]
    for e in state.get("batches", []):
        if not e.get("ended") and e.get("reason"):  # e.g. a `vllm run-batch` file waiting to be run
            lines.append(f"    {e['reason']}")
        if e.get("n_failed"):
            reasons = sorted({f["error"] for f in state.get("failed", []) if f.get("batch") == e["id"]})
            reason = e.get("reason") or "; ".join(reasons[:3]) + (f"; ... ({len(reasons)} reasons)" if len(reasons) > 3
                                                                   else "")
            lines.append(f"    batch {e['id']} {e['status']}: {e['n_failed']} of {e['n_requests']} requests failed "
                         f"({reason}); --batch-submit resubmits them")
    return "\n".join(lines)


__all__ = ["collect_requests", "submit", "fetch", "describe"]
