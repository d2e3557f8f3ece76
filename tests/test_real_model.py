"""The few tests that load the real embedded Gemma-3-270M (marked slow; they run in CI via `make test`)."""
import numpy as np
import pytest

from mcqa_toolkit.datasets import load
from mcqa_toolkit.prompts import load_template, render, select_shots, split_shots
from mcqa_toolkit.scoring.encode import encode, prompt_text, shared_prefix_ids
from mcqa_toolkit.scoring.first_token import score_first_token
from mcqa_toolkit.scoring.generate import generate_text
from mcqa_toolkit.scoring.loglik import score_loglik, token_logprobs
from mcqa_toolkit.scoring.prefix import PrefixScorer, Request, naive_scores
from mcqa_toolkit.shuffle import permutations

pytestmark = pytest.mark.slow
TOL = 1e-4  # max |delta log-prob| between prefix-shared and naive full-prompt computation, fp32


@pytest.fixture(scope="module")
def four_shot_prompts():
    """Two demo items in the ENEM-paper prompt with 9 seeded shots (demo stems are short; 9 shots make the prompt
    cross Gemma's 512-token sliding window), 3 shuffles each."""
    items = load("demo", language="pt")
    pool, evaluated = split_shots(items, 9, "random")
    t = load_template("pt", "enem")
    out = []
    for it in evaluated.filter(subject=["chemistry", "mathematics"])[:2]:
        shots = select_shots(pool, it, 9, "random")
        out.append([render(it, t, shots=shots, permutation=p, shuffle=k)
                    for k, p in enumerate(permutations(it.n_options, 3, seed=0, key=it.parallel_id))])
    return out


def test_gemma_letter_tokens_differ_with_space(gemma):
    assert encode(gemma, "A", False) == (236776,) and encode(gemma, " A", False) == (562,)


def test_prefix_sharing_equals_naive_on_gemma(gemma, four_shot_prompts):
    """The issue's acceptance test: sliding-window Gemma 3, 4-shot prompts, shuffles, letters and options."""
    scorer = PrefixScorer(gemma)
    previous, checked = (), 0
    for prompts in four_shot_prompts:
        ids = encode(gemma, *prompt_text(gemma, prompts[0]))
        assert len(ids) > 512, "the prompt must cross Gemma's 512-token sliding window"
        shared = shared_prefix_ids(gemma, prompts[0], previous)
        previous = shared
        assert len(shared) > 300  # the few-shot block is shared at run level
        letters = score_first_token(gemma, scorer, prompts, shared)
        options = score_loglik(gemma, scorer, prompts[:1], "sum", shared)
        # naive reference for the same requests
        for p, got in zip(prompts, letters):
            text, sp = prompt_text(gemma, p)
            from mcqa_toolkit.scoring.encode import next_token_candidates

            tok = encode(gemma, text, sp)
            cands, exact = next_token_candidates(gemma, tok, text, p.letter_continuations, sp)
            assert all(exact)
            ref = naive_scores(gemma, [Request(tok, len(tok), cands)], full_logits=False)[0]
            assert np.abs(got.option_scores[list(p.permutation)] - ref).max() <= TOL
            checked += 1
        ref_sums = []
        p = prompts[0]
        from mcqa_toolkit.scoring.encode import context_continuation

        for cont in p.continuations:
            ctx, c = context_continuation(gemma, p.text, cont)
            ref_sums.append(naive_scores(gemma, [Request(ctx + c, len(ctx))], full_logits=False)[0].sum())
        got_sums = np.array(options[0].extra["loglik_sum"])[list(p.permutation)]
        assert np.abs(got_sums - np.array(ref_sums)).max() <= TOL * 10  # sums over ~3-10 tokens
    assert checked == 6 and scorer.stats.forwarded < scorer.stats.naive / 3


def test_generation_with_prefix_cache_matches_plain_generation(gemma, four_shot_prompts):
    p = four_shot_prompts[0][0]
    ids = encode(gemma, *prompt_text(gemma, p))
    shared = shared_prefix_ids(gemma, p)
    plain = generate_text(gemma, ids, max_new_tokens=6, stop=())
    cached = generate_text(gemma, ids, max_new_tokens=6, stop=(), scorer=PrefixScorer(gemma), shared_prefix=shared)
    assert plain == cached and plain


def test_batched_greedy_generation_matches_one_by_one(gemma):
    from mcqa_toolkit.scoring.generate import generate_batch

    items = load("demo", language="es")[:3]
    t = load_template("es", "enade")
    ids = [encode(gemma, *prompt_text(gemma, render(it, t))) for it in items]
    batched = generate_batch(gemma, ids, max_new_tokens=4)
    single = [generate_text(gemma, x, max_new_tokens=4) for x in ids]
    assert batched == single and all(batched)


def test_token_logprobs_for_min_k(gemma):
    lp = token_logprobs(gemma, "A água ferve a 100 graus Celsius ao nível do mar.")
    assert lp.ndim == 1 and len(lp) == len(encode(gemma, "A água ferve a 100 graus Celsius ao nível do mar.", False))
    assert (lp <= 0).all() and np.isfinite(lp).all()
