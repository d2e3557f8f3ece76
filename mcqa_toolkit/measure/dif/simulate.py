"""Labelled simulated persons with DIF injected on known items: what the DIF report shows when the runs hold
too few response patterns per language (the demo: one model and 1-3 shuffles per strategy), and a recovery
check of the DIF measures on the exam's own items.

SIMULATED, not test takers: `simulate_dif_persons(items, reference, focal, ...)` draws 0/1 answers from the
items' 3PL (`Item.irt`, shared by the translations of a question; `irt.simulate_3pl`) for a reference group,
theta ~ N(0, 1), and one group per focal language, theta ~ N(impact, 1) (a lower mean: the groups differ in
ability, which the matching on the total score must absorb, not flag). For each focal language, `dif`
questions are drawn (seeded per language, so each language has its own) and their difficulty for that group is
b + shift, the shifts taken in turn from `shifts` (> 0: harder for the focal group, uniform DIF). With the
defaults (four questions: b shifted by +1.0, -1.0, +0.5, -0.5; 500 persons a group) a shift of 1 on an item of
a ~ 1.3 moves the log-odds by about 1.3 and delta_MH by about 2.35 x 1.3 (1 - c) ~ 2.4 (class C); a shift of 0.5
lands near the B band. Which class each injected item gets is what the analysis finds; `truth` keeps the shifts.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcqa_toolkit import irt
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.abilities import item_parameters
from mcqa_toolkit.measure.dif.persons import DifPersons

SHIFTS = (1.0, -1.0, 0.5, -0.5)   # b shifts of the injected questions, in logits (> 0: harder for the focal group)
BLOCK = "simulated"               # the block label of every simulated person (one block: no model)


@dataclass(frozen=True)
class SimulatedDif:
    """persons: the simulated response patterns as `measure.dif.persons` gives them (group = language, block =
    "simulated", persons has person, language, theta); truth: one row per focal language x question, with the b
    shift injected (0 for questions without DIF) and `injected` (shift != 0)."""

    persons: DifPersons
    truth: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        return self.persons.to_frame()


def simulate_dif_persons(items: ItemSet, reference: str, focal: Sequence[str], n_per_group: int = 500,
                         dif: int = 4, shifts: Sequence[float] = SHIFTS, impact: float = -0.3,
                         seed: int = 0) -> SimulatedDif:
    """Seeded simulated persons with DIF on `dif` questions per focal language (see the module docstring).
    Questions are the items' parallel ids with IRT parameters; raises ValueError without any, or when `dif`
    exceeds their number."""
    focal = [str(f) for f in focal]
    if reference in focal or not focal:
        raise ValueError(f"focal languages {focal} must be non-empty and exclude the reference {reference!r}")
    if n_per_group < 1 or dif < 0 or not shifts:
        raise ValueError(f"n_per_group = {n_per_group}, dif = {dif}, shifts = {tuple(shifts)}: need n >= 1, "
                         "dif >= 0 and at least one shift")
    params = item_parameters(items)
    if params.empty:
        raise ValueError(f"no item of {items.name!r} has IRT parameters: nothing to simulate from")
    if dif > len(params):
        raise ValueError(f"dif = {dif} questions asked for, but only {len(params)} have IRT parameters")
    a, b, c = (params[k].to_numpy(float) for k in ("a", "b", "c"))
    keys = list(params.index)
    rng = np.random.default_rng(seed)
    blocks, labels, thetas, truth = [], [], [], []
    for k, lang in enumerate([reference, *focal]):
        shift = np.zeros(len(keys))
        if k:   # a focal language: its own questions, drawn from a generator seeded by (seed, k)
            chosen = np.random.default_rng([seed, k]).choice(len(keys), size=dif, replace=False)
            shift[chosen] = np.resize(np.asarray(shifts, dtype=float), dif)
            truth.append(pd.DataFrame({"language": lang, "parallel_id": keys, "b_shift": shift}))
        theta = rng.normal(impact if k else 0.0, 1.0, n_per_group)
        blocks.append(irt.simulate_3pl(theta, a, b + shift, c, rng))
        labels += [lang] * n_per_group
        thetas.append(theta)
    persons = pd.DataFrame({"person": np.arange(len(labels)), "language": labels, "theta": np.concatenate(thetas)})
    responses = pd.DataFrame(np.vstack(blocks).astype(np.int8), columns=keys)
    p = DifPersons(persons, responses, persons["language"].rename("group"),
                   pd.Series(BLOCK, index=persons.index, name="block"))
    t = pd.concat(truth, ignore_index=True)
    return SimulatedDif(p, t.assign(injected=t["b_shift"] != 0))
