"""The search behind `enem.errata.discover`: the corrections of one exam-area's ITENS_PROVA rows that INEP's official
scores (NU_NOTA) imply, found from candidates (`discover_area`), greedy and bounded.

The procedure. Score every candidate with the published rows; then, round by round, try every correction of these
kinds on the items of booklets that still have a candidate off:
- "blank": all-blank answer sheets take the all-wrong pattern's score instead of 0;
- "key": an item's key is another letter; "annul": INEP did not score an item the file scores;
- "zip": in one reference booklet, one or two items INEP did not score are not flagged and the published
  parameters shift over them (`enem.errata`); pairs extend the BEAM single ones with the lowest squared error
  (corrections that change the rows alike, e.g. zips of two booklets listing the same items, count once);
- "estimate": an item with no published parameters of its own (flagged abandoned, or left out by a zip) was
  scored: its (a, b, c) are estimated from the candidates (`enem.errata.estimate`), on the current rows, and, when no
  other correction qualifies, on the BEAM best zips (a zip that explains no candidate without an estimate); an
  item is not fitted when making every inexact candidate who took it exact could not beat the best other move.
A correction's gain is the candidates it makes exact (to 0.1) minus those it makes inexact. The best one is
accepted when its gain is at least K (K_BLANK for the blank rule), preferring the simpler kind on ties; a key or
annul correction leaves out the booklets where it breaks more candidates than it fixes (adapted booklets are
printed apart). An estimate must also hold out: fitted on every other candidate and scored on the rest (both
ways), it must gain at least K there too. The search stops when nothing qualifies or after MAX_ROUNDS. A zip is
looked for only in booklets whose rows are still as published and an item is re-keyed or annulled at most once,
so that the errata file applies entry after entry as the search found them.

Why K = 2: each round tries thousands of corrections against the candidates that are off, so one of them making
a single candidate exact by chance is expected (a wrong correction moves a score by a few tenths, and the
rounding lands on NU_NOTA now and then); two candidates of the same correction by chance are not (on the
development set K = 1 accepts seven such one-candidate corrections, K = 2 none). The blank rule
is one hypothesis per exam-area with a sharp prediction (NU_NOTA equal to the all-wrong score, not 0), so one
candidate is evidence: K_BLANK = 1. Candidates whose booklet has item sets nothing tells apart are left out.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.errata.estimate import Estimate, FitData, fit, grid_loglik
from mcqa_toolkit.enem.errata.search import AreaSearch, Correction, Outcome, State

K = 2
K_BLANK = 1
BEAM = 5
MAX_ROUNDS = 8
_ORDER = {"blank": 0, "key": 1, "annul": 2, "zip": 3, "estimate": 4}


@dataclass(frozen=True)
class Found:
    """Accepted corrections (one, or a zip and the estimate it needs) with their evidence: the candidates made
    exact (fixed) and inexact (broken), exact counts before and after, and each estimate's held-out agreement."""

    corrections: tuple[Correction, ...]
    fixed: tuple[str, ...]
    broken: tuple[str, ...]
    exact_before: int
    exact_after: int
    estimates: dict = field(default_factory=dict)      # co_item -> (Estimate, held-out sentence)
    before: State | None = field(default=None, repr=False, compare=False)   # the rows it applies to


@dataclass(frozen=True)
class AreaResult:
    """One exam-area's search: candidates used and left out, exact as published and after, what was found."""

    year: int
    area: str
    n_candidates: int
    left_out: int
    exact_published: int
    exact_after: int
    found: tuple[Found, ...]
    search: AreaSearch = field(repr=False, compare=False)


@dataclass
class _Move:
    corrections: tuple[Correction, ...]
    state: State
    outcome: Outcome
    need: int
    estimate: tuple[int, Estimate] | None = None
    held_out: str = ""

    def rank(self) -> tuple:
        return (-self.outcome.gain, _ORDER[self.corrections[-1].kind] + len(self.corrections) - 1, self.outcome.sse)


def discover_area(rows: pd.DataFrame, cases: pd.DataFrame, year: int, area: str, k: int = K) -> AreaResult:
    """Search one exam-area (rows: its ITENS_PROVA rows as published; cases: its candidates, case-list columns)."""
    s = AreaSearch(rows, cases, year, area)
    start = int(s.exact().sum())
    found = []
    for _ in range(MAX_ROUNDS):
        if s.exact().all():
            break
        move = _best(s, k)
        if move is None:
            break
        before, applies_to = int(s.exact().sum()), s.state
        s.accept(move.state)
        s.accepted.append(move.corrections)
        estimates = {} if move.estimate is None else {move.estimate[0]: (move.estimate[1], move.held_out)}
        found.append(Found(move.corrections, tuple(s.ids[move.outcome.fixed]), tuple(s.ids[move.outcome.broken]),
                           before, int(s.exact().sum()), estimates, applies_to))
    return AreaResult(year, area, int(s.nota.size), s.left_out, start, int(s.exact().sum()), tuple(found), s)


