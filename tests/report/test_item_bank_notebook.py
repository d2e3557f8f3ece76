"""notebooks/item_bank runs top to bottom with papermill on the item-bank sample (small lengths), writes its
figure and table, and records headline numbers equal to direct package calls on the same imported runs."""
import json
import warnings

import papermill as pm
import pytest
from paths import REPO

from mcqa_toolkit import interop
from mcqa_toolkit.datasets import load
from mcqa_toolkit.measure import population
from mcqa_toolkit.records.results import load_results

pytestmark = pytest.mark.notebooks


def test_item_bank_notebook_matches_direct_calls(tmp_path):
    params = {"RUNS_DIR": str(tmp_path / "runs"), "FIGURES_DIR": str(tmp_path / "figures"),
              "LATEX_DIR": str(tmp_path / "latex"), "LENGTHS": [5, 15], "N_RANDOM": 4, "SEED": 1}
    pm.execute_notebook(str(REPO / "notebooks" / "item_bank.ipynb"), str(tmp_path / "17.ipynb"), parameters=params,
                        kernel_name="python3", cwd=str(REPO / "notebooks"), progress_bar=False)
    head = json.loads((tmp_path / "latex" / "item_bank_headline.json").read_text())
    assert head["n_models"] == 24 and head["tools"] == {"inspect": 12, "lm-eval": 12} and head["unmatched"] == 0
    assert (tmp_path / "figures" / "item_bank_lomo_error.png").exists()
    assert (tmp_path / "latex" / "item_bank_lomo_error.tex").exists()

    interop.import_folder(REPO / "data" / "item_bank_sample", tmp_path / "direct", items=load("demo", language="pt"),
                          dataset="demo")
    _, _, u = population.population_responses(load_results(tmp_path / "direct"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", population.SmallPopulationWarning)
        summary = population.lomo_summary(population.leave_one_model_out(u, [5, 15], "2pl", 4, 1))
    for row in summary.itertuples():
        assert head["mae_theta"][f"{row.length} / {row.order}"] == pytest.approx(row.mae_theta, abs=1e-4)
        assert head["mae_accuracy"][f"{row.length} / {row.order}"] == pytest.approx(row.mae_accuracy, abs=1e-4)
