"""Computerised adaptive testing (CAT) on a bank of items with known (human) 3PL parameters.

Selection: maximum Fisher information at the current EAP theta among the eligible items, with optional
- content balancing (Kingsbury & Zara): the subject furthest below its target proportion first, then
  maximum information within it;
- Sympson-Hetter exposure control: the most informative item i is administered with probability K_i;
  a rejected item is set aside for that examinee and the next one is tried (if every eligible item is
  rejected, the most informative is administered anyway);
- randomesque: a uniform pick among the `randomesque` most informative candidates.
Ability: EAP after every response. The log posterior on the grid is accumulated one response at a time
and its moments taken row by row (`posterior_moments`, shared with `ability_eap`), so an examinee gets
bit-identical numbers alone (`cat_start`/`cat_next`/`cat_update`) or in a batch (`cat_sim.cat_simulate`).
Randomness: the random numbers of examinee j at test position t are row j of
`default_rng([seed, t]).random((n, n_items + 1))` (one Sympson-Hetter draw per item, then the
randomesque draw). No generator state is carried, so a killed run resumes exactly by replaying its
recorded (item, correct) pairs with `cat_replay`; a single examinee uses row 0.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit.irt.ability import normal_grid, posterior_moments
from mcqa_toolkit.irt.models import check_items, item_information, log_irf

STOP_REASONS = ("", "se", "max_items", "exhausted")  # code 0 = still running


@dataclass(frozen=True, eq=False)
class CatBank:
    """Item parameters a, b, c (items,) on the D metric (c=None: 2PL) and an optional subject per item.

    Holds read-only copies of the arrays; compared by identity.
    """

    a: ArrayLike
    b: ArrayLike
    c: ArrayLike | None = None
    D: float = 1.0
    subject: Sequence[str] | None = None

    def __post_init__(self) -> None:
        a, b, c, D = check_items(self.a, self.b, self.c, self.D)
        for name, v in (("a", a), ("b", b), ("c", c)):
            v = np.array(v)           # own copy, so freezing it never freezes the caller's array
            v.setflags(write=False)
            object.__setattr__(self, name, v)
        object.__setattr__(self, "D", D)
        if self.subject is not None:
            s = tuple(str(x) for x in self.subject)
            if len(s) != b.size:
                raise ValueError(f"subject has {len(s)} entries but the bank has {b.size} items")
            object.__setattr__(self, "subject", s)

    @property
    def n_items(self) -> int:
        return int(np.size(self.b))


@dataclass(frozen=True)
class CatConfig:
    """The rules of a CAT.

    se_target: stop once the posterior SD <= se_target (None: no SE rule). max_items: stop after this many
    (None: the whole bank). min_items: never stop earlier. randomesque: pick among this many most
    informative candidates (1: pure maximum information). exposure: Sympson-Hetter K per item in (0, 1]
    (None: off; see `cat_sim.sympson_hetter`). subject_targets: {subject: target proportion} for content
    balancing (None: off; normalised to sum 1; subjects left out get 0). grid_points, grid_bounds: the EAP
    quadrature (N(0, 1) prior).
    """

    se_target: float | None = 0.3
    max_items: int | None = None
    min_items: int = 1
    randomesque: int = 1
    exposure: Sequence[float] | None = None
    subject_targets: Mapping[str, float] | tuple[tuple[str, float], ...] | None = None
    grid_points: int = 61
    grid_bounds: tuple[float, float] = (-6.0, 6.0)

    def __post_init__(self) -> None:
        if self.se_target is not None and not self.se_target > 0:
            raise ValueError(f"se_target = {self.se_target}: must be > 0 or None")
        if self.max_items is not None and int(self.max_items) < 1:
            raise ValueError(f"max_items = {self.max_items}: must be >= 1 or None")
        if int(self.min_items) < 1 or (self.max_items is not None and self.min_items > self.max_items):
            raise ValueError(f"min_items = {self.min_items}: must be >= 1 and <= max_items")
        if int(self.randomesque) < 1:
            raise ValueError(f"randomesque = {self.randomesque}: must be >= 1")
        if self.exposure is not None:
            k = tuple(float(v) for v in np.ravel(self.exposure))
            if not all(0 < v <= 1 for v in k):
                raise ValueError("exposure: Sympson-Hetter parameters must be in (0, 1]")
            object.__setattr__(self, "exposure", k)
        if self.subject_targets is not None:
            t = dict(self.subject_targets)
            if not (all(v >= 0 for v in t.values()) and sum(t.values()) > 0):
                raise ValueError(f"subject_targets = {t}: proportions must be >= 0 and not all 0")
            object.__setattr__(self, "subject_targets", tuple(sorted((str(s), float(v)) for s, v in t.items())))


@dataclass(frozen=True)
class _Plan:
    """Everything the selection and update need, derived once from a bank and a config."""

    bank: CatBank
    config: CatConfig
    points: np.ndarray
    log_prior: np.ndarray
    log_p: np.ndarray                 # (items, G)
    log_q: np.ndarray
    subject_index: np.ndarray | None  # (items,) index into targets
    targets: np.ndarray | None        # (S,)
    exposure: np.ndarray | None
    max_len: int
    need_random: bool


def _plan(bank: CatBank, config: CatConfig) -> _Plan:
    points, w = normal_grid(config.grid_points, *config.grid_bounds)
    a, b, c = (cast(np.ndarray, v) for v in (bank.a, bank.b, bank.c))  # __post_init__ stored validated arrays
    log_p, log_q = log_irf(points, a, b, c, bank.D)
    J = bank.n_items
    exposure = None if config.exposure is None else np.array(config.exposure)
    if exposure is not None and exposure.size != J:
        raise ValueError(f"exposure has {exposure.size} parameters but the bank has {J} items")
    sidx = targets = None
    if config.subject_targets is not None:
        if bank.subject is None:
            raise ValueError("subject_targets needs a bank with a subject per item")
        names = sorted(set(bank.subject))
        given = dict(config.subject_targets)
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise ValueError(f"subject_targets names {unknown}, not subjects of the bank {names}")
        targets = np.array([given.get(s, 0.0) for s in names])
        targets = targets / targets.sum()
        sidx = np.searchsorted(names, bank.subject)
    max_len = J if config.max_items is None else min(int(config.max_items), J)
    return _Plan(bank, config, points, np.log(w), np.ascontiguousarray(log_p.T), np.ascontiguousarray(log_q.T),
                 sidx, targets, exposure, max_len, exposure is not None or config.randomesque > 1)


def _uniforms(seed: int, position: int, n: int, n_items: int) -> np.ndarray:
    """The random numbers of all n examinees at one test position: (n, n_items + 1), see module doc."""
    return np.random.default_rng([int(seed), int(position)]).random((n, n_items + 1))


def _select(plan: _Plan, theta: np.ndarray, taken: np.ndarray, blocked: np.ndarray, counts: np.ndarray | None,
            n_taken: np.ndarray, u: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Next item (m,) and the items Sympson-Hetter rejected on the way (m, items) for m examinees."""
    m, J = taken.shape
    rows = np.arange(m)
    eligible = ~(taken | blocked)
    if plan.targets is not None:
        assert plan.subject_index is not None  # _plan sets both or neither
        onehot = (plan.subject_index[:, None] == np.arange(plan.targets.size)).astype(float)  # (J, S)
        has = eligible.astype(float) @ onehot > 0                                  # exact: integer counts
        deficit = np.where(has, plan.targets - counts / np.maximum(n_taken, 1)[:, None], -np.inf)
        eligible &= plan.subject_index == deficit.argmax(axis=1)[:, None]
    info = item_information(theta, plan.bank.a, plan.bank.b, plan.bank.c, plan.bank.D)  # (m, J)
    cand = eligible
    if plan.exposure is not None:
        assert u is not None  # need_random holds whenever exposure is on
        passes = eligible & (u[:, :J] < plan.exposure)
        cand = np.where(passes.any(axis=1, keepdims=True), passes, eligible)
    key = np.where(cand, info, -np.inf)
    if plan.config.randomesque > 1:
        assert u is not None  # need_random holds whenever randomesque > 1
        order = np.argsort(-key, axis=1, kind="stable")                             # ties: lower index
        k = np.minimum(plan.config.randomesque, cand.sum(axis=1))
        item = order[rows, np.minimum((u[:, J] * k).astype(int), k - 1)]
    else:
        item = key.argmax(axis=1)                                                   # first maximum
    rejected = np.zeros_like(taken)
    if plan.exposure is not None:
        chosen = info[rows, item][:, None]
        above = (info > chosen) | ((info == chosen) & (np.arange(J) < item[:, None]))
        rejected = eligible & ~cand & above
    return item, rejected


