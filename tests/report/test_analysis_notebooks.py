"""The analysis notebooks run top to bottom with papermill on a synthetic results directory, write their figures
(PNG + PDF) and LaTeX tables, and record headline numbers equal to direct package calls (11_irt also places the
models among synthetic ENEM candidates: MICRODATA).

Also the degenerate case: one model, one language, one strategy and no min_k.parquet, where the language-gap,
contamination and DIF notebooks must report what they skip instead of failing; and 15_adaptive on results with
adaptive runs and their full-form partners (test_adaptive_analysis.write_adaptive_results).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import papermill as pm
import pytest
from paths import REPO
from synthetic_results import write_adaptive_results, write_synthetic_results

from mcqa_toolkit import enem, measure
from mcqa_toolkit.datasets.demo import load_demo, load_population
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.simulate import simulate_microdata
from mcqa_toolkit.irt.cat import CatConfig
from mcqa_toolkit.measure import adaptive
from mcqa_toolkit.records.store import MIN_K
from mcqa_toolkit.report.dif import dif_report

pytestmark = pytest.mark.notebooks
NOTEBOOKS = REPO / "notebooks"
STRATEGIES = ("S1", "enem_4shot")
EXPECTED = {  # notebook -> (headline keys, figures, LaTeX files)
    "10_tables": ({"n_records", "n_runs", "accuracy", "kappa", "theta_mean"}, ["tables_accuracy_by_strategy"],
                  ["accuracy_by_strategy", "kappa_by_strategy", "kappa_by_subject", "irt_summary"]),
    "11_irt": ({"has_irt", "n_persons", "n_items_without_irt", "theta_mean", "lz_mean", "share_di_good",
                "enem_percentile"},
               [f"irt_fig{k}_{name}_{s}" for k, name in ((1, "accuracy_theta"), (3, "lz_theta")) for s in STRATEGIES]
               + ["irt_fig2_response_patterns", "irt_fig4_information_theta", "irt_fig5_discrimination",
                  "irt_enem_candidates"],
               ["irt_theta_ci", "irt_enem_candidates"]),
    "12_language_gap": ({"reference", "score", "score_by_language", "difference", "gap_pct", "quality_gap_pearson_r",
                         "mcnemar_p"},
                        ["gap_scores_by_language", "gap_quality_vs_gap"], ["gap_en_pt", "gap_differences", "mcnemar"]),
    "13_position_bias": ({"tvd", "chi2_p", "consistency_mean"},
                         ["position_distribution", "position_accuracy_by_key_position",
                          "position_shuffle_consistency"], ["position_bias"]),
    "14_contamination": ({"has_min_k", "pearson_r", "pearson_p"}, ["contamination_min_k_accuracy"],
                         ["contamination_min_k"]),
    "15_adaptive": ({"length_mean", "share_reached", "population_cat_vs_full", "anchor_mae_accuracy",
                     "anchor_mae_theta", "has_adaptive_runs", "items_saved_pct", "tokens_saved_pct", "theta_rmse"},
                    ["adaptive_length_by_se", "adaptive_population_cat_vs_full", "adaptive_anchor_error"],
                    ["adaptive_length_by_se", "adaptive_anchor_error"]),
    "16_course_exam": ({"has_course_exam", "model_score", "percentile", "points_earned", "n_error"}, [], []),
    "17_dif": ({"has_dif", "source", "n_persons", "classes", "flagged_bh", "delta_mh_bc"}, ["dif_delta_mh"],
               ["dif_items"]),
}
ADAPTIVE_SMALL = {"POPULATION_SIZE": 300, "SE_TARGETS": [0.4, 0.5], "MAX_ITEMS": 25, "ANCHOR_PERSONS": 100,
                  "ANCHOR_KS": [5, 10], "ANCHOR_FOLDS": 4,
                  "ANCHOR_CALIBRATION": {"model": "2pl", "a_prior": [0.0, 0.5]}}
EXTRA_PARAMETERS = {"10_tables": {"N_BOOT": 50}, "12_language_gap": {"N_BOOT": 50}, "15_adaptive": ADAPTIVE_SMALL}


def _execute(name: str, results: Path, out: Path, **extra) -> dict:
    params = {"RUNS_DIR": str(results), "FIGURES_DIR": str(out / "figures"), "LATEX_DIR": str(out / "latex"),
              **EXTRA_PARAMETERS.get(name, {}), **extra}
    pm.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(out / f"{name}.ipynb"), parameters=params,
                        kernel_name="python3", cwd=str(NOTEBOOKS), progress_bar=False)
    return json.loads((out / "latex" / f"{name}_headline.json").read_text())


def test_notebooks_have_one_parameters_cell_with_documented_constants():
    import nbformat

    for name in EXPECTED:
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, name
        assignments = [ln for ln in tagged[0].source.splitlines() if "=" in ln and not ln.startswith("#")]
        assert assignments and all(ln.split("=")[0].strip().isupper() and "#" in ln for ln in assignments), name
        assert all(len(c.source.splitlines()) <= 16 for c in nb.cells if c.cell_type == "code"), name


@pytest.fixture(scope="module")
def enem_microdata(tmp_path_factory):
    """Synthetic INEP-format microdata (enem.simulate) of 1,500 MT candidates, for 11_irt's MICRODATA."""
    items = read_itens_prova(REPO / "tests" / "fixtures" / "enem" / "ITENS_PROVA_golden.csv")
    md, _ = simulate_microdata(items, {"MT": [1211]}, 1500, np.random.default_rng(3))
    path = tmp_path_factory.mktemp("microdata") / "MICRODADOS_ENEM_2023.csv"
    md.to_csv(path, sep=";", index=False, encoding="latin-1")
    return path


