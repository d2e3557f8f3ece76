"""CAT simulation over many examinees at once, its summary, a random-order baseline, Sympson-Hetter K.

`cat_simulate` is a post-hoc simulation: every examinee has a complete 0/1 response vector (real answers,
or drawn with `simulate_3pl`) and the CAT only reveals the answers to the items it selects. The loop runs
over test positions, never over examinees; each step applies `cat._select` and the same row-wise EAP
update as `cat_update`, so examinee j of a batch gets exactly what `cat_start`/`cat_next`/`cat_update`
give it alone with row j of the random numbers (see `cat`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit.irt.ability import AbilityEstimate, ability_eap, normal_grid, posterior_moments
from mcqa_toolkit.irt.cat import STOP_REASONS, CatBank, CatConfig, _plan, _select, _stop_codes, _uniforms
from mcqa_toolkit.irt.models import check_theta


@dataclass(frozen=True, eq=False)
class CatSimulation:
    """Per examinee (n rows) and test position (L columns): administered item, 0/1 answer, EAP theta and
    psd after it (-1 / NaN after the stop); final `length` (n,), `stop` reason (n,), and per item (items,)
    how often Sympson-Hetter rejected it (`rejected`)."""

    items: np.ndarray
    correct: np.ndarray
    theta_path: np.ndarray
    psd_path: np.ndarray
    length: np.ndarray
    stop: np.ndarray
    rejected: np.ndarray
    config: CatConfig

    @property
    def theta(self) -> np.ndarray:
        """Final EAP theta per examinee (n,)."""
        return self.theta_path[np.arange(self.length.size), self.length - 1]

    @property
    def psd(self) -> np.ndarray:
        """Final posterior SD per examinee (n,)."""
        return self.psd_path[np.arange(self.length.size), self.length - 1]

    def administered(self) -> np.ndarray:
        """Times each item was administered (items,)."""
        return np.bincount(self.items[self.items >= 0], minlength=self.rejected.size)

    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per administered item (person, position, item, correct, theta, psd)."""
        person, pos = np.nonzero(self.items >= 0)
        return pd.DataFrame({"person": person, "position": pos + 1, "item": self.items[person, pos],
                             "correct": self.correct[person, pos], "theta": self.theta_path[person, pos],
                             "psd": self.psd_path[person, pos]})


def _complete(responses: ArrayLike, n_items: int) -> np.ndarray:
    u = np.asarray(responses)
    if u.ndim == 1:
        u = u[None, :]
    if u.ndim != 2 or u.shape[1] != n_items:
        raise ValueError(f"responses must be persons x {n_items} items, got shape {u.shape}")
    bad = ~((u == 0) | (u == 1))
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"responses[{i}, {j}] = {u[i, j]}: a post-hoc CAT needs complete 0/1 answers")
    return u.astype(np.int8)


def cat_simulate(bank: CatBank, responses: ArrayLike, config: CatConfig = CatConfig(),
                 seed: int = 0) -> CatSimulation:
    """Run the CAT for every row of responses (n, items) of complete 0/1 answers -> CatSimulation."""
    plan = _plan(bank, config)
    u = _complete(responses, bank.n_items)
    n, J, L = u.shape[0], bank.n_items, plan.max_len
    taken, blocked = np.zeros((n, J), bool), np.zeros((n, J), bool)
    counts = None if plan.targets is None else np.zeros((n, plan.targets.size))
    n_taken = np.zeros(n, dtype=int)
    log_post = np.tile(plan.log_prior, (n, 1))
    theta = np.full(n, posterior_moments(plan.log_prior[None].copy(), plan.points)[0][0])
    items, correct = np.full((n, L), -1, dtype=int), np.full((n, L), -1, dtype=np.int8)
    theta_path, psd_path = np.full((n, L), np.nan), np.full((n, L), np.nan)
    stop, rejected = np.zeros(n, dtype=np.int8), np.zeros(J, dtype=int)
    active = np.arange(n)
    for t in range(L):
        if active.size == 0:
            break
        draws = _uniforms(seed, t, n, J)[active] if plan.need_random else None
        item, rej = _select(plan, theta[active], taken[active], blocked[active],
                            None if counts is None else counts[active], n_taken[active], draws)
        x = u[active, item]
        taken[active, item] = True
        blocked[active] |= rej
        rejected += rej.sum(axis=0)
        if counts is not None:
            assert plan.subject_index is not None  # _plan sets it together with targets, as counts is
            counts[active, plan.subject_index[item]] += 1
        n_taken[active] += 1
        log_post[active] += np.where(x[:, None] == 1, plan.log_p[item], plan.log_q[item])
        th, sd = posterior_moments(log_post[active], plan.points)
        theta[active] = th
        items[active, t], correct[active, t], theta_path[active, t], psd_path[active, t] = item, x, th, sd
        left = (~(taken[active] | blocked[active])).any(axis=1)
        code = _stop_codes(plan, n_taken[active], sd, left)
        stop[active] = code
        active = active[code == 0]
    return CatSimulation(items, correct, theta_path, psd_path, n_taken,
                         np.array(STOP_REASONS, dtype=object)[stop], rejected, config)