def _stop_codes(plan: _Plan, n_taken: np.ndarray, psd: np.ndarray, any_left: ArrayLike) -> np.ndarray:
    """Index into STOP_REASONS per examinee after a response: (m,) int8, 0 = go on."""
    code = np.where(any_left, 0, 3)
    code = np.where(n_taken >= plan.max_len, 2, code)
    if plan.config.se_target is not None:
        code = np.where((n_taken >= plan.config.min_items) & (psd <= plan.config.se_target), 1, code)
    return code.astype(np.int8)


@dataclass(frozen=True)
class CatState:
    """One examinee's CAT so far: administered items, 0/1 answers, theta and posterior SD after each.

    `stop` is "" while running, else the rule that fired ("se", "max_items" or "exhausted"). `blocked`
    holds the items Sympson-Hetter set aside. Immutable: `cat_update` returns a new state.
    """

    bank: CatBank
    config: CatConfig
    seed: int
    items: tuple[int, ...] = ()
    correct: tuple[int, ...] = ()
    thetas: tuple[float, ...] = ()
    psds: tuple[float, ...] = ()
    blocked: tuple[int, ...] = ()
    stop: str = ""
    prior: tuple[float, float] = field(default=(0.0, 1.0), repr=False)

    @property
    def done(self) -> bool:
        return self.stop != ""

    @property
    def theta(self) -> float:
        return self.thetas[-1] if self.thetas else self.prior[0]

    @property
    def psd(self) -> float:
        return self.psds[-1] if self.psds else self.prior[1]

    def to_frame(self) -> pd.DataFrame:
        """One row per administered item: position, item, correct, theta and psd after the answer."""
        df = pd.DataFrame({"position": np.arange(1, len(self.items) + 1, dtype=int), "item": self.items,
                           "correct": self.correct, "theta": self.thetas, "psd": self.psds})
        df.attrs.update(stop=self.stop, seed=self.seed)
        return df


