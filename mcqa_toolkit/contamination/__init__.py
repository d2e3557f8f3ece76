"""Contamination, one wing: did a model see an exam before it took it, and how well can that be told?

  fine_tuning   the fine-tuning recipe: contaminate a model on purpose (pages of solved questions; the torch
                loop: backends.hf.finetune)
  audit         the measurements of one model on one exam, in one folder (a letters run, familiarity, probe)
                written as a run folder is (records.audit_dir: identity, lock, resume, complete)
  familiarity   the audit's text measurement (Min-K% prob through scoring.min_k.min_k_prob, the one computation
                every run's min_k.parquet uses too; Min-K%++, zlib size, log-prob per byte)
  one module per detector, each giving an item score (higher = more likely seen):
    min_k_prob      Min-K% prob (and, in ordinary runs, its correlation with accuracy)
    min_k_pp        Min-K%++
    zlib_ratio      mean log-prob over zlib size
    reference_ratio log-prob per byte minus a reference model's (needs the reference: an upper bound for an
                    auditor of a model they did not train)
    probe           the masked-option probe (measurement and score)
    key_pull        the published key letter's pull under option shuffles
    fit_residual    observed minus expected share correct under the human 3PL
  detectors     every detector into one long frame (model, item, detector, score)
  model_tests   did this model see this exam: key-pull permutation test, dataset inference, person fit
  roc           where the exposed items are known: ROC AUC per detector, accuracy gains
  validation    the raw results of a validation from its audits (studies/contamination_validation.py)
The wing sits above run/ (the audit runs a run) and below report/ and the CLI. Nothing here imports torch.
"""
from mcqa_toolkit.contamination.audit import AUDIT_STRATEGY, Audit, audit_model, load_audit
from mcqa_toolkit.contamination.detectors import DETECTOR_NAMES, DETECTORS, contamination_scores
from mcqa_toolkit.contamination.familiarity import FAMILIARITY_COLUMNS, familiarity_table
from mcqa_toolkit.contamination.fine_tuning import Recipe, contaminate, exposure_pages
from mcqa_toolkit.contamination.fit_residual import fit_residual
from mcqa_toolkit.contamination.key_pull import key_pull, letter_probabilities
from mcqa_toolkit.contamination.min_k_pp import min_k_plus_plus, min_k_pp_score
from mcqa_toolkit.contamination.min_k_prob import (
    contamination_correlation,
    contamination_frame,
    min_k_accuracy_correlation,
    min_k_score,
)
from mcqa_toolkit.contamination.model_tests import dataset_inference, flag, key_pull_test, person_fit_test
from mcqa_toolkit.contamination.probe import probe_score, probe_table
from mcqa_toolkit.contamination.reference_ratio import reference_score
from mcqa_toolkit.contamination.roc import (
    accuracy_by_exposure,
    accuracy_gain,
    auc_se,
    detector_auc,
    roc_auc,
    roc_curves,
    roc_points,
)
from mcqa_toolkit.contamination.validation import validation_results
from mcqa_toolkit.contamination.zlib_ratio import zlib_bytes, zlib_score

__all__ = [
    "AUDIT_STRATEGY", "Audit", "audit_model", "load_audit", "FAMILIARITY_COLUMNS", "familiarity_table", "fit_residual",
    "key_pull", "letter_probabilities", "contamination_correlation", "contamination_frame",
    "min_k_accuracy_correlation",
    "min_k_score", "min_k_plus_plus", "min_k_pp_score", "dataset_inference", "flag", "key_pull_test",
    "person_fit_test", "probe_score", "probe_table", "Recipe", "contaminate", "exposure_pages", "reference_score",
    "accuracy_by_exposure", "accuracy_gain", "auc_se", "detector_auc", "roc_auc", "roc_curves", "roc_points",
    "DETECTOR_NAMES", "DETECTORS", "contamination_scores", "validation_results", "zlib_bytes", "zlib_score",
]
