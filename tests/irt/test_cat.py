"""Adaptive testing (irt.cat, irt.cat_sim): the vectorised simulation against a naive per-examinee loop,
the single-examinee API against the batch (bit for bit) and against its own replay, stopping rules,
content balancing, exposure control (recovery on the demo population: test_cat_recovery.py)."""

import numpy as np
import pytest

from mcqa_toolkit import irt
from mcqa_toolkit.datasets.demo import load_demo, load_population

GRID = irt.normal_grid(61, -6.0, 6.0)   # CatConfig's default quadrature
pytestmark = pytest.mark.filterwarnings("error")  # a numerical warning in the CAT is a failure


@pytest.fixture(scope="module")
def demo():
    return demo_bank()


def demo_bank() -> tuple:
    """The demo exam (pt) as a CAT bank with subjects, and its stored synthetic population."""
    items = list(load_demo("pt"))
    a, b, c = (np.array([it.irt[k] for it in items]) for k in range(3))
    pop = load_population()
    assert pop.item_ids == tuple(it.parallel_id for it in items)
    return irt.CatBank(a, b, c, subject=[it.subject for it in items]), pop


def _responses(bank, n, seed):
    rng = np.random.default_rng(seed)
    return irt.simulate_3pl(rng.normal(size=n), bank.a, bank.b, bank.c, rng)


def _naive_cat(bank, cfg, responses, seed):
    """One examinee at a time, written from the rules (not from cat.py): lists, sorted(), ability_eap."""
    n, J = responses.shape
    K = None if cfg.exposure is None else np.array(cfg.exposure)
    targets = None if cfg.subject_targets is None else dict(cfg.subject_targets)
    max_len = J if cfg.max_items is None else min(cfg.max_items, J)
    out = []
    for j in range(n):
        taken, answers, blocked, thetas, psds, stop = [], [], set(), [], [], ""
        theta = 0.0
        for t in range(max_len):
            draws = np.random.default_rng([seed, t]).random((n, J + 1))[j]
            eligible = [i for i in range(J) if i not in taken and i not in blocked]
            if targets is not None:
                total = sum(targets.values())
                best, best_deficit = None, -np.inf
                for s in sorted(set(bank.subject)):       # ties go to the first subject in sorted order
                    if not any(bank.subject[i] == s for i in eligible):
                        continue
                    share = sum(bank.subject[i] == s for i in taken) / max(len(taken), 1)
                    if targets.get(s, 0.0) / total - share > best_deficit:
                        best, best_deficit = s, targets.get(s, 0.0) / total - share
                eligible = [i for i in eligible if bank.subject[i] == best]
            info = irt.item_information(theta, bank.a, bank.b, bank.c)
            ranked = sorted(eligible, key=lambda i: (-info[i], i))
            cands = ranked
            if K is not None:
                cands = [i for i in ranked if draws[i] < K[i]] or ranked
            k = min(cfg.randomesque, len(cands))
            pick = cands[min(int(draws[J] * k), k - 1)] if cfg.randomesque > 1 else cands[0]
            blocked |= {i for i in ranked[:ranked.index(pick)] if i not in cands}
            taken.append(pick)
            answers.append(int(responses[j, pick]))
            row = np.full(J, np.nan)
            row[taken] = answers
            est = irt.ability_eap(row, bank.a, bank.b, bank.c, grid=GRID[0], prior=GRID[1])
            theta, psd = est.theta[0], est.psd[0]
            thetas.append(theta)
            psds.append(psd)
            if cfg.se_target is not None and len(taken) >= cfg.min_items and psd <= cfg.se_target:
                stop = "se"
            elif len(taken) >= max_len:
                stop = "max_items"
            elif len(taken) + len(blocked) == J:
                stop = "exhausted"
            if stop:
                break
        out.append((taken, answers, thetas, psds, stop))
    return out


