"""Import and export: lm-evaluation-harness, inspect_ai, HELM, Every Eval Ever.

    from mcqa_toolkit.interop import import_run, export_run
    res = import_run("lm-eval", "lm_eval_out/", "outputs/gemma__enem__lm-eval", items=load("enem", path=...))
    res.records, res.unmatched                       # a normal run folder; questions that matched none of ours
    export_run("inspect", "outputs/gemma__enem__lm-eval", "logs/")   # an .eval log `inspect view` shows

Every import becomes a normal run folder (interop.runfolder), so the analysis notebooks, the inspector and the
HTML report read it like our own runs. inspect_ai is imported only by its module (interop.inspect_log).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcqa_toolkit.interop.runfolder import ImportResult, Response, Source, write_run
from mcqa_toolkit.items import ItemSet, item_from_dict
from mcqa_toolkit.records.store import RunDir

if TYPE_CHECKING:  # pandas is imported when a folder is imported, not with the package
    import pandas as pd

__all__ = ["IMPORTERS", "EXPORTERS", "import_run", "import_folder", "export_run", "items_by_id", "ImportResult",
           "Response", "Source",
           "write_run"]


def _read_lm_eval() -> Callable[..., Any]:
    from mcqa_toolkit.interop.lm_eval import read_lm_eval
    return read_lm_eval


def _read_inspect() -> Callable[..., Any]:
    from mcqa_toolkit.interop.inspect_log import read_inspect
    return read_inspect


def _read_helm() -> Callable[..., Any]:
    from mcqa_toolkit.interop.helm import read_helm
    return read_helm


def _write_lm_eval() -> Callable[..., Any]:
    from mcqa_toolkit.interop.lm_eval import export_lm_eval
    return export_lm_eval


def _write_inspect() -> Callable[..., Any]:
    from mcqa_toolkit.interop.inspect_log import export_inspect
    return export_inspect


def _write_eee() -> Callable[..., Any]:
    from mcqa_toolkit.interop.every_eval_ever import export_eee
    return export_eee


# tool -> a function importing its reader, which returns (Source, [Response]); imported when that tool is asked for
IMPORTERS: dict[str, Callable[[], Callable[..., Any]]] = {
    "lm-eval": _read_lm_eval,
    "inspect": _read_inspect,
    "helm": _read_helm,
}
# format -> a function importing its writer, which takes (records, items by id, out_dir, name)
EXPORTERS: dict[str, Callable[[], Callable[..., Any]]] = {
    "lm-eval": _write_lm_eval,
    "inspect": _write_inspect,
    "eee": _write_eee,
}


def _resolve(table: dict[str, Callable[[], Callable[..., Any]]], name: str, what: str) -> Callable[..., Any]:
    if name not in table:
        raise ValueError(f"unknown {what} {name!r}; known: {sorted(table)}")
    return table[name]()


def import_run(tool: str, path: str | Path, run_dir: str | Path, items: ItemSet | None = None,
               dataset: str | None = None, model: str | None = None, **reader_kw: Any) -> ImportResult:
    """Read `tool`'s results at `path` and write them as the run folder `run_dir` (see interop.runfolder).
    items: our items to match the questions against (human IRT parameters attach to matched ones);
    model: the records' model name (default: the tool's, e.g. lm-eval's `pretrained` path); reader_kw: the
    reader's options (e.g. normalization="char" for lm-eval's acc_norm)."""
    source, responses = _resolve(IMPORTERS, tool, "tool")(path, **reader_kw)
    return write_run(source, responses, run_dir, items, dataset, model)


def import_folder(folder: str | Path, runs_dir: str | Path, items: ItemSet | None = None,
                  dataset: str | None = None) -> pd.DataFrame:
    """Import every tool output under `folder` (lm-eval: each folder holding samples_*.jsonl; inspect_ai: each
    .eval log) into the run folder `runs_dir/<folder name or log stem>__<tool>`; one row per import: tool,
    source, run_dir, n_records, matched, unmatched. Re-running returns the finished imports as they are."""
    import pandas as pd

    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such folder")
    jobs = [("lm-eval", d) for d in sorted({f.parent for f in root.rglob("samples_*.jsonl")})]
    jobs += [("inspect", f) for f in sorted(root.rglob("*.eval"))]
    if not jobs:
        raise FileNotFoundError(f"{root}: no lm-eval samples_*.jsonl and no inspect .eval log")
    rows = []
    for tool, path in jobs:
        res = import_run(tool, path, Path(runs_dir) / f"{path.stem}__{tool}", items, dataset)
        prov = res.provenance
        rows.append({"tool": tool, "source": str(path.relative_to(root)), "run_dir": str(res.run_dir.dir),
                     "model": str(res.records["model"].iloc[0]), "n_records": len(res.records),
                     "matched": prov["items"]["matched"], "unmatched": len(res.unmatched)})
    return pd.DataFrame(rows)


def items_by_id(run_dir: str | Path, items: ItemSet | None = None) -> dict[str, Any]:
    """Item by id for a run folder's records: its items.jsonl when it has one, else `items`."""
    rd = RunDir(run_dir)
    stored = {d["item_id"]: item_from_dict(d) for d in rd.read_items()}
    if stored:
        return stored
    if items is None:
        raise ValueError(f"{rd.dir} has no {rd.items_file.name}: pass the items its records are about")
    return {it.item_id: it for it in items}


def export_run(fmt: str, run_dir: str | Path, out_dir: str | Path, items: ItemSet | None = None,
               name: str | None = None) -> Path:
    """Write the run folder `run_dir` in format `fmt` (lm-eval | inspect | eee) under `out_dir`; returns the
    main file written. items: when the folder has no items.jsonl (our own runs), the items of its dataset."""
    rd = RunDir(run_dir)
    records = rd.load()
    if records.empty:
        raise ValueError(f"{rd.dir}: no records to export")
    by_id = items_by_id(run_dir, items)
    missing = sorted(set(records["item_id"]) - set(by_id))
    if missing:
        raise ValueError(f"{rd.dir}: records of items not in the given items: {missing[:5]}")
    return _resolve(EXPORTERS, fmt, "format")(records, by_id, out_dir, name or rd.name)
