"""The fused body (backends/hf/fused.py) on the support sweep's families: each family the committed sweep table
keeps on tree attention (results/tests/support_sweep.json) is built small, as the sweep builds it
(tests/model_families.py), and scored by the engine with `fused=True` on the sweep's workload (letters and option
log-likelihoods; tests/support_sweep.py) against the plain forward per sequence: its largest |difference|, its
calls through the compiled layers (none where the family's rows go on dense masks: its blocks have no layer
windows), the compiler's new graphs and the compile seconds. scripts/fused_table.py writes
every family's row to results/tests/fused_sweep.json; tests/backends/hf/test_fused.py runs a few in `make test`."""
from __future__ import annotations

import time
from typing import Any

import support_sweep
from model_families import Unbuildable, build

SCORINGS = ("letters", "options")


def tree_families(table: dict[str, Any]) -> list[str]:
    """The families the sweep table keeps on tree attention on the CPU budget (the path `fused` compiles)."""
    return sorted(r["family"] for r in table["rows"] if r.get("built") and r["checked"]["cpu"].get("kept") == "tree")


def fused_row(model_type: str, tokenizer: Any) -> dict[str, Any]:
    """One family's row: the fused engine's max |delta| per scoring against the plain forward (or its error), its
    path, whether it is still fused (a fallback turns it off), its tree calls through the compiled layers, the
    compiler's new graphs and compile seconds."""
    import torch

    from mcqa_toolkit.backends.hf import wrap
    from mcqa_toolkit.backends.hf.engine import PrefixScorer

    t0 = time.perf_counter()
    try:
        model = build(model_type)
    except Unbuildable as e:
        return {"family": model_type, "built": False, "reason": str(e)}
    lm = wrap(model, tokenizer, name=f"fused-{model_type}")
    work = support_sweep.workload()
    requests = {s: support_sweep._requests(work, s) for s in SCORINGS}
    reference = {s: support_sweep.plain_logprobs(model, [r for reqs in requests[s] for r in reqs]) for s in SCORINGS}
    row: dict[str, Any] = {"family": model_type, "built": True}
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    try:
        engine = PrefixScorer(lm, fused=True, check=False)
        for s in SCORINGS:
            row[s] = support_sweep._delta(support_sweep._scored(engine, work["run"], requests[s]), reference[s])
        row.update(path=engine.path, fused=engine.fused, tree_calls=engine.stats.fused_calls,
                   compile_seconds=round(engine.stats.compile_seconds, 2))
    except Exception as e:  # noqa: BLE001 - the row records what the engine ended in
        row["error"] = support_sweep._error(e)
    row["graphs"] = torch._dynamo.utils.counters["stats"]["unique_graphs"] - graphs
    row["seconds"] = round(time.perf_counter() - t0, 2)
    return row


def exact(row: dict[str, Any]) -> bool:
    """Whether a built family's fused scores are within the engine's bound (through compiled layers where it has
    tree calls: `tree_calls`, the calls the compiled layers made; `graphs` counts only graphs new to the process, a
    layer class another family compiled before is reused)."""
    return "error" not in row and row["fused"] and all(row[s] <= support_sweep.EXACT for s in SCORINGS)