@pytest.mark.parametrize("name", list(EXPECTED))
def test_notebook_writes_figures_tables_and_headline(name, synthetic_dir, records, enem_microdata, tmp_path):
    keys, figures, latex = EXPECTED[name]
    # 11_irt places the models among synthetic ENEM candidates (the demo's theta on the MT scale)
    extra = {"MICRODATA": str(enem_microdata), "ENEM_AREA": "MT"} if name == "11_irt" else {}
    headline = _execute(name, synthetic_dir, tmp_path, **extra)
    assert set(headline) == keys
    for fig in figures:
        for ext in ("png", "pdf"):
            assert (tmp_path / "figures" / f"{fig}.{ext}").stat().st_size > 1000, f"{fig}.{ext}"
    for tex in latex:
        assert (tmp_path / "latex" / f"{tex}.tex").read_text().startswith("\\begin{table}")
    if name == "10_tables":
        acc = measure.accuracy(records, by=("model", "strategy", "language"), n_boot=0)
        row = acc[(acc.model == "model-a") & (acc.strategy == "S1") & (acc.language == "pt")].iloc[0]
        assert headline["accuracy"]["model-a / S1 / pt"] == pytest.approx(row["accuracy"], abs=1e-4)
    if name == "11_irt":
        ab = measure.model_abilities(records, load_demo())
        theta = ab[(ab.model == "model-b") & (ab.strategy == "enem_4shot") & (ab.language == "en")]["theta"].mean()
        assert headline["theta_mean"]["model-b / enem_4shot / en"] == pytest.approx(theta, abs=1e-4)
        assert headline["n_persons"] == 24 and headline["n_items_without_irt"] == 0
        placed = enem.place_among_candidates(ab, enem.candidate_scores(enem_microdata, "MT")).set_index(
            list(measure.GROUP_BY))
        assert headline["enem_percentile"]["model-b / enem_4shot / en"] == pytest.approx(
            placed.loc[("model-b", "enem_4shot", "en"), "percentile"], abs=1e-4)
    if name == "12_language_gap":
        diff = measure.language_differences(records, "en", "kappa", n_boot=50).set_index(list(measure.GROUP_BY))
        assert headline["difference"]["model-a / S1 / pt"] == pytest.approx(diff.loc[("model-a", "S1", "pt"), "diff"],
                                                                          abs=1e-4)
    if name == "17_dif":   # 12 patterns per language: the persons are simulated, and the notebook says so
        rep = dif_report(records, load_demo(), "en")
        assert headline["source"] == "simulated" and headline["n_persons"] == {"en": 500, "pt": 500}
        assert headline["classes"] == {f"pt / {k}": v for k, v in rep.table["ets_class"].value_counts().items()}
        assert "SIMULATED" in (tmp_path / f"{name}.ipynb").read_text()
        assert (tmp_path / "latex" / "dif_classes.csv").exists()
    if name == "14_contamination":
        assert headline["has_min_k"] and all(r < 0 for r in headline["pearson_r"].values())
    if name == "15_adaptive":
        _check_adaptive_population(headline)
        assert not headline["has_adaptive_runs"] and headline["items_saved_pct"] == {}
        assert "No adaptive runs under" in (tmp_path / f"{name}.ipynb").read_text()
    if name == "16_course_exam":  # the synthetic results hold no course-exam run: said, and skipped
        assert headline == {"has_course_exam": False, "model_score": {}, "percentile": {}, "points_earned": {},
                            "n_error": {}}
        assert "course-exam analysis skipped" in (tmp_path / f"{name}.ipynb").read_text()


