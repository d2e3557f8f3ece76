"""RunIdentity: what determines a run's records, in one shape for every maker of run folders (`mcqa run` and
run_job, run() from Python, imports of another tool's results), and the identity an older folder recorded.

Two runs of equal identity write the same records (records.equality): a run folder holding a run of another
identity is refused, naming the fields that differ (records.state), and a killed run resumes only into a folder of
its own identity. The fields:

    model                "<backend kind>:<model name>" as asked: hf:gemma-3-270m, openai:gpt-4o-mini (an import:
                         "<tool>:<model>")
    dataset              the dataset's registry name ("" for items given by hand to run())
    dataset_fingerprint  the administered items (ItemSet.fingerprint: every field of every item, so other loader
                         arguments, another exam version, a `limit` or an edited file give another one)
    strategy_hash        Strategy.hash: method, shots and their rule, shuffles, seed, prompt style... (an import:
                         the tool's settings)
    shots                the few-shot examples shown (their items' fingerprint; "" without shots)
    judges               the judge models of short answers, as `model`; judge_combine how their scores combine
    source               an import's files (sha256 of their names and contents); "" for a run made here

Where a run runs (device, dtype, a Ray pool, batch mode) and whether Min-K% is measured are not identity: they
change no record beyond the float rounding the equality rule allows. `hash` keys an identity in one string
(run.json and summary.json record it beside the fields).

Folders written before this shape (their run.json has a `job` of notebook parameters, an `import` block, or only
run()'s provenance) are read into it by `recorded_identity`; the one field they never recorded, `shots`, is None
there and not compared (such a folder resumes without its few-shot examples checked), as are the judges of a
folder run() wrote (it recorded the judges' weights paths, not their names).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RunIdentity", "recorded_identity", "model_name", "spec_name", "files_hash", "shots_fingerprint"]


@dataclass(frozen=True)
class RunIdentity:
    """What determines a run's records (see the module docstring)."""

    model: str
    dataset: str
    dataset_fingerprint: str
    strategy_hash: str
    shots: str | None = ""
    judges: tuple[str, ...] | None = ()
    judge_combine: str | None = ""
    source: str = ""

    def __post_init__(self) -> None:
        if self.judges is not None:
            object.__setattr__(self, "judges", tuple(self.judges))
            if not self.judges:
                object.__setattr__(self, "judge_combine", "")

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "judges": None if self.judges is None else list(self.judges)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: Any = "identity") -> RunIdentity:
        """The identity a run.json recorded; one ValueError naming `where` for anything else."""
        names = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data, Mapping) or set(data) - names or not {"model", "dataset"} <= set(data):
            raise ValueError(f"{where}: not a run identity (expected the fields {sorted(names)})")
        fields: dict[str, Any] = {k: (tuple(v) if k == "judges" and v is not None else v) for k, v in data.items()}
        return cls(**fields)

    @property
    def hash(self) -> str:
        """sha256[:16] of the fields as canonical JSON."""
        text = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def differences(self, wanted: RunIdentity) -> list[str]:
        """'<field> <recorded> (this run: <wanted>)' for each field that differs; a field this identity did not
        record (None: a folder older than the field) is not compared."""
        out = []
        for f in dataclasses.fields(self):
            have, want = getattr(self, f.name), getattr(wanted, f.name)
            if have is not None and have != want:
                out.append(f"{f.name} {_short(have)} (this run: {_short(want)})")
        return out


def _short(value: Any) -> str:
    text = repr(list(value) if isinstance(value, tuple) else value)
    return text if len(text) <= 120 else text[:117] + "..."


def model_name(kind: Any, model: Any) -> str:
    """The identity's model string: '<backend kind>:<model name>'."""
    return f"{kind or 'hf'}:{model}"


def spec_name(spec: Any) -> str:
    """model_name of a params-file model entry: a name/path (a local transformers model) or {backend, model}."""
    if isinstance(spec, Mapping):
        return model_name(spec.get("backend"), spec.get("model"))
    return model_name("hf", spec)


def files_hash(files: Iterable[Mapping[str, Any]]) -> str:
    """An import's `source`: sha256[:16] of its files' (name, sha256) list."""
    text = json.dumps([[f["name"], f["sha256"]] for f in files])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def shots_fingerprint(shots: Mapping[str, Iterable[tuple[Any, Any]]]) -> str:
    """The identity's `shots`: sha256 of which examples each evaluated item shows, in which option order, and of
    every distinct example item (Item.to_dict); "" when the run shows none. `shots` maps an evaluated item to its
    [(Item, permutation)] examples (run.runner.plan_shots)."""
    shown = {key: [[it.item_id, list(perm)] for it, perm in examples] for key, examples in shots.items()}
    items = {it.item_id: it for examples in shots.values() for it, _ in examples}
    if not items:
        return ""
    h = hashlib.sha256(json.dumps(shown, sort_keys=True).encode())
    for key in sorted(items):
        h.update(json.dumps(items[key].to_dict(), sort_keys=True, default=str, ensure_ascii=False).encode())
    return h.hexdigest()


def recorded_identity(info: Mapping[str, Any], where: Any = "run.json") -> RunIdentity:
    """The identity a run folder's run.json records: its `identity` block, or, for a folder written before it,
    the same fields read from what that version recorded (module docstring)."""
    if "identity" in info:
        return RunIdentity.from_dict(info["identity"], where)
    common: dict[str, Any] = {"dataset_fingerprint": info.get("dataset_fingerprint"),
                              "strategy_hash": info.get("strategy_hash"), "shots": None}
    if isinstance(info.get("import"), Mapping):        # interop before RunIdentity
        imp = info["import"]
        return RunIdentity(model=model_name(imp.get("source"), imp.get("model")), dataset=imp.get("dataset") or "",
                           **{**common, "dataset_fingerprint": imp.get("items_fingerprint"), "shots": ""},
                           source=files_hash(imp.get("files") or []))
    if isinstance(info.get("job"), Mapping):           # `mcqa run` / run_job before RunIdentity: notebook names
        job = info["job"]
        judges = tuple(spec_name(j) for j in job.get("JUDGES") or ())
        return RunIdentity(model=model_name(job.get("BACKEND_KIND"), job.get("MODEL")), dataset=job.get("DATASET"),
                           **common, judges=judges, judge_combine=job.get("JUDGE_COMBINE") or "")
    model = info.get("model") or {}                    # run() from Python before RunIdentity
    judged = bool(info.get("judges"))
    return RunIdentity(model=model_name(model.get("backend"), model.get("model")), dataset=info.get("dataset") or "",
                       **common, judges=None if judged else (), judge_combine=None if judged else "")