CONFIGS = {
    "max-info": dict(se_target=0.3, max_items=20),
    "exhaustion": dict(se_target=None, exposure=(0.5,) * 66),
    "all-controls": dict(se_target=0.35, max_items=25, min_items=8, randomesque=3,
                         subject_targets={"biology": 2, "mathematics": 1, "physics": 1, "chemistry": 1}),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_vectorised_cat_equals_naive_loop(demo, name):
    bank, _ = demo
    kw = dict(CONFIGS[name])
    if name == "all-controls":     # Sympson-Hetter with some items rarely allowed
        kw["exposure"] = np.where(np.arange(bank.n_items) % 3 == 0, 0.3, 1.0)
    cfg = irt.CatConfig(**kw)
    u = _responses(bank, 60, seed=5)
    sim = irt.cat_simulate(bank, u, cfg, seed=11)
    naive = _naive_cat(bank, cfg, u, seed=11)
    for j, (items, answers, thetas, psds, stop) in enumerate(naive):
        L = len(items)
        assert sim.length[j] == L and sim.stop[j] == stop
        np.testing.assert_array_equal(sim.items[j, :L], items)      # identical item sequences
        np.testing.assert_array_equal(sim.correct[j, :L], answers)
        assert (sim.items[j, L:] == -1).all() and np.isnan(sim.theta_path[j, L:]).all()
        # ability_eap sums by a BLAS product, the CAT row by row: equal up to rounding
        np.testing.assert_allclose(sim.theta_path[j, :L], thetas, rtol=0, atol=1e-12)
        np.testing.assert_allclose(sim.psd_path[j, :L], psds, rtol=0, atol=1e-12)
    if name == "all-controls":
        assert sim.rejected.sum() > 0 and set(sim.stop) >= {"se", "max_items"}


def _run_single(bank, cfg, answers, seed):
    state = irt.cat_start(bank, cfg, seed)
    while not state.done:
        item = irt.cat_next(state)
        state = irt.cat_update(state, item, int(answers[item]))
    return state


@pytest.mark.parametrize("name", list(CONFIGS))
def test_single_examinee_api_is_bit_identical_to_the_batch(demo, name):
    bank, _ = demo
    cfg = irt.CatConfig(**{"exposure": np.full(bank.n_items, 0.7), **CONFIGS[name]})
    u = _responses(bank, 8, seed=6)
    for j in range(u.shape[0]):   # a single examinee uses row 0 of the random numbers: a batch of one
        sim = irt.cat_simulate(bank, u[j:j + 1], cfg, seed=3)
        state = _run_single(bank, cfg, u[j], seed=3)
        L = len(state.items)
        assert sim.length[0] == L and sim.stop[0] == state.stop
        assert sim.items[0, :L].tolist() == list(state.items)
        assert sim.theta_path[0, :L].tolist() == list(state.thetas)       # exact, not approx
        assert sim.psd_path[0, :L].tolist() == list(state.psds)
    deterministic = irt.CatConfig(**{**CONFIGS[name], "randomesque": 1, "exposure": None})  # any row
    sim = irt.cat_simulate(bank, u, deterministic, seed=3)
    for j in range(u.shape[0]):
        state = _run_single(bank, deterministic, u[j], seed=3)
        assert sim.theta_path[j, :sim.length[j]].tolist() == list(state.thetas)


def test_replaying_a_prefix_resumes_exactly(demo):
    bank, _ = demo
    cfg = irt.CatConfig(**CONFIGS["all-controls"], exposure=np.full(bank.n_items, 0.6))
    answers = _responses(bank, 1, seed=9)[0]
    states = [irt.cat_start(bank, cfg, seed=4)]
    while not states[-1].done:
        item = irt.cat_next(states[-1])
        states.append(irt.cat_update(states[-1], item, int(answers[item])))
    final = states[-1]
    assert final.stop in ("se", "max_items") and len(final.items) >= cfg.min_items
    for p in (0, 1, 5, len(final.items) - 1, len(final.items)):
        resumed = irt.cat_replay(bank, cfg, 4, final.items[:p], final.correct[:p])
        assert resumed == states[p]
        if p < len(final.items):
            assert irt.cat_next(resumed) == final.items[p]
    frame = final.to_frame()
    assert frame["item"].tolist() == list(final.items) and frame.attrs["stop"] == final.stop
    with pytest.raises(ValueError, match="has stopped"):
        irt.cat_next(final)
    wrong = (irt.cat_next(states[2]) + 1) % bank.n_items
    with pytest.raises(ValueError, match="not the CAT's next item"):
        irt.cat_update(states[2], wrong, 1)
    with pytest.raises(ValueError, match="not the CAT's next item"):       # another seed diverges loudly
        irt.cat_replay(bank, cfg, 5, final.items, final.correct)
    with pytest.raises(ValueError, match="must be 0 or 1"):
        irt.cat_update(states[0], irt.cat_next(states[0]), 2)


def test_whole_bank_cat_equals_full_test_eap(demo):
    bank, pop = demo
    u = pop.responses[:300]
    sim = irt.cat_simulate(bank, u, irt.CatConfig(se_target=None))
    full = irt.ability_eap(u, bank.a, bank.b, bank.c, grid=GRID[0], prior=GRID[1])
    assert (sim.length == bank.n_items).all() and set(sim.stop) == {"max_items"}
    np.testing.assert_allclose(sim.theta, full.theta, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sim.psd, full.psd, rtol=0, atol=1e-12)


def test_stopping_rules(demo):
    bank, _ = demo
    u = _responses(bank, 400, seed=2)
    fixed = irt.cat_simulate(bank, u, irt.CatConfig(se_target=None, max_items=12))
    assert (fixed.length == 12).all()
    sim = irt.cat_simulate(bank, u, irt.CatConfig(se_target=0.5, min_items=10, max_items=30))
    by_se = sim.stop == "se"
    assert by_se.any() and (sim.stop[~by_se] == "max_items").all() and (sim.length[~by_se] == 30).all()
    assert (sim.length >= 10).all() and (sim.psd[by_se] <= 0.5).all() and (sim.psd[~by_se] > 0.5).all()
    assert (sim.psd_path[:, :9] <= 0.5).any(axis=1).sum() > 50      # min_items held these back
    for j in np.flatnonzero(by_se):           # stopped at the first position allowed and below target
        assert (sim.psd_path[j, 9:sim.length[j] - 1] > 0.5).all()
    # Sympson-Hetter sets rejected items aside: with K = 0.5 everywhere the pool runs dry before 66 items
    dry = irt.cat_simulate(bank, u, irt.CatConfig(se_target=None, exposure=np.full(bank.n_items, 0.5)), seed=1)
    assert set(dry.stop) == {"exhausted"} and dry.length.max() < bank.n_items


def test_content_balancing_hits_targets(demo):
    bank, _ = demo
    u = _responses(bank, 300, seed=3)
    subjects = np.array(bank.subject)
    equal = irt.CatConfig(se_target=None, max_items=12, subject_targets={s: 1 for s in set(bank.subject)})
    sim = irt.cat_simulate(bank, u, equal)
    for j in range(u.shape[0]):
        _, counts = np.unique(subjects[sim.items[j]], return_counts=True)
        assert counts.tolist() == [2] * 6
    two = irt.CatConfig(se_target=None, max_items=10, subject_targets={"biology": 3, "physics": 2})
    got = subjects[irt.cat_simulate(bank, u, two).items]
    assert ((got == "biology").sum(axis=1) == 6).all() and ((got == "physics").sum(axis=1) == 4).all()
    with pytest.raises(ValueError, match="not subjects of the bank"):
        irt.cat_simulate(bank, u, irt.CatConfig(subject_targets={"astrology": 1}))


def test_exposure_control_lowers_the_maximum_exposure(demo):
    bank, pop = demo
    u, cfg = pop.responses[:2000], irt.CatConfig(se_target=None, max_items=15)
    plain = irt.cat_summary(irt.cat_simulate(bank, u, cfg), pop.theta[:2000])
    rq = irt.cat_summary(irt.cat_simulate(bank, u, irt.CatConfig(se_target=None, max_items=15, randomesque=5),
                                          seed=1), pop.theta[:2000])
    assert plain.exposure.max() == 1.0 and rq.exposure.max() < 0.8
    k = irt.sympson_hetter(bank, u, cfg, r_max=0.4, n_iter=10, seed=1)
    np.testing.assert_array_equal(k, irt.sympson_hetter(bank, u, cfg, r_max=0.4, n_iter=10, seed=1))
    sh = irt.cat_summary(irt.cat_simulate(bank, u, irt.CatConfig(se_target=None, max_items=15, exposure=k),
                                          seed=2), pop.theta[:2000])
    assert (k < 1).any() and sh.exposure.max() <= 0.4 + 0.05        # tolerance: sampling over 2000 examinees
    assert sh.exposure.sum() == pytest.approx(15.0)                  # every examinee still takes 15 items
    assert plain.rmse < sh.rmse < plain.rmse + 0.1                   # exposure control costs a little precision


def test_same_seed_same_results_and_seed_matters(demo):
    bank, _ = demo
    u = _responses(bank, 200, seed=4)
    cfg = irt.CatConfig(se_target=0.35, randomesque=4)
    one, two = irt.cat_simulate(bank, u, cfg, seed=8), irt.cat_simulate(bank, u, cfg, seed=8)
    np.testing.assert_array_equal(one.items, two.items)
    np.testing.assert_array_equal(one.theta_path, two.theta_path)
    assert (irt.cat_simulate(bank, u, cfg, seed=9).items != one.items).any()


def test_bad_input(demo):
    bank, _ = demo
    for kw in (dict(se_target=0), dict(max_items=0), dict(min_items=5, max_items=3), dict(randomesque=0),
               dict(exposure=[0.5, 0.0]), dict(subject_targets={"biology": -1})):
        with pytest.raises(ValueError):
            irt.CatConfig(**kw)
    with pytest.raises(ValueError, match="exposure has 2"):
        irt.cat_start(bank, irt.CatConfig(exposure=[0.5, 0.5]))
    with pytest.raises(ValueError, match="needs a bank with a subject"):
        irt.cat_start(irt.CatBank(bank.a, bank.b, bank.c), irt.CatConfig(subject_targets={"biology": 1}))
    with pytest.raises(ValueError, match="complete 0/1"):
        irt.cat_simulate(bank, np.full((2, bank.n_items), np.nan))
    with pytest.raises(ValueError, match="subject has 1"):
        irt.CatBank([1.0, 1.0], [0.0, 1.0], subject=["x"])
    a = np.ones(3)
    irt.CatBank(a, np.zeros(3))
    a[0] = 2.0                                                       # the bank froze a copy, not the caller's
