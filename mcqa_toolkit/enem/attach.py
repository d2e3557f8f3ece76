"""INEP's 3PL parameters attached to exam questions: `ItemParams`, by booklet, area and position.

Per booklet and area, the item set the questions follow is the caller's `item_set`, else the one set whose keys
agree with every answer of the file (booklet codes with two sets: `enem.itens_prova.split_item_sets`). Real
exam files meet three quirks here, handled as follows:
- a file name's booklet code that is not the booklet whose order the questions follow (the whole-exam files of
  2013 named 187-190, INEP's adapted two-set booklets, follow 169/173/176/180; a 2019 MT file named 522 follows
  518/526, which differ from 522 at one position): when no item set of the named booklet agrees with every
  answer, the booklet of the same area whose keys all agree is used (several: they must hold the same items),
  with a BookletMismatchWarning naming both; meta["co_prova"] is then the booklet used and
  meta["co_prova_named"] the file name's;
- item files that number positions within the area (2017): `enem.positions.file_position`;
- an answer that agrees with the key INEP published but not with the key an erratum says INEP scored
  (`enem.errata`, kind "key"): it is the question's own key, so it agrees; meta["tx_gabarito"] is the key INEP
  scored.
Anything else that disagrees is a DatasetError naming the file, the record and the item file's row.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.errata import errata
from mcqa_toolkit.enem.itens_prova import TP_LINGUA, read_itens_prova, split_item_sets
from mcqa_toolkit.enem.positions import file_position
from mcqa_toolkit.items import DatasetError, Item

__all__ = ["ItemParams", "BookletMismatchWarning"]


class BookletMismatchWarning(UserWarning):
    """An exam file's questions follow another booklet than the one its name gives; that booklet was used."""


@lru_cache(maxsize=1)
def _published_keys() -> dict[str, str]:
    """erratum id -> the key INEP published, for the "key" errata (the key an exam file prints)."""
    return {e.id: e.published_key for e in errata() if e.kind == "key" and e.published_key}


