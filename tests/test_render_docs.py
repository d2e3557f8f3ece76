"""scripts/render_docs.py: every generated part of the docs and the README is its committed raw data rendered, so a
figure typed or edited in a page, or a raw file changed without rendering, fails here; the raw files hold no
machine paths; a figure that compared nothing renders as such; the H100 MFU uses the raw files' own FLOPs against
the device's datasheet peak. Cheap (no benchmark runs, no model, no ../shared): the `unit` tier."""
from __future__ import annotations

import copy
import importlib
import json
import sys

import pytest
from fault_figures import leaves
from paths import REPO

sys.path.insert(0, str(REPO / "scripts"))
render_docs = importlib.import_module("render_docs")
blocks = importlib.import_module("pages.blocks")
performance = importlib.import_module("pages.performance")
NEWEST_DEMO = str(importlib.import_module("pages.readme").demo_file().relative_to(REPO))   # what README renders
RAW_DIRS = (REPO / "results", REPO / "data")   # the committed raw results; the demo's sample runs


def test_every_page_is_its_data_rendered():
    stale = [page for page, text in render_docs.rendered().items() if (REPO / page).read_text() != text]
    assert not stale, f"{stale} differ from their data rendered: run `python scripts/render_docs.py`"


def test_a_figure_edited_in_a_page_is_caught():
    """Change one digit inside each generated block that shows figures: rendering the edited page gives it back as
    the data says, so the check above would call the page stale."""
    edited_blocks = 0
    for page, (make, legacy) in render_docs.PAGES.items():
        text = (REPO / page).read_text()
        for name in make():
            start, end = blocks.markers(name, legacy)
            lo, hi = text.index(start) + len(start), text.index(end)
            digit = next((i for i in range(lo, hi) if text[i].isdigit()), None)
            if digit is None:  # a block without figures (e.g. "no raw file yet")
                continue
            edited = text[:digit] + str((int(text[digit]) + 1) % 10) + text[digit + 1:]
            assert render_docs.render_page(page, edited) != edited, (page, name)
            edited_blocks += 1
    assert edited_blocks >= 10