def _check_adaptive_population(headline: dict) -> None:
    """15_adaptive's population numbers (sections 2, 3, 5) equal direct calls with the test's parameters."""
    p = ADAPTIVE_SMALL
    bank, u, theta = adaptive.population_sample(load_population(), load_demo(), p["POPULATION_SIZE"], seed=0)
    curve = adaptive.cat_length_curve(bank, u, p["SE_TARGETS"], p["MAX_ITEMS"], seed=0)
    for row in curve.itertuples():
        assert headline["length_mean"][f"{row.se_target} / {row.order}"] == pytest.approx(row.mean_length, abs=1e-4)
        assert headline["share_reached"][f"{row.se_target} / {row.order}"] == pytest.approx(row.share_reached, abs=1e-4)
    persons = adaptive.cat_vs_full(bank, u, CatConfig(se_target=0.3, max_items=20), seed=0)
    stats = adaptive.agreement(persons["theta_full"], persons["theta_cat"])
    assert headline["population_cat_vs_full"]["rmse"] == pytest.approx(stats["rmse"], abs=1e-4)
    assert headline["population_cat_vs_full"]["correlation"] == pytest.approx(stats["correlation"], abs=1e-4)
    anchors = adaptive.anchor_curve(u[:p["ANCHOR_PERSONS"]], p["ANCHOR_KS"], folds=p["ANCHOR_FOLDS"], model="2pl",
                                    a_prior=(0.0, 0.5))
    for row in anchors.itertuples():
        assert headline["anchor_mae_theta"][f"{row.k} / {row.selection}"] == pytest.approx(row.mae_theta, abs=1e-4)
        assert headline["anchor_mae_accuracy"][f"{row.k} / {row.selection}"] == pytest.approx(row.mae_gpirt, abs=1e-4)


@pytest.fixture(scope="module")
def degenerate(tmp_path_factory):
    root = write_synthetic_results(tmp_path_factory.mktemp("one"), models={"model-a": 0.5}, languages={"pt": 0.0},
                                   strategies={"S1": ("generate", 0, 1)})
    for f in root.rglob(MIN_K):
        f.unlink()
    return root


@pytest.mark.parametrize("name", ["12_language_gap", "14_contamination", "17_dif"])
def test_notebooks_report_what_they_skip(name, degenerate, tmp_path):
    headline = _execute(name, degenerate, tmp_path)
    nb = (tmp_path / f"{name}.ipynb").read_text()
    if name == "12_language_gap":
        assert headline["gap_pct"] == {} and headline["difference"] == {} and "gaps skipped" in nb
        assert (tmp_path / "figures" / "gap_scores_by_language.png").exists()
    elif name == "17_dif":
        assert headline["has_dif"] is False and headline["classes"] == {} and "DIF skipped" in nb
    else:
        assert headline == {"has_min_k": False, "pearson_r": {}, "pearson_p": {}}
        assert "Contamination analysis skipped" in nb
    shutil.rmtree(tmp_path / "figures", ignore_errors=True)


