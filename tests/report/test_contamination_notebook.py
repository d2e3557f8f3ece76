"""notebooks/contamination_validation runs top to bottom with papermill on raw results of simulated audits
(tests/contamination_runs.write_validation), writes its figures and tables, and records headline numbers equal to
direct package calls; its cells follow the house rules (one parameters cell of documented constants, thin cells,
headline numbers last)."""
import json

import papermill as pm
import pytest
from contamination_runs import write_validation
from paths import REPO

from mcqa_toolkit.contamination import detector_auc
from mcqa_toolkit.report import contamination


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    return write_validation(tmp_path_factory.mktemp("validation"))


@pytest.mark.notebooks
def test_notebook_matches_direct_calls(validation, tmp_path):
    params = {"DATA_DIR": str(validation), "FIGURES_DIR": str(tmp_path / "figures"),
              "LATEX_DIR": str(tmp_path / "latex")}
    pm.execute_notebook(str(REPO / "notebooks" / "contamination_validation.ipynb"), str(tmp_path / "19.ipynb"),
                        parameters=params, kernel_name="python3", cwd=str(REPO / "notebooks"), progress_bar=False)
    head = json.loads((tmp_path / "latex" / "contamination_validation_headline.json").read_text())
    assert set(head) == {"models_audited", "auc_at_3", "best_at_3", "auc_controls", "auc_cross_language_at_3",
                         "gain_on_exposed", "detection_rate", "false_alarms_clean_models"}
    for exam in ("pt2021", "en2021"):
        for ext in ("png", "pdf"):
            assert (tmp_path / "figures" / f"contamination_roc_{exam}.{ext}").stat().st_size > 1000
        assert (tmp_path / "latex" / f"contamination_auc_{exam}.tex").read_text().startswith("\\begin{table}")
    v = contamination.load_validation(validation)
    summary = contamination.auc_summary(detector_auc(v.scores, v.labels, by=("model", "exam", "language",
                                                                                     "detector")), v.models)
    on_exam = summary[summary["exam"] == "pt2021"]
    at_3 = on_exam[(on_exam["kind"] == "contaminated") & (on_exam["exposures"] == 3)].set_index("detector")["auc"]
    assert head["auc_at_3"] == pytest.approx(at_3.round(3).to_dict()) and head["best_at_3"] == at_3.idxmax()
    controls = detector_auc(v.scores[v.scores["model"].str.match(r"c\d")], v.labels,
                            by=("model", "exam", "detector")).groupby(["exam", "detector"])["auc"].mean()
    assert head["auc_controls"] == pytest.approx(controls.loc["pt2021"].round(3).to_dict())   # 2 controls x 2 splits
    rates = contamination.flag_summary(contamination.flag_tests(v.tests, v.models, 0.01)).set_index(["test", "kind"])
    clean = rates.loc[("key_pull", "clean models")]
    assert head["false_alarms_clean_models"]["key_pull"] == f"{int(clean['flagged'])} of {int(clean['n'])}"
    assert clean["n"] == 3 and clean["n_controls"] == 2
    assert head["models_audited"] == contamination.models_audited(v.scores, v.models, "pt2021")
    assert head["models_audited"]["control / 3"] == clean["n_controls"]


def test_notebook_has_one_parameters_cell_and_thin_cells():
    import nbformat

    nb = nbformat.read(REPO / "notebooks" / "contamination_validation.ipynb", as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assignments = [ln for ln in tagged[0].source.splitlines() if "=" in ln and not ln.startswith("#")]
    assert assignments and all(ln.split("=")[0].strip().isupper() and "#" in ln for ln in assignments)
    assert all(len(c.source.splitlines()) <= 16 for c in nb.cells if c.cell_type == "code")
    assert nb.cells[-1].source.startswith("# NBVAL_CHECK_OUTPUT")
