"""Differential item functioning (DIF): does an item work differently for two groups of persons of the same
ability? One method per module, each on plain arrays and frames (as girth keeps one estimator per file):

    base             the input every method takes (persons x items 0/1, one group label per person, at least
                     MIN_GROUP per group), DifResult, Benjamini-Hochberg across items
    mantel_haenszel  Mantel-Haenszel with the ETS A/B/C classes and purification of the matching score
    permutation      its permutation test, group labels swapped within blocks (one model answering in both groups)
    logistic         logistic regression: uniform and non-uniform DIF, Nagelkerke R^2 change classes
    fixed_irt        the residual difference at matched theta, item parameters fixed by a human calibration
    persons          persons x items of language models across languages (items matched on parallel_id)
    simulate         labelled simulated persons with DIF injected on known questions

docs/dif.md explains the choices; report.dif draws the report from them.
"""
from mcqa_toolkit.measure.dif.base import MIN_GROUP, DifResult, bh_adjust
from mcqa_toolkit.measure.dif.fixed_irt import irt_dif
from mcqa_toolkit.measure.dif.logistic import logistic_dif
from mcqa_toolkit.measure.dif.mantel_haenszel import ets_class, mantel_haenszel
from mcqa_toolkit.measure.dif.permutation import mh_permutation
from mcqa_toolkit.measure.dif.persons import DifPersons, dif_persons
from mcqa_toolkit.measure.dif.simulate import SimulatedDif, simulate_dif_persons

__all__ = ["MIN_GROUP", "DifResult", "bh_adjust", "ets_class", "mantel_haenszel", "mh_permutation", "logistic_dif",
           "irt_dif", "DifPersons", "dif_persons", "SimulatedDif", "simulate_dif_persons"]