@dataclass(frozen=True, eq=False)
class CatSummary:
    """How a simulated CAT did: test length, posterior SD reached, agreement of its final theta with a
    reference theta (full-test EAP or the true theta: correlation, bias = mean(cat - reference), RMSE),
    and the exposure rate of every item (items,): share of examinees who were administered it."""

    n_persons: int
    mean_length: float
    median_length: float
    max_length: int
    mean_psd: float
    se_reached: float
    correlation: float
    bias: float
    rmse: float
    exposure: np.ndarray

    def summary(self) -> pd.Series:
        """The scalar results (exposure as its maximum and the share of items never used)."""
        out = {k: getattr(self, k) for k in ("n_persons", "mean_length", "median_length", "max_length",
                                             "mean_psd", "se_reached", "correlation", "bias", "rmse")}
        out.update(max_exposure=float(self.exposure.max()), unused_items=float((self.exposure == 0).mean()))
        return pd.Series(out, name="cat")

    def to_frame(self) -> pd.DataFrame:
        """Exposure rate per item."""
        df = pd.DataFrame({"exposure": self.exposure})
        df.index.name = "item"
        return df


def cat_summary(sim: CatSimulation, reference_theta: ArrayLike) -> CatSummary:
    """Summarise a simulation against reference thetas (n,); se_reached is the share with psd <= the
    config's se_target (NaN without an SE rule)."""
    ref = np.asarray(check_theta(reference_theta, "reference_theta", allow_inf=False), dtype=float)
    if ref.shape != sim.length.shape:
        raise ValueError(f"reference_theta has shape {ref.shape}, the simulation {sim.length.shape} examinees")
    diff = sim.theta - ref
    target = sim.config.se_target
    return CatSummary(int(ref.size), float(sim.length.mean()), float(np.median(sim.length)), int(sim.length.max()),
                      float(sim.psd.mean()), float("nan") if target is None else float((sim.psd <= target).mean()),
                      float(np.corrcoef(sim.theta, ref)[0, 1]), float(diff.mean()), float(np.sqrt((diff ** 2).mean())),
                      sim.administered() / ref.size)


def cat_random_baseline(bank: CatBank, responses: ArrayLike, lengths: ArrayLike, config: CatConfig = CatConfig(),
                        seed: int = 0) -> AbilityEstimate:
    """EAP from `lengths[j]` items drawn at random (without replacement) for each examinee: theta, psd (n,).

    The non-adaptive baseline at equal test length; same grid and prior as the CAT's config.
    """
    u = _complete(responses, bank.n_items).astype(float)
    k = np.asarray(lengths, dtype=int)
    if k.shape != (u.shape[0],) or (k < 1).any() or (k > bank.n_items).any():
        raise ValueError(f"lengths must be (n,) = ({u.shape[0]},) integers in 1..{bank.n_items}")
    rank = np.random.default_rng(seed).random(u.shape).argsort(axis=1).argsort(axis=1)
    u[rank >= k[:, None]] = np.nan
    grid, prior = normal_grid(config.grid_points, *config.grid_bounds)
    return ability_eap(u, bank.a, bank.b, bank.c, bank.D, grid=grid, prior=prior)


def sympson_hetter(bank: CatBank, responses: ArrayLike, config: CatConfig, r_max: float, n_iter: int = 10,
                   seed: int = 0) -> np.ndarray:
    """Sympson-Hetter exposure parameters K (items,) aiming at exposure rates <= r_max, by simulation.

    Classic iteration: simulate with the current K, measure each item's selection rate P(S) (administered
    or rejected), set K = r_max / P(S) where P(S) > r_max else 1. Use the result as CatConfig(exposure=K).
    The exposure rates average (mean test length) / n_items, so a smaller r_max is out of reach: K keeps
    shrinking and tests end "exhausted" (a 40-item cap on a 66-item bank needs r_max >= 0.61).
    """
    if not 0 < r_max <= 1:
        raise ValueError(f"r_max = {r_max}: must be in (0, 1]")
    k = np.ones(bank.n_items)
    for _ in range(int(n_iter)):
        sim = cat_simulate(bank, responses, replace(config, exposure=tuple(k)), seed)
        selected = (sim.administered() + sim.rejected) / sim.length.size
        k = np.where(selected > r_max, r_max / np.maximum(selected, 1e-300), 1.0)
    return k