class ItemParams:
    """ITENS_PROVA rows split into item sets per (CO_PROVA, area), for attaching 3PL parameters to exam items."""

    def __init__(self, path: str | Path):
        self.path, self.df = Path(path), read_itens_prova(path)
        self.booklets = set(self.df["CO_PROVA"])
        years = self.df["NU_ANO"].dropna().unique()
        self.year = int(years[0]) if len(years) == 1 else None     # the file's year when it says
        self._sets: dict[tuple[int, str], list[pd.DataFrame]] = {}

    def item_sets(self, co_prova: int, area: str) -> list[pd.DataFrame]:
        """The item sets of one booklet and area (usually one); ValueError when the rows do not split."""
        key = (co_prova, area)
        if key not in self._sets:
            self._sets[key] = split_item_sets(self.df[(self.df["CO_PROVA"] == co_prova) & (self.df["SG_AREA"] == area)])
        return self._sets[key]

    def attach_all(self, pairs: Sequence[tuple[int, Item]], path: Any,
                   item_set: int | Mapping[int, int] | None = None) -> list[tuple[int, Item]]:
        """(record number, Item) pairs of one file with irt and INEP fields attached (see `_attach`).

        Per booklet, the item set is `item_set` (an int for every booklet, or {CO_PROVA: set}) or else the
        only set whose keys agree with the items' answers; meta["item_set"] records it (see the module docstring
        for a file whose questions follow another booklet)."""
        groups: dict[tuple[int, str], list[tuple[int, Item]]] = {}
        for n, item in pairs:
            co_prova = item.meta.get("co_prova")
            if co_prova is None:
                raise DatasetError(path, n, "co_prova", "item_params need the booklet code from a file name like "
                                                        "ENEM_2022_CN_CO_PROVA_1092.csv")
            if co_prova not in self.booklets:
                raise DatasetError(path, n, "co_prova", f"booklet {co_prova} not in {self.path.name}")
            area = item.meta.get("area")
            if area is None:
                raise DatasetError(path, n, "area", "item_params need the item's area (meta['area'], e.g. 'MT')")
            groups.setdefault((co_prova, area), []).append((n, item))
        chosen = {key: self._choose(key, members, path, item_set) for key, members in groups.items()}
        out = []
        for n, item in pairs:
            named = item.meta["co_prova"]
            used, k, sets = chosen[(named, item.meta["area"])]
            if used != named:
                item = item.with_(meta={**item.meta, "co_prova": used, "co_prova_named": named})
            out.append((n, self._attach(item, sets[k - 1], k, len(sets), path, n)))
        return out

    def _sets_of(self, co_prova: int, area: str) -> list[pd.DataFrame]:
        try:
            return self.item_sets(co_prova, area)
        except ValueError as e:
            raise DatasetError(self.path, "-", "CO_POSICAO", str(e)) from None

    def _choose(self, key: tuple[int, str], members: list[tuple[int, Item]], path: Any,
                item_set: int | Mapping[int, int] | None) -> tuple[int, int, list[pd.DataFrame]]:
        """(booklet used, item set, the booklet's item sets) for one booklet and area of the file."""
        co_prova, area = key
        sets = self._sets_of(co_prova, area)
        wanted = item_set.get(co_prova) if isinstance(item_set, Mapping) else item_set
        if wanted is not None:
            if wanted not in range(1, len(sets) + 1):
                raise DatasetError(path, "-", "item_set", f"item_set={wanted!r} but booklet {co_prova} ({area}) has "
                                   f"{len(sets)} item set(s) in {self.path.name}")
            return co_prova, wanted, sets
        first_clash = [self._first_clash(rows, members, path) for rows in sets]
        agree = [k + 1 for k, clash in enumerate(first_clash) if clash is None]
        if len(agree) == 1:
            return co_prova, agree[0], sets
        if agree:
            raise DatasetError(path, "-", "item_set", f"booklet {co_prova} ({area}) has {len(sets)} item sets in "
                               f"{self.path.name} and this file's answers agree with sets {agree}: pass item_set="
                               + " or ".join(map(str, agree)))
        other = self._other_booklet(co_prova, area, members, path)
        if other is not None:
            return other
        if len(sets) == 1:
            return co_prova, 1, sets         # _attach names the first disagreeing answer and the item file's row
        n, item, letter = min((c for c in first_clash if c is not None), key=lambda c: c[0])
        raise DatasetError(path, n, "answer", f"answer {item.answer_letter} differs from TX_GABARITO {letter!r} "
                           f"and no item set of booklet {co_prova} ({area}) in {self.path.name} agrees with "
                           "every answer of this file")

    def _other_booklet(self, named: int, area: str, members: list[tuple[int, Item]],
                       path: Any) -> tuple[int, int, list[pd.DataFrame]] | None:
        """The booklet (and set) of `area` whose keys agree with every answer when the named one's do not, or
        None; several that hold different items -> DatasetError."""
        found = []
        for co in sorted(set(self.df.loc[self.df["SG_AREA"] == area, "CO_PROVA"]) - {named}):
            try:
                sets = self.item_sets(co, area)
            except ValueError:
                continue
            for k, rows in enumerate(sets, start=1):
                try:
                    if self._first_clash(rows, members, path) is None:
                        found.append((co, k, sets))
                except DatasetError:        # a position this booklet does not have
                    continue
        if not found:
            return None
        items = {tuple(str(s[k - 1].loc[self._row(it, s[k - 1], path, n), "CO_ITEM"]) for n, it in members)
                 for co, k, s in found}
        if len(items) > 1:
            raise DatasetError(path, "-", "co_prova", f"the answers agree with no item set of booklet {named} but "
                               f"with booklets {[co for co, _, _ in found]} ({area}, {self.path.name}), which hold "
                               "different items: pass the booklet whose order this file follows (co_prova=)")
        co, k, sets = found[0]
        warnings.warn(BookletMismatchWarning(
            f"{path}: its answers agree with no item set of booklet {named} ({area}, {self.path.name}) but with every "
            f"key of booklet {co}" + (f" (and {[c for c, _, _ in found[1:]]}, same items)" if len(found) > 1 else "")
            + f": its questions follow booklet {co}, whose parameters are attached"), stacklevel=5)
        return co, k, sets

    def _agrees(self, item: Item, r: pd.Series) -> bool:
        """The item's key is the row's, or the key INEP published before an erratum said it scored another."""
        if item.answer is None or r["IN_ITEM_ABAN"] == 1 or item.answer_letter == r["TX_GABARITO"]:
            return True
        ids = str(r.get("ERRATUM", "") or "").split(",")
        return any(_published_keys().get(i) == item.answer_letter for i in ids if i)

    def _first_clash(self, rows: pd.DataFrame, members: list[tuple[int, Item]], path: Any):
        """(n, item, key letter) of the first scored item whose answer differs from this set's key, or None."""
        for n, item in members:
            r = rows.loc[self._row(item, rows, path, n)]
            if not self._agrees(item, r):
                return n, item, r["TX_GABARITO"]
        return None

    def _row(self, item: Item, rows: pd.DataFrame, path: Any, n: int) -> int:
        """The index label of the item's row in one item set: (position, and TP_LINGUA when both languages)."""
        co_prova, number, fl = (item.meta.get(k) for k in ("co_prova", "number", "foreign_language"))
        area = item.meta["area"]                                        # attach_all checked it
        year = self.year or item.year
        position = file_position(rows, year, area, number, fl) if year and number is not None else number
        at = rows[rows["CO_POSICAO"] == position]
        lingua = at["TP_LINGUA"].to_numpy()
        if len(at) > 1 and not np.isnan(lingua).any():  # English and Spanish items at one position
            if fl not in TP_LINGUA:
                raise DatasetError(path, n, "foreign_language", f"position {number} of booklet {co_prova} has an "
                                   "English and a Spanish item: say which (foreign_language='en'/'es')")
            at = at[lingua == TP_LINGUA[fl]]
        if len(at) != 1:
            raise DatasetError(path, n, "question_number", f"{len(at) or 'no'} rows in {self.path.name} for booklet "
                               f"{co_prova}, area {area}, position {position}; expected 1")
        r = at.iloc[0]
        if fl in TP_LINGUA and not np.isnan(r["TP_LINGUA"]) and r["TP_LINGUA"] != TP_LINGUA[fl]:
            raise DatasetError(path, n, "foreign_language", f"{self.path.name} row {at.index[0] + 1} is TP_LINGUA "
                               f"{int(r['TP_LINGUA'])}, not the {fl} item")
        return at.index[0]

    def _attach(self, item: Item, rows: pd.DataFrame, set_no: int, n_sets: int, path: Any, n: int) -> Item:
        """`item` with irt and INEP fields in meta; IN_ITEM_ABAN = 1 -> annulled, no irt, answer None."""
        label = self._row(item, rows, path, n)
        r = rows.loc[label]
        co_item = None if pd.isna(r["CO_ITEM"]) else int(r["CO_ITEM"])   # an item annulled before it got a code
        meta = {**item.meta, "co_item": co_item, "tx_gabarito": r["TX_GABARITO"], "params_row": label + 1,
                "co_habilidade": r.get("CO_HABILIDADE", ""), "item_set": set_no, "n_item_sets": n_sets,
                "tp_lingua": None if np.isnan(r["TP_LINGUA"]) else int(r["TP_LINGUA"])}
        if r["IN_ITEM_ABAN"] == 1:
            meta.update(annulled=True, tx_motivo_aban=str(r.get("TX_MOTIVO_ABAN", "")).strip(),
                        answer_before_annulment=item.answer_letter)
            return item.with_(irt=None, answer=None, meta=meta)
        if not self._agrees(item, r):
            raise DatasetError(path, n, "answer", f"answer {item.answer_letter} differs from TX_GABARITO "
                               f"{r['TX_GABARITO']!r} ({self.path.name} row {label + 1})")
        return item.with_(irt=(r["NU_PARAM_A"], r["NU_PARAM_B"], r["NU_PARAM_C"]), meta=meta)