def _best(s: AreaSearch, k: int) -> _Move | None:
    """The best qualifying move of this round (see the module docstring), or None."""
    hot = s.touches[s.groups_with_misses()].any(axis=0)          # rows some inexact candidate answered
    moves = _item_moves(s, hot, k)
    zips = _zip_moves(s, hot, k)
    moves += zips
    floor = max([m.outcome.gain for m in moves if m.outcome.gain >= m.need], default=0)
    if floor == 0:                  # a zip that needs an estimate: only when nothing simpler explains anyone
        for z in sorted(zips, key=lambda m: m.outcome.sse)[:BEAM]:
            moves += _estimate_moves(s, z, k, floor)
    moves += _estimate_moves(s, None, k, floor)
    for m in sorted((m for m in moves if m.outcome.gain >= m.need), key=_Move.rank):
        if m.estimate is None or _holds_out(s, m, k):
            return m
    return None


def _move(s: AreaSearch, corrections: tuple[Correction, ...], base: State | None = None, need: int = K) -> _Move:
    st = base if base is not None else s.state
    for corr in corrections[-1:] if base is not None else corrections:
        st = s.apply(st, corr)
    return _Move(corrections, st, s.evaluate(st), need)


def _item_moves(s: AreaSearch, hot: np.ndarray, k: int) -> list[_Move]:
    """The blank rule, then key and annul corrections of every scored item of the hot rows (one per item: an item
    already re-keyed or annulled is not corrected again)."""
    moves = []
    if not s.state.blank_all_wrong and (s.blank & ~s.exact()).any():
        moves.append(_move(s, (Correction("blank"),), need=K_BLANK))
    done = {c.co_item for f in s.accepted for c in f if c.kind in ("key", "annul")}
    for co in np.unique(s.co[hot & (s.co >= 0) & s.state.scored]):
        if co in done:
            continue
        rows = (s.co == co) & s.state.scored
        now = np.bincount(s.state.key[rows]).argmax()
        options = [Correction("annul", int(co))] + [Correction("key", int(co), key=L) for L in "ABCDE" if ord(L) != now]
        moves += [_scoped(s, _move(s, (corr,), need=k)) for corr in options]
    return _distinct(moves)


def _distinct(moves: list[_Move]) -> list[_Move]:
    """The first of the moves that leave the rows alike (same keys, flags and parameters)."""
    seen, out = set(), []
    for m in moves:
        st = m.state
        digest = b"".join(np.nan_to_num(x, nan=-9.0).tobytes() for x in (st.key, st.scored, st.a, st.b, st.c))
        if digest not in seen:
            seen.add(digest)
            out.append(m)
    return out


def _scoped(s: AreaSearch, m: _Move) -> _Move:
    """A key / annul move without the booklets where it breaks more candidates than it fixes."""
    corr = m.corrections[0]
    assert corr.co_item is not None  # _best scopes only its key / annul moves, each made with an item code
    booklets = s.booklets_listing(corr.co_item)
    fixed = pd.Series(s.cand_booklet[m.outcome.fixed]).value_counts()
    broken = pd.Series(s.cand_booklet[m.outcome.broken]).value_counts()
    worse = [b for b in booklets if broken.get(b, 0) > fixed.get(b, 0)]
    if not worse:
        return m
    keep = tuple(int(b) for b in booklets if b not in worse)
    if not keep:
        return m
    return _move(s, (replace(corr, booklets=keep),), need=m.need)


def _zip_moves(s: AreaSearch, hot: np.ndarray, k: int) -> list[_Move]:
    """Zips of one item in every reference booklet listing a hot item (one item set, rows as published), then
    zips of two items extending the BEAM single ones with the lowest squared error."""
    done = {c.reference_booklet for f in s.accepted for c in f if c.kind == "zip"}
    done |= set(s.booklet[s.changed_rows()])     # a zip is a pattern of the file as published: only there
    hot_items = set(s.co[hot & (s.co >= 0)])
    singles = []
    for b in np.unique(s.booklet):
        rows = s.rows[s.booklet == b]
        if b in done or rows.duplicated(["CO_POSICAO", "TP_LINGUA"]).any() or not hot_items & set(s.co[s.booklet == b]):
            continue
        candidates = rows.loc[rows["IN_ITEM_ABAN"] == 0, "CO_ITEM"].dropna().astype(int)
        singles += [_move(s, (Correction("zip", reference_booklet=int(b), not_scored=(i,)),), need=k)
                    for i in candidates]
    singles = _distinct(singles)
    pairs = []
    for m in sorted(singles, key=lambda m: m.outcome.sse)[:BEAM]:
        z = m.corrections[0]
        ref = s.rows[s.booklet == z.reference_booklet].sort_values("CO_POSICAO", kind="stable")
        order = [int(i) for i in ref.loc[ref["IN_ITEM_ABAN"] == 0, "CO_ITEM"].dropna()]
        pairs += [_move(s, (replace(z, not_scored=tuple(sorted((z.not_scored[0], j), key=order.index))),), need=k)
                  for j in order if j != z.not_scored[0]]
    return singles + _distinct(pairs)


