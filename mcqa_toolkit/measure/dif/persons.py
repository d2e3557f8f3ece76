"""Persons for DIF between languages when the test takers are language models.

A person is one response pattern: one model x strategy x language x shuffle (rule "shuffle", as the ENEM paper
counts test takers), or one model x strategy x language with an item right when more than half of its shuffles
are (rule "majority"; "first" keeps the lowest shuffle). Items are matched across languages on `parallel_id`
(translations share it), so the persons x items matrix holds the same questions in both groups. Records come from
our runs, from imported runs (interop writes the same record columns) or from the ENEM paper's released response
patterns (`interop.irt_llms`); unanswered and refused records count as wrong, annulled items are left out, and
items not answered by every person of both groups (e.g. a run's few-shot examples) are dropped and listed.

The same model answers in both groups, so the groups are not independent samples of persons: each model
contributes a cluster of patterns to each language. `block` (the model and strategy of each person) is what
the DIF functions take as `within`: crossed with the score strata (Mantel-Haenszel), as fixed effects
(logistic regression), or as the blocks inside which `dif.mh_permutation` swaps the language labels. The
inference is then about the runs of these models ("does this item change for these models when the language
changes?"), not about a population of models.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcqa_toolkit.measure.abilities import response_matrix
from mcqa_toolkit.measure.population import population_responses

RULES = ("shuffle", "majority", "first")


@dataclass(frozen=True)
class DifPersons:
    """persons: one row per person (the block columns, `between`, and shuffle for rule "shuffle"); responses:
    persons x items 0/1 (columns = item keys), rows aligned with persons; group: the `between` value per person;
    block: the person's block label ("model / strategy"); dropped: item keys left out."""

    persons: pd.DataFrame
    responses: pd.DataFrame
    group: pd.Series
    block: pd.Series
    dropped: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        return pd.concat([self.persons, self.responses], axis=1)


def dif_persons(records: pd.DataFrame, focal: Hashable, reference: Hashable, between: str = "language",
                block: Sequence[str] = ("model", "strategy"), item_key: str = "parallel_id",
                rule: str = "shuffle") -> DifPersons:
    """Persons x items of the records whose `between` is `focal` or `reference` (see the module docstring).
    Raises ValueError when a group has no record, when translations cannot be matched (empty `item_key`), or
    when fewer than 2 items are answered by every person."""
    if rule not in RULES:
        raise ValueError(f"rule {rule!r}: expected one of {RULES}")
    block = list(block)
    needed = [*block, between, item_key, "answer", "correct"] + (["shuffle"] if rule != "majority" else [])
    missing = [c for c in dict.fromkeys(needed) if c not in records.columns]
    if missing:
        raise ValueError(f"records lack column(s) {missing}")
    f = records[records[between].isin([focal, reference])]
    absent = [v for v in (focal, reference) if not (f[between] == v).any()]
    if absent:
        raise ValueError(f"no record with {between} = {absent}; found {sorted(map(str, records[between].unique()))}")
    if (f[item_key].astype(str).str.strip() == "").any():
        raise ValueError(f"some records have an empty {item_key}: translations cannot be matched (give the items "
                         f"a {item_key}, or use item_key='item_id' when the ids are shared)")
    if rule == "shuffle":
        persons, keys, u = response_matrix(f, by=[*block, between, "shuffle"], item_key=item_key)
    else:
        persons, keys, u = population_responses(f, person_by=[*block, between], item_key=item_key, rule=rule)
    complete = ~np.isnan(u).any(axis=0)
    if complete.sum() < 2:
        raise ValueError(f"only {int(complete.sum())} of {len(keys)} items are answered by every person of both "
                         f"groups: no DIF analysis (are the {between} runs on the same items, matched on {item_key}?)")
    kept = [k for k, ok in zip(keys, complete, strict=True) if ok]
    responses = pd.DataFrame(u[:, complete].astype(np.int8), columns=kept)
    label = pd.Series("all", index=persons.index) if not block else persons[block[0]].astype(str)
    for col in block[1:]:                                   # a loop over the block columns, not the persons
        label = label + " / " + persons[col].astype(str)
    return DifPersons(persons, responses, persons[between].rename("group"), label.rename("block"),
                      tuple(k for k, ok in zip(keys, complete, strict=True) if not ok))