def cat_start(bank: CatBank, config: CatConfig = CatConfig(), seed: int = 0) -> CatState:
    """A new CAT for one examinee; theta and psd start at the prior's mean and SD on the grid."""
    plan = _plan(bank, config)
    t, s = posterior_moments(plan.log_prior[None].copy(), plan.points)
    return CatState(bank, config, int(seed), prior=(float(t[0]), float(s[0])))


def _select_one(plan: _Plan, state: CatState) -> tuple[int, np.ndarray]:
    J = plan.bank.n_items
    taken, blocked = np.zeros((1, J), bool), np.zeros((1, J), bool)
    taken[0, list(state.items)], blocked[0, list(state.blocked)] = True, True
    counts = None
    if plan.targets is not None:
        assert plan.subject_index is not None  # _plan sets both or neither
        counts = np.bincount(plan.subject_index[list(state.items)], minlength=plan.targets.size)[None].astype(float)
    u = _uniforms(state.seed, len(state.items), 1, J) if plan.need_random else None
    item, rejected = _select(plan, np.array([state.theta]), taken, blocked, counts,
                             np.array([len(state.items)]), u)
    return int(item[0]), rejected[0]


def cat_next(state: CatState) -> int:
    """Index of the item to administer next; ValueError once the stopping rule has fired."""
    if state.done:
        raise ValueError(f"the CAT has stopped ({state.stop}) after {len(state.items)} items")
    return _select_one(_plan(state.bank, state.config), state)[0]


def cat_update(state: CatState, item: int, correct: int | bool) -> CatState:
    """The state after `item` was answered (correct 0/1): new EAP theta and psd, and the stopping rule.

    `item` must be `cat_next(state)`: a mismatch means the responses are replayed out of order or with
    another bank, config or seed, and raises ValueError instead of silently diverging.
    """
    if state.done:
        raise ValueError(f"the CAT has stopped ({state.stop}) after {len(state.items)} items")
    if correct not in (0, 1):
        raise ValueError(f"correct = {correct!r}: must be 0 or 1")
    plan = _plan(state.bank, state.config)
    expected, rejected = _select_one(plan, state)
    if int(item) != expected:
        raise ValueError(f"item {item} is not the CAT's next item {expected} at position {len(state.items)}: "
                         "replay the recorded responses in order with the same bank, config and seed")
    items, answers = state.items + (expected,), state.correct + (int(correct),)
    log_post = plan.log_prior[None].copy()
    for i, x in zip(items, answers, strict=True):   # in administration order, exactly as the batch accumulates it
        log_post += plan.log_p[i] if x else plan.log_q[i]
    t, s = posterior_moments(log_post, plan.points)
    blocked = tuple(sorted(set(state.blocked) | set(np.flatnonzero(rejected).tolist())))
    left = plan.bank.n_items - len(items) - len(blocked) > 0
    code = _stop_codes(plan, np.array([len(items)]), s, np.array([left]))[0]
    return CatState(state.bank, state.config, state.seed, items, answers, state.thetas + (float(t[0]),),
                    state.psds + (float(s[0]),), blocked, STOP_REASONS[code], state.prior)


def cat_replay(bank: CatBank, config: CatConfig, seed: int, items: Sequence[int],
               correct: Sequence[int]) -> CatState:
    """The state after the recorded (item, correct) pairs, e.g. to resume a killed run."""
    if len(items) != len(correct):
        raise ValueError(f"{len(items)} items but {len(correct)} answers")
    state = cat_start(bank, config, seed)
    for i, x in zip(items, correct, strict=True):
        state = cat_update(state, i, x)
    return state