def _estimate_moves(s: AreaSearch, zip_move: _Move | None, k: int, floor: int) -> list[_Move]:
    """Estimates of the items with no published parameters of their own that some inexact candidate took: on the
    current rows (zip_move None: flagged items, and those an accepted zip left out), or on a zip's rows (the
    reference booklet's flagged items and the zip's not-scored ones). An item is not fitted when even making
    every inexact candidate who took it exact would not gain more than `floor` (the best discrete correction)."""
    st = s.state if zip_move is None else zip_move.state
    exact = s.exact(s.scores(st)) if zip_move is not None else s.exact()
    base_gain = int(exact.sum() - s.exact().sum())
    flagged = set(s.co[(~s.published.scored) & (s.co >= 0)])
    if zip_move is None:
        hot = s.touches[s.groups_with_misses()].any(axis=0)
        items = {i for i in set(s.co[hot & (s.co >= 0) & ~st.scored]) if i in flagged or i in _zip_left_out(s)}
        prefix: tuple[Correction, ...] = ()
    else:
        z = zip_move.corrections[0]
        ref_items = set(s.co[s.booklet == z.reference_booklet])
        items = {i for i in ref_items if i >= 0 and (i in flagged or i in z.not_scored)}
        prefix = zip_move.corrections
    moves = []
    for i in sorted(items):
        took = _takers(s, int(i))
        if base_gain + int((~exact[took]).sum()) <= max(floor, k - 1):
            continue
        data = fit_data(s, st, int(i))
        if data is None:
            continue
        est = fit(data, _starts(s))
        corr = Correction("estimate", int(i), unpublished=((int(i), est.a, est.b, est.c),))
        m = _move(s, (*prefix, corr), base=st, need=k)
        m.estimate = (int(i), est)
        moves.append(m)
    return moves


def _takers(s: AreaSearch, co_item: int) -> np.ndarray:
    """The candidates (indices) who took `co_item`, blank sheets left out."""
    rows = s.co == co_item
    groups = [g.members for gi, g in enumerate(s.groups) if s.touches[gi, rows].any()]
    took = np.concatenate(groups) if groups else np.zeros(0, np.int64)
    return took[~s.blank[took]]


def _zip_left_out(s: AreaSearch) -> set[int]:
    return {i for f in s.accepted for c in f if c.kind == "zip" for i in c.not_scored}


def _starts(s: AreaSearch) -> np.ndarray:
    """The exam-area's published (a, b, c), one row per scored item."""
    ok = s.published.scored & (s.co >= 0)
    df = pd.DataFrame({"co": s.co[ok], "a": s.published.a[ok], "b": s.published.b[ok], "c": s.published.c[ok]})
    return df.drop_duplicates("co")[["a", "b", "c"]].to_numpy()


def fit_data(s: AreaSearch, st: State, co_item: int, members: np.ndarray | None = None) -> FitData | None:
    """The objective's data for estimating `co_item` under `st` from the candidates who took it (optionally only
    `members`, candidate indices), blank sheets left out; None when nobody took it."""
    bases, us, notas = [], [], []
    for gi, g in enumerate(s.groups):
        u, pos, scored = s.responses(st, gi)
        j = s.co[pos] == co_item
        if not j.any():
            continue
        keep = ~s.blank[g.members] & (np.isin(g.members, members) if members is not None else True)
        other = scored & ~j
        bases.append(grid_loglik(u[keep][:, other].astype(float), st.a[pos][other], st.b[pos][other],
                                 st.c[pos][other]))
        us.append(u[keep][:, np.flatnonzero(j)[0]])
        notas.append(s.nota[g.members][keep])
    if not bases or not sum(len(n) for n in notas):
        return None
    return FitData(np.concatenate(bases), np.concatenate(us), np.concatenate(notas), s.area)


def _holds_out(s: AreaSearch, m: _Move, k: int) -> bool:
    """2-fold check of an estimate: fitted on every other candidate who took the item, scored on the rest."""
    assert m.estimate is not None  # _best checks only moves with an estimate
    i, _ = m.estimate
    base = m.state.copy()
    rows = s.co == i
    base.scored[rows] = False                     # the rows the estimate starts from
    took = _takers(s, i)
    exact_without = np.abs(s.scores(base)[took] - s.nota[took]) < 0.05
    hits = 0
    for fold in (0, 1):
        train, test = took[np.arange(took.size) % 2 == fold], took[np.arange(took.size) % 2 != fold]
        data = fit_data(s, base, i, train)
        if data is None or test.size == 0:
            return False
        est = fit(data, _starts(s))
        trial = s.apply(base, Correction("estimate", i, unpublished=((i, est.a, est.b, est.c),)))
        hits += int((np.abs(s.scores(trial)[test] - s.nota[test]) < 0.05).sum())
    m.held_out = (f"2-fold (fitted on every other candidate who took the item, scored on the rest): {hits} of "
                  f"{took.size} held-out candidates exact, {int(exact_without.sum())} without the item")
    return hits - int(exact_without.sum()) >= k
