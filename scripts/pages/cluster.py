"""docs/cluster.md's fault table: the Ray pool's fault tests (tests/run/pool/test_driver.py, markers `ray` and `faults`)
as the last full fault-suite run measured them (results/tests/reliability.json, written by
scripts/reliability_table.py), rendered with the fault suite's own rows (tests/fault_figures.FAULTS) and merging
rule."""
from __future__ import annotations

from pages.blocks import REPO, module_at, read_json, table

RAY_FAULTS = ("ray_worker_killed", "ray_node_lost", "ray_driver_killed")


def faults() -> str:
    figures = module_at(REPO / "tests" / "fault_figures.py")  # the tests' table of faults
    FAULTS, merged = figures.FAULTS, figures.merged

    data = read_json(REPO / "results" / "tests" / "reliability.json")
    rows = []
    for key in RAY_FAULTS:
        fault, found = FAULTS[key], data["figures"].get(key)
        if not found:
            raise ValueError(f"results/tests/reliability.json has no figures for {key!r}: run `make reliability`")
        shown = "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in merged(found).items())
        rows.append([fault.fault, fault.guarantee, f"`{fault.test}`", shown])
    suite = data["suite"]
    return (table(["fault", "what happens", "test (markers `ray`, `faults`)", "measured"], rows) +
            f"\n\nFigures from the fault suite's run of {suite.get('date')} at commit {suite.get('commit')} "
            "(`results/tests/reliability.json`, also on `docs/reliability.md`).")


def blocks() -> dict[str, str]:
    return {"cluster-faults": faults()}
