"""Psychometrics for LLM exam results: IRT models, ability, person fit, calibration, adaptive testing, anchors.

Generic and pure numpy/scipy: no file I/O, nothing exam-specific (ENEM's official scoring is mcqa_toolkit.enem).
Response matrices are persons x items of 0/1 with NaN = not administered; item parameters are 1-D arrays
a, b, c on the logistic metric with scaling constant D (1 unless given).

    from mcqa_toolkit import irt
    est = irt.ability_eap(responses, a, b, c)            # theta, psd
    lz = irt.person_fit_lz(responses, est.theta, a, b, c)
    enem.score_answers("CEAEA...", booklet_items, "MT")   # official ENEM score
    state = irt.cat_start(irt.CatBank(a, b, c), irt.CatConfig(se_target=0.3))  # adaptive testing
    anchors = irt.select_anchors(a, b, c, k=10)          # tinyBenchmarks-style anchor items
"""
from mcqa_toolkit.irt.ability import (
    AbilityEstimate,
    ability_eap,
    ability_eap_sum_score,
    ability_map,
    ability_ml,
    ability_wle,
    normal_grid,
)
from mcqa_toolkit.irt.anchors import (
    AnchorEstimate,
    AnchorEvaluation,
    AnchorSet,
    anchor_estimate,
    anchor_evaluate,
    gpirt_lambda,
    item_features,
    kmeans,
    random_anchors,
    select_anchors,
)
from mcqa_toolkit.irt.calibrate import Calibration, threepl_mml, twopl_mml
from mcqa_toolkit.irt.cat import CatBank, CatConfig, CatState, cat_next, cat_replay, cat_start, cat_update
from mcqa_toolkit.irt.cat_sim import (
    CatSimulation,
    CatSummary,
    cat_random_baseline,
    cat_simulate,
    cat_summary,
    sympson_hetter,
)
from mcqa_toolkit.irt.fit import (
    ItemFit,
    ItemStatistics,
    discrimination_index,
    item_fit,
    item_statistics,
    person_fit_lz,
    person_fit_lz_star,
    point_biserial,
    proportion_correct,
    total_score,
)
from mcqa_toolkit.irt.models import (
    b_from_intercept,
    check_items,
    irf,
    irf_1pl,
    irf_2pl,
    irf_3pl,
    irf_derivative,
    item_information,
    standard_error,
    test_information,
)
from mcqa_toolkit.irt.simulate import simulate_3pl
from mcqa_toolkit.irt.versus_humans import (
    GuessingBaseline,
    ItemResiduals,
    expected_correct,
    item_residuals,
    percentile_of,
    random_guessing_baseline,
)

__all__ = [
    "AbilityEstimate", "ability_eap", "ability_eap_sum_score", "ability_map", "ability_ml", "ability_wle",
    "normal_grid", "Calibration", "twopl_mml", "threepl_mml", "CatBank", "CatConfig", "CatState", "cat_next",
    "cat_replay", "cat_start", "cat_update", "CatSimulation", "CatSummary", "cat_random_baseline", "cat_simulate",
    "cat_summary", "sympson_hetter", "AnchorEstimate", "AnchorEvaluation", "AnchorSet", "anchor_estimate",
    "anchor_evaluate", "gpirt_lambda", "item_features", "kmeans", "random_anchors", "select_anchors",
    "GuessingBaseline", "ItemResiduals", "expected_correct", "item_residuals", "percentile_of",
    "random_guessing_baseline", "ItemFit", "ItemStatistics", "item_fit",
    "discrimination_index", "item_statistics", "person_fit_lz", "person_fit_lz_star", "point_biserial",
    "proportion_correct", "total_score", "b_from_intercept", "check_items", "irf", "irf_1pl", "irf_2pl", "irf_3pl",
    "irf_derivative", "item_information", "standard_error", "test_information", "simulate_3pl",
]
