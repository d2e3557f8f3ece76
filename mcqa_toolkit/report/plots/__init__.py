"""Paper figures: the ENEM paper's Figures 1-5 (`plots.irt`), the language gap (`plots.language`), the
position-bias and contamination plots (`plots.exam`), the ENEM score validation and a model among the
candidates (`plots.enem`), the DIF deltas (`plots.dif`), the contamination detectors' ROC curves
(`plots.contamination`), the adaptive-testing figures (`plots.adaptive`) and
the course-exam comparison with the students (`plots.course_exam`), all importable from
`mcqa_toolkit.report.plots`.

Every function takes tidy frames made by `measure` (or `irt`) and returns a matplotlib
`Figure`; none computes a statistic. Sizes fit a paper page (7 in) or column (3.4 in), every font is >= 9 pt
at the saved size, colours come from seaborn's colour-blind palette with a marker per level so figures
survive greyscale printing, and legends sit above the panels. Facets: `col` / `row` name a column (or a tuple
of columns, shown as "a · b") that splits the panels; filter person-level frames to one strategy, or facet by
it. `save(fig, directory, name)` writes PNG (300 dpi) and PDF.

    fig = plots.accuracy_theta(abilities, humans, measure.central_region(abilities))
    plots.save(fig, "figures", "irt_fig1")
"""
from mcqa_toolkit.report.plots._layout import COLUMN_WIDTH, PAGE_WIDTH, STYLE, save
from mcqa_toolkit.report.plots.adaptive import (
    adaptive_savings,
    anchor_error,
    bank_error,
    cat_agreement,
    cat_length,
    model_cat_vs_full,
)
from mcqa_toolkit.report.plots.contamination import detector_roc
from mcqa_toolkit.report.plots.course_exam import student_comparison
from mcqa_toolkit.report.plots.dif import dif_deltas
from mcqa_toolkit.report.plots.enem import among_candidates, score_agreement
from mcqa_toolkit.report.plots.exam import (
    accuracy_by_position,
    min_k_accuracy,
    position_distributions,
    shuffle_consistency,
)
from mcqa_toolkit.report.plots.irt import (
    accuracy_theta,
    discrimination_distributions,
    information_theta,
    lz_theta,
    response_patterns,
)
from mcqa_toolkit.report.plots.language import language_scores, quality_gap

__all__ = ["COLUMN_WIDTH", "PAGE_WIDTH", "STYLE", "save", "accuracy_theta", "response_patterns", "lz_theta",
           "information_theta", "discrimination_distributions", "language_scores", "quality_gap",
           "position_distributions", "accuracy_by_position", "shuffle_consistency", "min_k_accuracy",
           "score_agreement", "cat_length", "cat_agreement", "model_cat_vs_full", "adaptive_savings",
           "anchor_error", "bank_error", "student_comparison", "dif_deltas",
           "among_candidates", "detector_roc"]
