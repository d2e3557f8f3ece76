"""Measure: pure numbers from result frames (one row per run x item x shuffle, `records.columns`).

    scores        accuracy (item-bootstrap CI), Cohen's kappa per subject and macro-averaged
    exam_rules    medicina (+1.5/-0.4/0, weighted x60) and course-exam points, student comparison
    judging       several judges combined (mean / majority), their agreement (QWK, ICC), human grades
    position      position bias: chosen-position distribution, chi2, accuracy by key position, consistency
    circular      CircularEval: a question counts only if right under every rotation of its options
    pride         PriDe: the model's prior over option positions, estimated on a few items, and debiased choices
    paired        paired bootstrap of the accuracy difference between two runs on the same items, and of the
                  score difference between languages (kappa or accuracy, matched on parallel_id)
    population    item banks from a population of models: response matrix, calibration, fit, leave-one-out CAT
    compare       language gap, correlations, paired McNemar, item attributes vs discrimination
    dif/          differential item functioning, one method per module: Mantel-Haenszel (ETS A/B/C,
                  purification), its permutation test within blocks, logistic regression, IRT with fixed
                  parameters; persons x items of language models across languages (parallel_id); labelled
                  simulated persons with DIF injected on known questions
    abilities     records -> response matrices -> irt: theta, psd, l_z, DI, information, central regions
    adaptive      CAT length per SE target, CAT vs full-test theta (population and paired model runs), anchors by k
    summary       one run's headline numbers

Everything is importable from `mcqa_toolkit.measure`; no file I/O, printing or plotting here, and no torch.
Contamination (Min-K% and the other detectors, the model-level tests, ROC AUCs) is its own wing,
`mcqa_toolkit.contamination`.
"""
from mcqa_toolkit.measure.abilities import (
    GROUP_BY,
    PERSON_BY,
    central_region,
    discrimination_frame,
    eap_grid,
    has_discrimination,
    human_abilities,
    information_curve,
    item_discrimination,
    item_parameters,
    model_abilities,
    response_matrix,
    share_correct,
    theta_ci,
)
from mcqa_toolkit.measure.circular import circular_eval, is_rotation_set, rotations
from mcqa_toolkit.measure.compare import (
    ATTRIBUTES,
    DI_THRESHOLD,
    Correlation,
    attribute_chi2,
    correlation,
    dataset_correlation,
    di_attribute_tests,
    gap_correlations,
    has_number,
    item_attributes,
    language_gap,
    options_have_number,
    paired_mcnemar,
    quality_gap_correlation,
)
from mcqa_toolkit.measure.dif import (
    MIN_GROUP,
    DifPersons,
    DifResult,
    SimulatedDif,
    bh_adjust,
    dif_persons,
    ets_class,
    irt_dif,
    logistic_dif,
    mantel_haenszel,
    mh_permutation,
    simulate_dif_persons,
)
from mcqa_toolkit.measure.exam_rules import (
    MEDICINA_POINTS,
    MEDICINA_WEIGHTS,
    compare_to_students,
    course_exam_scores,
    medicina_final,
    medicina_points,
    medicina_score,
    student_statistics,
)
from mcqa_toolkit.measure.frames import DEFAULT_BY
from mcqa_toolkit.measure.judging import (
    HUMAN,
    apply_human_grades,
    compare_with_human,
    icc,
    judge_agreement,
    judgements_frame,
    quadratic_weighted_kappa,
)
from mcqa_toolkit.measure.paired import language_differences, paired_bootstrap
from mcqa_toolkit.measure.population import (
    MIN_PERSONS,
    SmallPopulationWarning,
    bank_fit,
    bank_items,
    calibrate_bank,
    leave_one_model_out,
    lomo_summary,
    population_responses,
)
from mcqa_toolkit.measure.position import (
    accuracy_by_position,
    position_bias,
    position_distribution,
    shuffle_consistency,
)
from mcqa_toolkit.measure.pride import PrideResult, debias, item_prior, permutation_debiased, pride
from mcqa_toolkit.measure.scores import accuracy, bootstrap_means, item_scores, kappa, kappa_by_subject, macro_average
from mcqa_toolkit.measure.sizes import Sizes, within
from mcqa_toolkit.measure.summary import summarize_run

__all__ = [
    "GROUP_BY", "PERSON_BY", "central_region", "discrimination_frame", "eap_grid", "has_discrimination",
    "human_abilities",
    "information_curve", "item_discrimination", "item_parameters", "model_abilities", "response_matrix",
    "share_correct", "theta_ci", "ATTRIBUTES", "DI_THRESHOLD", "Correlation", "attribute_chi2", "correlation",
    "dataset_correlation", "di_attribute_tests", "gap_correlations", "has_number", "item_attributes",
    "language_gap", "options_have_number", "paired_mcnemar", "quality_gap_correlation",
    "MEDICINA_POINTS", "MEDICINA_WEIGHTS", "compare_to_students",
    "course_exam_scores", "student_statistics", "medicina_final", "medicina_points", "medicina_score",
    "DEFAULT_BY", "HUMAN", "apply_human_grades", "compare_with_human", "icc", "judge_agreement", "judgements_frame",
    "quadratic_weighted_kappa", "accuracy_by_position", "position_bias", "position_distribution", "shuffle_consistency",
    "accuracy", "bootstrap_means", "item_scores", "kappa", "kappa_by_subject", "macro_average", "summarize_run",
    "circular_eval", "is_rotation_set", "rotations", "paired_bootstrap", "language_differences", "MIN_PERSONS",
    "SmallPopulationWarning",
    "bank_fit", "bank_items", "calibrate_bank", "leave_one_model_out", "lomo_summary", "population_responses",
    "PrideResult",
    "debias", "item_prior", "permutation_debiased", "pride", "MIN_GROUP", "DifResult", "bh_adjust", "ets_class",
    "mantel_haenszel", "mh_permutation", "irt_dif", "logistic_dif", "DifPersons", "dif_persons", "SimulatedDif",
    "simulate_dif_persons", "Sizes", "within",
]