def test_adaptive_notebook_compares_model_runs_with_their_full_form(tmp_path):
    """An adaptive run per model with its full-form partner (plus one without): the model part runs, and its
    numbers equal direct calls; HUMANS=None skips the population sections."""
    root = write_adaptive_results(tmp_path / "results")
    headline = _execute("15_adaptive", root, tmp_path, HUMANS=None)
    from mcqa_toolkit.records.results import load_results

    savings = adaptive.adaptive_savings(adaptive.model_cat_vs_full(load_results(root), load_demo()))
    assert headline["has_adaptive_runs"] and headline["length_mean"] == {} and headline["anchor_mae_theta"] == {}
    assert set(headline["items_saved_pct"]) == {"model-a / en / enem_4shot_cat", "model-b / en / enem_4shot_cat"}
    for row in savings.itertuples():
        key = f"{row.model} / {row.language} / {row.strategy}"
        assert headline["items_saved_pct"][key] == pytest.approx(row.items_saved_pct, abs=1e-4)
        assert headline["tokens_saved_pct"][key] == pytest.approx(row.tokens_saved_pct, abs=1e-4)
        assert headline["theta_rmse"][key] == pytest.approx(row.theta_rmse, abs=1e-4)
    for fig in ("adaptive_model_cat_vs_full", "adaptive_model_savings"):
        assert (tmp_path / "figures" / f"{fig}.png").stat().st_size > 1000
    assert (tmp_path / "latex" / "adaptive_model_cat_vs_full.tex").read_text().startswith("\\begin{table}")
    nb = (tmp_path / "15_adaptive.ipynb").read_text()
    assert "sections 2, 3 and 5 are skipped" in nb and "enem_4shot_cat" in nb
def test_course_exam_notebook_scores_exams_against_students(tmp_path):
    from scripted_backends import ScriptedJudge, ScriptedModel

    from mcqa_toolkit.datasets import load
    from mcqa_toolkit.report.course_exam import load_course_exam_runs
    from mcqa_toolkit.run import Strategy, run
    from mcqa_toolkit.scoring.judge import LLMJudge

    results = tmp_path / "results"
    run(load("course_exam"), ScriptedModel(), Strategy.generate(max_new_tokens=20), results / "scripted_run",
        dataset="course_exam", judges=[LLMJudge(ScriptedJudge())], progress=False)
    headline = _execute("16_course_exam", results, tmp_path)
    cmp = load_course_exam_runs(results).comparison().set_index("exam")
    assert headline["has_course_exam"] and headline["n_error"] == {"scripted / generate_0shot": 1.0}
    key = "scripted / generate_0shot / db_systems_spring_2024_final"
    want = cmp.loc["db_systems_spring_2024_final", "model_score"]
    assert headline["model_score"][key] == pytest.approx(want, abs=1e-4)
    for ext in ("png", "pdf"):
        assert (tmp_path / "figures" / f"course_exam_students.{ext}").stat().st_size > 1000
    assert (tmp_path / "latex" / "course_exam_scores.tex").read_text().startswith("\\begin{table}")
    data = json.loads((tmp_path / "latex" / "comparison.json").read_text())
    assert set(data["scripted / generate_0shot"]["exams"]) == set(cmp.index)


# runs of any size: `mcqa report` (every report notebook, in one kernel) on a 1-question run in two languages and on
# a one-language run of the demo's size (12 questions); what a size cannot give is left out with one line, never an
# error (the demo itself runs in CI: `make demo`)
SIZE_CASES = {
    "one_question": dict(n_items=1, models={"model-a": 0.5}, languages={"en": 0.0, "pt": -0.4},
                         strategies={"S1": ("generate", 0, 2), "first_token": ("first_token", 0, 3)}),
    "one_language": dict(n_items=12, languages={"pt": 0.0}),
}


@pytest.mark.parametrize("case", list(SIZE_CASES))
def test_report_runs_every_notebook_on_runs_of_any_size(case, tmp_path):
    from mcqa_toolkit.cli import REPORT_NOTEBOOKS, report

    root = write_synthetic_results(tmp_path / "results", **SIZE_CASES[case])
    failures = report(root, tmp_path / "figures", tmp_path / "latex", html=tmp_path / "report.html")
    executed = {name: (root / "_report" / name).read_text() for name in REPORT_NOTEBOOKS}
    assert failures == 0, [n for n, text in executed.items() if '"ename"' in text]
    for name in REPORT_NOTEBOOKS:
        assert (tmp_path / "latex" / f"{name.removesuffix('.ipynb')}_headline.json").exists(), name
    assert (tmp_path / "report.html").stat().st_size > 1000
    adaptive_nb = executed["15_adaptive.ipynb"]
    if case == "one_question":
        assert "anchor sizes k 5, 10, 20, 30 left out: the runs hold 1 questions" in adaptive_nb
    else:
        assert "anchor sizes k 20, 30 left out: the runs hold 12 questions" in adaptive_nb
        assert "DIF needs 'en' and another language" in executed["17_dif.ipynb"]
