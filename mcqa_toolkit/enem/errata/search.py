"""The search space of `enem.errata.discover`: one exam-area's item rows as flat arrays, its candidates grouped by
booklet layout, the corrections that can be made to the rows, and their effect on the candidates' scores.

`AreaSearch(rows, cases, year, area)` takes the exam-area's ITENS_PROVA rows as published and its candidates
(case-list columns: case, CO_PROVA, TP_LINGUA, answers, NU_NOTA, key). Candidates whose booklet has several
item sets that nothing tells apart, or whose answers cannot be laid onto their booklet, are left out (`left_out`
counts them): their answers cannot be paired with items. A candidate's key (TX_GABARITO) only chooses between
item sets: where it disagrees with the file, that may be the very erratum sought. A `State` holds every row's
key, scored flag and (a, b, c) and the blank-sheet rule; `apply` makes a `Correction` on it (the kinds of
`enem.errata`: zip, key, annul, blank, and an estimate); `evaluate` scores the candidates a change touches with
the vectorised kernel of `enem.booklet` and says which became exact (|score - NU_NOTA| < 0.05) and which stopped.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.booklet import (
    ENEM_CONSTANTS,
    Booklet,
    KeyMismatch,
    booklet_sets,
    choose_sets,
    layout,
    score_chars,
    valid_rows,
)
from mcqa_toolkit.enem.errata.apply import zip_correction
from mcqa_toolkit.enem.errata.format import PARAMS, Erratum

EXACT = 0.05            # |score - NU_NOTA| below this: equal at 0.1 (both are rounded to 0.1)


@dataclass(frozen=True)
class Correction:
    """One change to the rows: kind "zip" (reference_booklet, not_scored, unpublished ((co_item, a, b, c), ...)),
    "key" (co_item -> key, in `booklets` or all), "annul" (co_item, in `booklets` or all), "blank", or
    "estimate" (co_item scored with unpublished[0]'s estimated (a, b, c) in every booklet listing it)."""

    kind: str
    co_item: int | None = None
    key: str = ""
    booklets: tuple[int, ...] = ()
    reference_booklet: int | None = None
    not_scored: tuple[int, ...] = ()
    unpublished: tuple[tuple[int, float, float, float], ...] = ()


@dataclass(frozen=True)
class State:
    """Every row's key (uint8 letter), scored flag and a, b, c (flat, in row order), and the blank rule."""

    key: np.ndarray
    scored: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    blank_all_wrong: bool = False

    def copy(self) -> State:
        return State(self.key.copy(), self.scored.copy(), self.a.copy(), self.b.copy(), self.c.copy(),
                     self.blank_all_wrong)


@dataclass(frozen=True)
class Outcome:
    """A correction's effect: the candidates whose score changed (indices), their new scores, those that became
    exact (fixed, indices) and those that stopped being (broken), and the squared error of all candidates."""

    changed: np.ndarray
    score: np.ndarray
    unrounded: np.ndarray
    fixed: np.ndarray = field(repr=False)
    broken: np.ndarray = field(repr=False)
    sse: float = 0.0

    @property
    def gain(self) -> int:
        return int(self.fixed.size - self.broken.size)


@dataclass
class _Group:
    template: Booklet
    pos: np.ndarray        # flat row positions of the set's items, in booklet order
    src: np.ndarray        # layout: each item's position in the answer string (-1 not taken)
    chars: np.ndarray      # (m, length) uint8
    members: np.ndarray    # candidate indices


class AreaSearch:
    """One exam-area: rows, candidates and the current state with its scores (see the module docstring)."""

    def __init__(self, rows: pd.DataFrame, cases: pd.DataFrame, year: int | None, area: str):
        self.year, self.area = year, area
        self.rows = rows.reset_index(drop=True)
        self.co = self.rows["CO_ITEM"].fillna(-1).to_numpy(dtype=np.int64)
        self.booklet = self.rows["CO_PROVA"].to_numpy(dtype=np.int64)
        self.published = State(self.rows["TX_GABARITO"].astype(str).str[:1].str.pad(1).to_numpy().astype("S1")
                               .view(np.uint8).copy(), (self.rows["IN_ITEM_ABAN"] != 1).to_numpy(),
                               *(self.rows[p].to_numpy(float).copy() for p in PARAMS))
        self.groups: list[_Group] = []
        self.left_out = 0
        ids: list[str] = []
        nota: list[np.ndarray] = []
        blank: list[np.ndarray] = []
        cand_booklet: list[np.ndarray] = []
        for (co, lang, length, key), g in cases.groupby(
                [cases["CO_PROVA"], cases["TP_LINGUA"].astype("Int64").fillna(-1), cases["answers"].str.len(),
                 cases["key"].fillna("")], sort=True):
            group, ok = self._group(int(co), int(lang) if lang >= 0 else None, int(length), str(key), g, len(ids))
            self.left_out += len(g) - len(ok)
            if group is None:
                continue
            self.groups.append(group)
            m = group.members.size
            ids += [str(x) for x in ok["case"]]
            nota.append(ok["NU_NOTA"].to_numpy(float))
            sheet = group.chars[:, group.src[group.src >= 0]]
            blank.append((sheet == ord(".")).all(axis=1))
            cand_booklet.append(np.full(m, co))
        self.ids = np.array(ids, dtype=object)
        self.nota = np.concatenate(nota) if nota else np.zeros(0)
        self.blank = np.concatenate(blank) if blank else np.zeros(0, bool)
        self.cand_booklet = np.concatenate(cand_booklet) if cand_booklet else np.zeros(0, np.int64)
        self.touches = np.zeros((len(self.groups), len(self.rows)), bool)   # group x row: the group's items
        for i, g in enumerate(self.groups):
            self.touches[i, g.pos[g.src >= 0]] = True
        self.state = self.published
        self.accepted: list[tuple[Correction, ...]] = []      # kept by the caller (enem.errata.discover)
        self.score, self.unrounded = np.zeros(self.nota.size), np.zeros(self.nota.size)
        self.score, self.unrounded = self._score(self.state, range(len(self.groups)))

    def _group(self, co: int, lingua: int | None, length: int, key: str, g: pd.DataFrame,
               start: int) -> tuple[_Group | None, pd.DataFrame]:
        """The group of candidates g (one booklet, language, length, key) and those of them it keeps."""
        rows = self.rows[self.booklet == co]
        none = g.iloc[:0]
        if rows.empty:
            return None, none
        try:
            sets = booklet_sets(rows, self.area)   # the key only chooses an item set: it may show a key erratum
            chosen, rule = choose_sets(sets, (key or None) if len(sets) > 1 else None, lingua, None, self.area)
            src = layout(chosen[0], length, lingua)
        except (KeyMismatch, ValueError):
            return None, none
        if rule == "undetermined":
            return None, none
        chars = np.frombuffer("".join(g["answers"]).encode("latin-1"), dtype=np.uint8).reshape(len(g), length)
        ok = valid_rows(chars, src) & g["NU_NOTA"].notna().to_numpy()
        if not ok.any():
            return None, none
        bk = chosen[0]
        return _Group(bk, np.asarray(bk.rows, dtype=np.int64), src, chars[ok],
                      np.arange(start, start + int(ok.sum()))), g[ok]

    # ---- scoring ------------------------------------------------------------------------------------------------

    def _score(self, st: State, groups) -> tuple[np.ndarray, np.ndarray]:
        """Scores of every candidate (n,): those of `groups` from `st`, the others from the current state."""
        score = getattr(self, "score", np.zeros(self.nota.size)).copy()
        unrounded = getattr(self, "unrounded", np.zeros(self.nota.size)).copy()
        k, d = ENEM_CONSTANTS[self.area]
        for i in groups:
            g = self.groups[i]
            p = g.pos
            bk = replace(g.template, key=st.key[p], scored=st.scored[p], a=st.a[p], b=st.b[p], c=st.c[p])
            r = score_chars(g.chars, bk, g.src, self.area, g.members, not st.blank_all_wrong)
            score[g.members] = r["score"]
            blank = self.blank[g.members] & ~st.blank_all_wrong
            unrounded[g.members] = np.where(blank, 0.0, k * r["theta"] + d)
        return score, unrounded

    def exact(self, score: np.ndarray | None = None) -> np.ndarray:
        """(n,) bool: equal to NU_NOTA at 0.1 (the current scores by default)."""
        return np.abs((self.score if score is None else score) - self.nota) < EXACT

    def evaluate(self, st: State) -> Outcome:
        """Score the candidates whose items (or blank rule) differ between `st` and the current state."""
        diff = ((st.key != self.state.key) | (st.scored != self.state.scored)
                | ~_same(st.a, self.state.a) | ~_same(st.b, self.state.b) | ~_same(st.c, self.state.c))
        touched: set[int] = set(np.flatnonzero(self.touches[:, diff].any(axis=1)).tolist())
        if st.blank_all_wrong != self.state.blank_all_wrong:
            touched |= {i for i, g in enumerate(self.groups) if self.blank[g.members].any()}
        groups = sorted(touched)
        score, unrounded = self._score(st, groups)
        changed = np.concatenate([self.groups[i].members for i in groups]) if groups else np.zeros(0, np.int64)
        before, after = self.exact()[changed], self.exact(score)[changed]
        return Outcome(changed, score[changed], unrounded[changed], changed[after & ~before],
                       changed[before & ~after], float(((unrounded - self.nota) ** 2).sum()))

    def scores(self, st: State) -> np.ndarray:
        """Every candidate's score under `st` (n,)."""
        out = self.evaluate(st)
        score = self.score.copy()
        score[out.changed] = out.score
        return score

    def accept(self, st: State) -> None:
        """Make `st` the current state."""
        out = self.evaluate(st)
        self.score[out.changed], self.unrounded[out.changed] = out.score, out.unrounded
        self.state = st

    def sse(self) -> float:
        return float(((self.unrounded - self.nota) ** 2).sum())

    # ---- corrections ----------------------------------------------------------------------------------------------

    def apply(self, st: State, corr: Correction) -> State:
        """`st` with `corr` made (a new State)."""
        new = st.copy()
        if corr.kind == "blank":
            return replace(new, blank_all_wrong=True)
        if corr.kind == "zip":
            ref = self.rows[self.booklet == corr.reference_booklet]
            e = Erratum("search", "zip", self.year or 0, self.area, reference_booklet=corr.reference_booklet,
                        not_scored=corr.not_scored,
                        unpublished=tuple({"co_item": i, "a": a, "b": b, "c": c} for i, a, b, c in corr.unpublished))
            table = zip_correction(ref, e)
            codes = np.fromiter(table, dtype=np.int64)
            values = np.array(list(table.values()), dtype=float).reshape(-1, 4)
            at = pd.Index(codes).get_indexer(self.co)
            rows = at >= 0
            new.scored[rows] = values[at[rows], 0] == 0
            for arr, j in ((new.a, 1), (new.b, 2), (new.c, 3)):
                arr[rows] = values[at[rows], j]
            return new
        rows = self.co == corr.co_item
        if corr.booklets:
            rows &= np.isin(self.booklet, corr.booklets)
        if corr.kind == "estimate":
            _, a, b, c = corr.unpublished[0]
            new.scored[rows], new.a[rows], new.b[rows], new.c[rows] = True, a, b, c
        elif corr.kind == "key":
            new.key[rows] = ord(corr.key)
        elif corr.kind == "annul":
            new.scored[rows] = False
        else:
            raise ValueError(f"unknown correction kind {corr.kind!r}")
        return new

    def changed_rows(self, st: State | None = None) -> np.ndarray:
        """(rows,) bool: rows whose key, flag or parameters differ from the file as published (current state)."""
        st, pub = st or self.state, self.published
        return ((st.key != pub.key) | (st.scored != pub.scored) | ~_same(st.a, pub.a) | ~_same(st.b, pub.b)
                | ~_same(st.c, pub.c))

    def booklets_listing(self, co_item: int) -> np.ndarray:
        """The booklets whose rows list `co_item`."""
        return np.unique(self.booklet[self.co == co_item])

    def groups_with_misses(self) -> np.ndarray:
        """(groups,) bool: groups with a candidate not exact now."""
        miss = ~self.exact()
        return np.array([miss[g.members].any() for g in self.groups], dtype=bool)

    def responses(self, st: State, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Group i under `st`: (u (m, J) 0/1 of its administered items, their flat positions (J,), scored (J,))."""
        g = self.groups[i]
        taken = g.src >= 0
        pos = g.pos[taken]
        u = (g.chars[:, g.src[taken]] == st.key[pos]).astype(np.uint8)
        return u, pos, st.scored[pos]


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x == y) | (np.isnan(x) & np.isnan(y))
