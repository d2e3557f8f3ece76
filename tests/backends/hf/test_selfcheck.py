"""The engine's self-check (backends/hf/selfcheck.py): a path that is not exact on a model is refused and routed
around with a warning, on models no test lists (a deliberately broken attention path); the verdict is kept per model,
weights and options, in the process and on disk; it can be turned off; recurrent models are scored exactly."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from mcqa_toolkit.backends.hf import gencheck, selfcheck, tree, twin, wrap
from mcqa_toolkit.backends.hf.engine import PrefixScorer, Request, naive_scores


@pytest.fixture
def verdicts(tmp_path, monkeypatch):
    """Verdicts kept in a folder of the test's own, none in this process yet."""
    monkeypatch.setattr(selfcheck, "cache_dir", lambda: tmp_path / "selfcheck")
    monkeypatch.setattr(selfcheck, "_MEMO", {})
    monkeypatch.setattr(gencheck, "_CHECKED", {})
    return tmp_path / "selfcheck"


def _requests(lm):
    run, letters, options = selfcheck.probe(lm)
    return run, [r for reqs in letters + options for r in reqs]


def _break_tree_attention(monkeypatch) -> None:
    """Tree attention made wrong: the cached part's scale off by 10%."""
    real = tree.attend_cached
    monkeypatch.setattr(tree, "attend_cached", lambda q, k, v, mask, scale, linear: real(q, k, v, mask, scale * 1.1,
                                                                                         linear))


def test_a_model_the_engine_serves_keeps_its_path_and_the_verdict_is_kept(tiny_lm, verdicts, monkeypatch):
    engine = PrefixScorer(tiny_lm)
    assert engine.path == "tree" and engine.verdict.path == "tree" and engine.verdict.source == "checked"
    assert engine.verdict.deltas["tree"] <= selfcheck.FP32_BOUND and list(verdicts.glob("*.json"))
    monkeypatch.setattr(selfcheck, "check", lambda e: pytest.fail("checked again"))
    assert PrefixScorer(tiny_lm).verdict.source == "checked"  # this process's memo
    monkeypatch.setattr(selfcheck, "_MEMO", {})
    assert PrefixScorer(tiny_lm).verdict.source == "cached"   # from the disk, as a new process finds it
    assert PrefixScorer(tiny_lm, check=False).verdict is None


def test_a_broken_tree_attention_is_caught_and_routed_around_with_a_warning(tiny_gemma, verdicts, monkeypatch):
    """Tree attention made wrong (the cached part's scale off by 10%: a few 1e-3 on this tiny model, past the fp32
    bound; 1% moves it by 2.5e-4, within it), as an unseen family's attention might differ: the check refuses it,
    says so, and the engine scores with dense masks, equal to the naive path."""
    _break_tree_attention(monkeypatch)
    with pytest.warns(RuntimeWarning, match="tree path is refused .* it scores with the masks path"):
        engine = PrefixScorer(tiny_gemma)
    assert engine.path == "masks" and engine.verdict.deltas["tree"] > selfcheck.FP32_BOUND
    run, reqs = _requests(tiny_gemma)
    got = engine.score(reqs, run)
    assert max(float(np.abs(a - b).max()) for a, b in zip(got, naive_scores(tiny_gemma, reqs), strict=True)) < 1e-4


