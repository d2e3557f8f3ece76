"""Another tool's per-question results -> a normal run folder (records, items, provenance, summary).

The tool readers (interop.lm_eval, interop.inspect_log, interop.helm) turn their files into `Response`s and a
`Source`; `write_run` matches every question to our items (interop.match), makes one record per response with
`records.factory.make_record` (so every derived column is derived as for our own runs), and writes the folder as
run.runner does, opened through records.state.open_for_write with its identity (records.identity: the tool and
model, the items matched against, the tool's settings, the files' sha256): run.json (what is imported), records,
provenance naming
the tool, its version and the sha256 of every file read, items.jsonl (the items the records are about, so the
notebooks, the inspector and the HTML report need no loader arguments), and summary.json. A folder already
holding the same import is returned as it is; one holding anything else is refused.

Records written by our own exporters carry their full record in the file (the `mcqa` payload,
interop.payload); those are restored exactly (round trip), after checking the tool-visible scores agree.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit import __version__
from mcqa_toolkit.interop.match import ItemMatcher, SourceQuestion, source_item
from mcqa_toolkit.interop.payload import record_from_payload
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.measure.summary import summarize_run
from mcqa_toolkit.records.factory import make_record, run_fields
from mcqa_toolkit.records.identity import RunIdentity, files_hash, model_name
from mcqa_toolkit.records.state import RunState, open_for_write
from mcqa_toolkit.records.store import RunDir

__all__ = ["Source", "Response", "ImportResult", "write_run", "sha256_file"]


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Source:
    """What produced the files: tool name and version, the files read, the model, the task, and how the
    answers were read (method / normalization as in scoring.methods), shots and seed when the tool says."""

    tool: str
    version: str
    files: tuple[Path, ...]
    model: str
    task: str
    method: str
    normalization: str = ""
    shots: int = 0
    seed: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Response:
    """One answered question. `scores` per SHOWN option (higher = preferred; None: the tool kept none),
    `choice` the shown position chosen (-1: none read), `status` only 'refused' / 'error' when the tool says
    so. `payload`: our own record, when the file was written by our exporter."""

    question: SourceQuestion
    scores: Sequence[float] | None = None
    choice: int = -1
    status: str | None = None
    generated_text: str = ""
    extraction_rule: str = ""
    n_prompt_tokens: int = 0
    seconds: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)
    payload: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ImportResult:
    """The imported run: folder, records, state the folder was in, and the unmatched questions
    (source key, the item id given to it, why it matched none of ours)."""

    run_dir: RunDir
    records: pd.DataFrame
    state: RunState
    unmatched: pd.DataFrame

    @property
    def provenance(self) -> dict[str, Any]:
        return self.run_dir.provenance()


def _strategy_hash(source: Source) -> str:
    key = json.dumps({"tool": source.tool, "task": source.task, "method": source.method,
                      "normalization": source.normalization, "shots": source.shots}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _record(resp: Response, match_item: Item, perm: Sequence[int], run: dict[str, Any], shuffle: int) -> dict:
    n = match_item.n_options
    scores = None
    if resp.scores is not None:
        scores = np.full(n, np.nan)
        scores[list(perm)] = np.asarray(resp.scores, dtype=float)
    choice = perm[resp.choice] if resp.choice >= 0 else -1
    return make_record(match_item, run, shuffle=shuffle, permutation=perm, choice=choice, option_scores=scores,
                       status=resp.status, extraction_rule=resp.extraction_rule, generated_text=resp.generated_text,
                       n_prompt_tokens=resp.n_prompt_tokens, seconds=resp.seconds, extra=dict(resp.extra))


def write_run(source: Source, responses: Sequence[Response], run_dir: str | Path, items: ItemSet | None = None,
              dataset: str | None = None, model: str | None = None) -> ImportResult:
    """Write (or return, when already there) the run folder of an import; see the module docstring.
    `items`: our items to match against (None: every question keeps the source's own identity); `dataset`:
    the records' dataset name (default: the task's name); `model`: the records' model name (default: what the
    tool recorded, e.g. lm-eval's `pretrained` path)."""
    if not responses:
        raise ValueError(f"{', '.join(map(str, source.files))}: no question to import")
    folder = RunDir(run_dir)
    files = [{"name": Path(f).name, "sha256": sha256_file(f)} for f in source.files]
    matcher = ItemMatcher(items)
    dataset = dataset or source.task
    if model:
        source = replace(source, model=model)
    identity = RunIdentity(model_name(source.tool, source.model), dataset, matcher.items.fingerprint(),
                           _strategy_hash(source), shots="", source=files_hash(files))
    with open_for_write(folder, identity) as opened:  # state, lock, state (records.state)
        if opened.state is RunState.COMPLETE:
            return ImportResult(folder, folder.load(), opened.state, _unmatched_frame(folder.provenance()))
        run = run_fields(run_id=folder.name, model=source.model, dataset=dataset,
                         strategy=f"{source.tool}:{source.task}", strategy_hash=_strategy_hash(source),
                         method=source.method, normalization=source.normalization, shots=source.shots,
                         seed=source.seed)
        records: list[dict[str, Any]] = []
        used: dict[str, Item] = {}
        unmatched: list[dict[str, Any]] = []
        how: dict[str, int] = {}
        occurrences: dict[str, int] = {}
        for resp in responses:
            if resp.payload is not None:
                item, rec = record_from_payload(resp.payload, {**run, "run_id": folder.name}, resp)
            else:
                m = matcher.match(resp.question)
                if isinstance(m, str):
                    item = source_item(resp.question, source.tool, source.task)
                    perm: Sequence[int] = range(item.n_options)
                    unmatched.append({"source_key": resp.question.key, "item_id": item.item_id, "reason": m})
                else:
                    item, perm = m.item, m.permutation
                    how[m.how] = how.get(m.how, 0) + 1
                shuffle = occurrences.get(item.item_id, 0)
                occurrences[item.item_id] = shuffle + 1
                rec = _record(resp, item, list(perm), run, shuffle)
            if item.item_id in used and used[item.item_id] != item:
                raise ValueError(f"{resp.question.key}: item {item.item_id!r} appears with different contents")
            used[item.item_id] = item
            records.append(rec)
        datasets = {r["dataset"] for r in records}   # records restored from our payload keep their own dataset
        dataset = datasets.pop() if len(datasets) == 1 else dataset
        keys = [(r["item_id"], r["shuffle"]) for r in records]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise ValueError(f"{source.files[0]}: item {dup[0]!r} shuffle {dup[1]} appears twice")
        prov = {"mcqa_toolkit": __version__,
                "imported_from": {"tool": source.tool, "version": source.version, "files": files, "task": source.task,
                                  "details": dict(source.details)},
                "model": {"model": source.model, "source": f"{source.tool}:{source.model}"},
                "strategy": {"name": run["strategy"], "method": source.method, "normalization": source.normalization,
                             "shots": source.shots}, "strategy_hash": run["strategy_hash"], "dataset": dataset,
                "dataset_fingerprint": ItemSet(used.values()).fingerprint(), "n_items": len(used), "seed": source.seed,
                "items": {"matched": sum(how.values()), "matched_by": how, "unmatched": unmatched}}
        prov = opened.start(prov)
        if folder.jsonl.exists():  # a killed import left part of its records: an import is redone whole
            folder.jsonl.unlink()
        folder.append(records)
        folder.write_items(used.values())
        frame = folder.finalize(prov)
        opened.complete(summarize_run(frame))   # summary.json: the import is a complete run
        return ImportResult(folder, frame, opened.state, _unmatched_frame(prov))


def _unmatched_frame(prov: Mapping[str, Any]) -> pd.DataFrame:
    rows = prov.get("items", {}).get("unmatched", [])
    return pd.DataFrame(rows, columns=["source_key", "item_id", "reason"])