@pytest.mark.parametrize("name, path", [
    ("docs/enem.md", "results/studies/enem_crossval.json"),
    ("docs/dif.md", "results/studies/dif_2021.json"),
    ("docs/performance.md", "results/benchmarks/vs_vllm_2026-11-25.json"),
    ("docs/performance.md", "results/benchmarks/ray_overhead_2026-11-25.json"),
    ("docs/performance.md", "results/benchmarks/engine3_2026-11-27/throughput_letters_cpu_defaults.json"),
    ("docs/performance.md", "results/benchmarks/h200_2026-11-28/throughput_llama8b_big.json"),
    ("docs/performance.md", "results/benchmarks/h200_2026-11-28/speed_llama-3-8b.json"),
    ("README.md", NEWEST_DEMO),
    ("docs/performance.md", "results/benchmarks/make_demo_2026-11-28_97b34a6.json"),
    ("docs/performance.md", "results/benchmarks/engine4_2026-11-29/first_item.json"),
    ("docs/performance.md", "results/benchmarks/engine4_2026-11-29/vllm_body.json"),
    ("docs/performance.md", "results/benchmarks/engine4_2026-11-29/throughput_exam2021_cpu.json"),
    ("docs/performance.md", "results/benchmarks/engine4_2026-11-29/speed_exam2021_cpu.json"),
    ("docs/performance.md", "results/benchmarks/engine6_rows_2026-12-04/row_groups_float32_256.json"),
    ("docs/performance.md", "results/benchmarks/engine6_rows_2026-12-04/rows_ab_after_1.json"),
])
def test_a_changed_raw_figure_changes_its_page(name, path, monkeypatch):
    """Every number of these raw files that a table shows moves the page when it moves (the check compares them)."""
    raw = json.loads((REPO / path).read_text())
    text = (REPO / name).read_text(encoding="utf-8")
    page = render_docs.render_page(name, text)  # only the page the file feeds: the others cost time, not coverage
    real = blocks.read_json
    moved = 0
    numbers = [(p, v) for p, v in leaves(raw) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    for leaf, value in numbers[:60]:
        changed = copy.deepcopy(raw)
        node = changed
        for key in leaf[:-1]:
            node = node[key]
        node[leaf[-1]] = value + 7 if isinstance(value, int) else value * 1.37 + 0.11
        monkeypatch.setattr(blocks, "read_json", lambda p, c=changed, real=real: c if str(p).endswith(path)
                            else real(p))
        for module in ("pages.performance", "pages.performance_engine", "pages.performance_gpu", "pages.enem",
                       "pages.dif", "pages.cluster", "pages.readme", "pages.invariance", "pages.performance_host",
                       "pages.performance_rows"):
            monkeypatch.setattr(importlib.import_module(module), "read_json", blocks.read_json, raising=False)
        try:
            moved += render_docs.render_page(name, text) != page
        except ValueError:  # a renderer's own consistency check refused the changed file: caught as well
            moved += 1
    assert moved >= 5


def test_the_contamination_page_follows_its_raw_results(tmp_path, monkeypatch):
    """docs/contamination.md's tables are results/studies/contamination rendered: a detector's scores moved in the
    raw results move the AUC table, a test's p-value moves the tests table."""
    import pandas as pd

    contamination = importlib.import_module("pages.contamination")
    data = REPO / "results" / "studies" / "contamination"
    for path in data.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    before = contamination.blocks()
    scores = pd.read_parquet(data / "scores.parquet")
    flip = (scores["detector"] == "min_k") & (scores["model"] != "clean")
    scores.loc[flip, "score"] = -scores.loc[flip, "score"]
    scores.to_parquet(tmp_path / "scores.parquet", index=False)
    tests = pd.read_parquet(data / "tests.parquet")
    tests["p_value"] = tests["p_value"] * 0.5
    tests.to_parquet(tmp_path / "tests.parquet", index=False)
    monkeypatch.setattr(contamination, "DATA", tmp_path)
    after = contamination.blocks()
    assert after["contam-auc-pt2021"] != before["contam-auc-pt2021"]
    assert after["contam-auditor"] != before["contam-auditor"]
    assert after["contam-tests"] != before["contam-tests"]
    assert after["contam-gain"] == before["contam-gain"]
    controls = scores["model"].str.match(r"c\d") & (scores["detector"] == "zlib")       # the clean controls' AUC
    assert controls.any()
    scores.loc[controls, "score"] = scores.loc[controls, "item_id"].rank().to_numpy()
    scores.to_parquet(tmp_path / "scores.parquet", index=False)
    steps = json.loads((data / "steps.json").read_text())
    steps[-1]["seconds"] = steps[-1]["seconds"] * 3 + 1000                            # a step's time
    (tmp_path / "steps.json").write_text(json.dumps(steps))
    plan = json.loads((data / "plan.json").read_text())
    plan[next(step for step, ran in plan.items() if ran and step.startswith("train c"))] = False   # a control's step
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    moved = contamination.blocks()
    assert moved["contam-auditor"] != after["contam-auditor"] and moved["contam-steps"] != after["contam-steps"]
    assert moved["contam-session"] != after["contam-session"]


def test_raw_files_hold_no_machine_paths(tmp_path):
    found = []
    for folder in RAW_DIRS:
        for path in folder.rglob("*"):
            if path.suffix in (".json", ".jsonl", ".txt", ".csv", ".ipynb") and path.is_file():
                if blocks.MACHINE_PATH.search(path.read_text(errors="replace")):
                    found.append(str(path.relative_to(REPO)))
    assert not found, f"machine paths in {found}: write placeholders (benchmarks/_results.py)"
    bad = tmp_path / "raw.json"
    bad.write_text('{"source": "vllm:/root/.cache/mcqa_toolkit/dequantised/x"}')
    with pytest.raises(ValueError, match="holds a machine path"):
        blocks.read_json(bad)


def test_fields_that_compared_nothing_render_as_such():
    """scoring_throughput runs with --naive-items 0 compared nothing: null in the file, 'not compared' on the page."""
    for path in (REPO / "results" / "benchmarks").glob("engine_calls_*/engine_*.json"):
        raw = json.loads(path.read_text())
        if raw["args"]["naive_items"] == 0:
            for r in raw["results"].values():
                assert r["max_delta"] is None and r["same_choices"] is None and r["speedup"] is None, path
    assert "not compared" in performance.engine_calls()
    assert blocks.number(None) == "n/a"


def test_mfu_uses_the_raw_files_flops_against_the_datasheet_peak():
    """The FLOPs recomputed from the shape the file names are the file's own (its MFU x the peak it used x its
    seconds); the round-3 page's MFU divides them by the device's datasheet peak (989 TFLOP/s for the H100 SXM),
    and the round-5 files' own MFU (shown as it is) is those FLOPs over the peak they name."""
    files = sorted((REPO / "results" / "benchmarks").glob("*/speed_*.json"))
    engine = importlib.import_module("pages.performance_engine")
    checked = {"round 3": 0, "round 5": 0}
    for path in files:
        raw = json.loads(path.read_text())
        if raw["args"]["device"] != "cuda":
            continue
        for scoring, r in raw["results"].items():
            ours = performance.flops(raw["args"]["random_shape"], r["stats"])
            if engine.round5(raw):
                assert r["mfu"] == pytest.approx(ours / r["t_ours"] / (r["peak_tflops"] * 1e12), rel=1e-9)
                checked["round 5"] += 1
                continue
            theirs = r["mfu"] * raw["args"]["peak_tflops"] * 1e12 * r["t_ours"]
            assert ours == pytest.approx(theirs, rel=1e-9), (path.name, scoring)
            value, source = performance.mfu(raw, scoring)
            assert value == pytest.approx(r["mfu"] * raw["args"]["peak_tflops"] / 989.0, rel=1e-9)
            assert source.startswith("989 TFLOP/s")
            checked["round 3"] += 1
    assert all(checked.values()), checked
    assert performance.PEAK_TFLOPS["NVIDIA H100 80GB HBM3"][0] == 989.0


def test_a_row_names_its_workload_from_the_files_arguments():
    """enem-long (or a file written before the workload option) reads as enem-long; an exam run as its loader and
    the files it loaded, so rows of different workloads are not read as one series."""
    engine = importlib.import_module("pages.performance_engine")
    assert engine.workload({"workload": "enem-long"}) == engine.workload({}) == "enem-long"
    paths = [f"../shared/x/ENEM_2021_{a}_CO_PROVA_1.csv" for a in ("CH", "CN", "LC", "MT")]
    assert engine.workload({"workload": "exam", "dataset": "enem", "data_path": paths}) == \
        "enem: ENEM_2021_CH_CO_PROVA_1 and 3 more"
    assert engine.workload({"workload": "exam", "dataset": "demo", "data_path": None}) == "demo: its default file"


def test_the_gpu_busy_table_is_its_samples():
    """The busy share of a scoring window is the share of nvidia-smi samples above 0% in it: a window of the
    committed file, recomputed by hand from the samples, equals what the page shows."""
    gpu5 = importlib.import_module("pages.performance_gpu")
    assert gpu5._runs([True, True, False, True, False, False], True) == [2, 1]
    assert gpu5._runs([True, True, False, True, False, False], False) == [1, 2]
    text = gpu5.busy()
    assert "| llama-3-8b | letters |" in text and "| gemma-3-1b | letters |" in text


def test_a_block_without_its_markers_is_one_clear_error():
    with pytest.raises(ValueError, match="docs/x.md: block 'gone' needs one"):
        blocks.replace("no markers here", {"gone": "text"}, page="docs/x.md")
    text = f"a\n{blocks.begin('b')}\nold\n{blocks.end('b')}\nz"
    assert blocks.replace(text, {"b": "new"}) == f"a\n{blocks.begin('b')}\nnew\n{blocks.end('b')}\nz"


def test_benchmarks_write_their_raw_files_without_machine_paths(tmp_path, monkeypatch):
    """benchmarks/_results.write_json: the model cache, temporary folders, the checkout and the home folder are
    written as placeholders, whatever the figures' nesting; numbers and nulls are kept as they are."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    results = importlib.import_module("_results")
    monkeypatch.setenv("MCQA_CACHE", "/root/.cache/mcqa_toolkit")
    monkeypatch.setattr(results, "machine_reference", lambda device, tokenizer: {"host": "/tmp/x"})
    figures = {"source": "vllm:/root/.cache/mcqa_toolkit/dequantised/abc", "out": ["/tmp/bench/x.json"],
               "here": str(REPO / "benchmarks"), "nested": {"max_delta": None, "seconds": 1.5}}
    written = json.loads(results.write_json(tmp_path / "r.json", figures).read_text())
    assert written == {"source": "vllm:MCQA_CACHE/dequantised/abc", "out": ["TMP/bench/x.json"],
                       "here": "REPO/benchmarks", "nested": {"max_delta": None, "seconds": 1.5},
                       "machine": {"host": "TMP/x"}}
    assert not blocks.MACHINE_PATH.search(json.dumps(written)) and results.write_json(None, figures) is None


def test_the_invariance_data_holds_what_the_pages_say():
    """docs/invariance.md's claims, checked on its raw files: the choices said exact (rows per call, a resume, a Ray
    worker with the default resources) moved no score and are equal by the rule; the rest stayed within the engine's
    tested 1e-4 of the naive path with the same choices, except a llama.cpp server's history (not ours), which never
    changed the best letter; every choice was measured on both scorings."""
    exact = ("rows per forward call (batch size)", "resume after SIGKILL mid-run",
             "Ray worker (default resources) vs in-process")
    files = sorted((REPO / "results" / "benchmarks").glob("invariance_*.json"))
    assert files
    for path in files:
        rows = json.loads(path.read_text())["rows"]
        assert {r["scoring"] for r in rows} == {"letters", "options"}, path.name
        for r in rows:
            if r["choice"] in exact:
                assert r["max_abs_delta"] == 0 and r["equal_by_rule"] and r["same_choice"] == 1, (path.name, r)
            else:
                assert r["max_abs_delta"] <= 1e-4 and r["same_choice"] == 1, (path.name, r)
    for path in sorted((REPO / "results" / "benchmarks").glob("server_history_*.json")):
        assert all(r["same_choice"] == 1 for r in json.loads(path.read_text())["rows"]), path.name
    causes = importlib.import_module("pages.invariance").CAUSES
    assert all(c.startswith("ours, exact") for k, c in causes.items() if k == exact[0])


def test_a_files_machine_reference_is_shown_beside_its_timings(tmp_path):
    """A raw file with a machine reference (benchmarks/_machine.py) gets it printed below the table; older files
    without one say so, and a table of such files only gets no note."""
    ref = {"commit": {"sha": "a" * 40, "dirty": False}, "gemm": {"best": 148.1}, "host": {"best_ms": 26.04}}
    assert blocks.machine({"machine": ref}) == "torch.mm 148 GFLOP/s, tokenisation 26.0 ms (at aaaaaaa)"
    assert blocks.machine({}) == "not recorded"
    assert blocks.machine({"machine": {**ref, "gemm": {"error": "x"}, "commit": {"sha": None}}}) == \
        "torch.mm n/a, tokenisation 26.0 ms"
    note = blocks.machine_notes([(tmp_path / "a.json", {"machine": ref}), (tmp_path / "b.json", {})])
    assert "a.json`: torch.mm 148 GFLOP/s" in note and "b.json" not in note
    assert blocks.machine_notes([(tmp_path / "b.json", {})]) == ""


def test_the_dif_page_follows_the_notebooks_headline(tmp_path, monkeypatch):
    """docs/dif.md's simulated-persons table is the headline notebooks/17_dif.ipynb printed: a class count moved in
    that output moves the table; a notebook without its printed headline is one clear error."""
    dif = importlib.import_module("pages.dif")
    nb = json.loads(dif.DIF_NOTEBOOK.read_text())
    cell = next(c for c in nb["cells"] if "write_headline(" in "".join(c["source"]))
    headline = json.loads("".join(cell["outputs"][0]["text"]))
    row = "| it | {:.0f} | {:.0f} |".format
    assert row(headline["n_persons"]["it"], headline["classes"]["it / A"]) in dif.simulated()
    headline["classes"]["it / A"] += 1
    cell["outputs"][0]["text"] = json.dumps(headline, indent=2)
    monkeypatch.setattr(dif, "DIF_NOTEBOOK", tmp_path / "17_dif.ipynb")
    dif.DIF_NOTEBOOK.write_text(json.dumps(nb))
    assert row(headline["n_persons"]["it"], headline["classes"]["it / A"]) in dif.simulated()
    cell["outputs"] = []
    dif.DIF_NOTEBOOK.write_text(json.dumps(nb))
    with pytest.raises(ValueError, match="no printed headline"):
        dif.simulated()


def test_the_readme_engine_clause_names_each_devices_dtype_and_one_ratio_as_one():
    """The README's speed clause: a single file's ratio is given as it is, a range over several files as a range;
    the CPU clause says the dtype its file ran (float32), not the GPU's."""
    readme = importlib.import_module("pages.readme")
    assert readme._span([34.5]) == "34.5x" and readme._span([6.2, 37.4]) == "6-37x"
    text = readme.engine()
    assert "on a CPU (gemma-3-270m, float32;" in text and "an NVIDIA" in text and "an CPU" not in text