def test_a_path_that_fails_is_refused_with_its_error(tiny_gemma, verdicts, monkeypatch):
    """Dense masks and tree attention both failing on a model: the engine goes down to unpacked rows."""
    from mcqa_toolkit.backends.hf import block

    def broken(*a, **k):
        raise KeyError("mcqa_tree")

    monkeypatch.setattr(block, "plan_call", broken)
    monkeypatch.setattr(block, "tree_masks", broken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine = PrefixScorer(tiny_gemma)
    assert engine.path == "unpacked" and engine.verdict.reasons["tree"].startswith("KeyError")
    assert any("refused" in str(w.message) for w in caught)


def test_new_weights_are_checked_again(tiny_tokenizer, verdicts):
    from tiny_models import tiny_model

    lm = wrap(tiny_model("llama", tiny_tokenizer), tiny_tokenizer)
    first = selfcheck.key(PrefixScorer(lm, check=False))
    with torch.no_grad():
        next(lm.model.parameters()).mul_(1.5)
    assert selfcheck.key(PrefixScorer(lm, check=False)) != first


def test_a_recurrent_model_is_scored_exactly_with_its_run_prefix_shared_where_it_continues(tiny_tokenizer, verdicts):
    """A small random Mamba: the engine's trie paths are refused, the run prefix's state is continued (sequential)
    where that is exact, else every sequence is computed whole (plain); either way the naive path's numbers."""
    from model_families import build

    lm = wrap(build("mamba"), tiny_tokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrefixScorer(lm)
    assert engine.path in ("sequential", "plain")
    run, reqs = _requests(lm)
    got = engine.score(reqs, run)
    assert max(float(np.abs(a - b).max()) for a, b in zip(got, naive_scores(lm, reqs), strict=True)) < 1e-4


def test_left_padded_generation_is_checked_once_and_refused_where_positions_shift(tiny_lm, verdicts, monkeypatch):
    engine = PrefixScorer(tiny_lm)
    assert gencheck.padded_generation(engine) is True
    monkeypatch.setattr(gencheck, "_padded_check", lambda e: pytest.fail("checked again"))
    assert gencheck.padded_generation(engine) is True
    assert gencheck.padded_generation(PrefixScorer(tiny_lm, check=False)) is True


def test_the_probe_crosses_the_sliding_window_and_has_two_items(tiny_gemma):
    run, letters, options = selfcheck.probe(tiny_gemma)
    window = tiny_gemma.model.config.sliding_window
    assert len(run) == window + 16 and len(letters) == len(options) == 2
    assert [len(reqs) for reqs in options] == [2, 1]  # item A in two option orders, item B in one
    assert all(o.tokens[: len(letter.tokens)] == letter.tokens
               for a, b in zip(letters, options, strict=True) for letter, o in zip(a, b, strict=True))
    assert all(isinstance(r, Request) and r.tokens[: len(run)] == run for reqs in letters + options for r in reqs)


@pytest.fixture
def bf16_gemma(tiny_tokenizer):
    """A tiny Gemma 3 in bfloat16 of the test's own (the shared fp32 one is left as it is)."""
    from tiny_models import tiny_model

    return wrap(tiny_model("gemma3", tiny_tokenizer).to(torch.bfloat16), tiny_tokenizer, name="tiny-gemma3-bf16")


def test_twin_steps_are_the_dtype_ulp_at_the_magnitude():
    """By hand: bf16 has 8 significant bits (eps 2^-7), so at 21.4 (in [16, 32)) one step is 2^-7 x 16 = 0.125 and
    four are 0.5; fp16 (eps 2^-10) four steps 0.0625; below 1 the magnitude is taken as 1."""
    assert twin.steps(torch.bfloat16, 21.4) == 0.5 and twin.steps(torch.float16, -21.4) == 0.0625
    assert twin.steps(torch.bfloat16, 0.01, n=1) == 2.0 ** -7
    assert selfcheck.bound(torch.float32, 21.4) == selfcheck.FP32_BOUND


def test_the_float32_twin_is_a_copy_and_only_where_it_fits(bf16_gemma, tiny_gemma, monkeypatch):
    copy = twin.float32(bf16_gemma)
    assert copy is not None and copy.dtype == torch.float32 and copy.tokenizer is bf16_gemma.tokenizer
    assert bf16_gemma.dtype == torch.bfloat16 and next(bf16_gemma.model.parameters()).dtype == torch.bfloat16
    assert twin.model_bytes(copy.model) == twin.model_bytes(bf16_gemma.model, torch.float32)
    assert twin.float32(tiny_gemma) is None  # already float32
    monkeypatch.setattr(twin, "FREE_SHARE", 0.0)
    assert twin.float32(bf16_gemma) is None  # no room


def test_a_bf16_model_is_judged_on_its_float32_twin_and_keeps_its_path(bf16_gemma, verdicts):
    """In bf16 the engine and the plain forward differ by rounding alone; on the float32 twin the tree path is
    within the fp32 bound, and in bf16 it is no further from the twin's plain forward than HALF_RATIO times the bf16
    plain forward is."""
    engine = PrefixScorer(bf16_gemma)
    v = engine.verdict
    assert v.path == "tree" and v.judged_in == "torch.float32" and v.deltas["tree"] <= selfcheck.FP32_BOUND
    assert v.dtype_bound is not None and v.dtype_deltas["tree"] <= v.dtype_bound


def test_a_broken_attention_in_bf16_is_caught_on_the_twin(bf16_gemma, verdicts, monkeypatch):
    """The broken tree attention of the fp32 test, on a bf16 model: its few 1e-3 hide in bf16's rounding (a step
    is 4e-3 at these log-probs), but the float32 twin shows them, and the engine steps down to dense masks."""
    _break_tree_attention(monkeypatch)
    with pytest.warns(RuntimeWarning, match="tree path is refused .* in float32"):
        engine = PrefixScorer(bf16_gemma)
    assert engine.path == "masks" and engine.verdict.deltas["tree"] > selfcheck.FP32_BOUND


def test_without_room_for_the_twin_a_bf16_model_is_judged_in_bf16_to_its_rounding(bf16_gemma, verdicts,
                                                                                     monkeypatch):
    monkeypatch.setattr(twin, "FREE_SHARE", 0.0)
    v = PrefixScorer(bf16_gemma).verdict
    assert v.path == "tree" and v.judged_in == "torch.bfloat16" and v.dtype_bound is None and not v.dtype_deltas
    assert v.bound > selfcheck.FP32_BOUND and v.bound == twin.steps(torch.bfloat16, v.bound / 4 / 2.0 ** -7)


def test_differences_of_non_finite_values_are_never_within_a_bound():
    nan, inf = np.nan, np.inf
    assert selfcheck._delta([np.array([-inf, 1.0])], [np.array([-inf, 1.5])]) == 0.5  # equal -inf: 0
    assert selfcheck._delta([np.array([nan, 1.0])], [np.array([nan, 1.0])]) == inf
    assert selfcheck._delta([np.array([-inf])], [np.array([-3.0])]) == inf


def test_a_model_whose_own_forward_overflows_its_dtype_is_refused_with_one_sentence(tiny_gemma, verdicts,
                                                                                      monkeypatch):
    """As the embedded Gemma-3-270M in float16 does (its activations pass fp16's 65504 and every log-prob is NaN):
    the plain forward's answers made NaN here, the check refuses the model rather than pick a path."""
    real = selfcheck._reference

    def overflowing(engine, letters, options):
        a, b = real(engine, letters, options)
        return [np.full_like(x, np.nan) for x in a], b

    monkeypatch.setattr(selfcheck, "_reference", overflowing)
    with pytest.raises(selfcheck.NotFinite, match="non-finite log-probabilities .* load it in float32 or bfloat16"):
        PrefixScorer(tiny_gemma)
