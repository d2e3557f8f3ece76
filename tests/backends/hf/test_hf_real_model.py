"""The few tests that load the real embedded Gemma-3-270M (marked slow; they run in CI via `make test`)."""
import numpy as np
import pandas as pd
import pytest

from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.backends.hf.engine import PrefixScorer, Request, naive_scores
from mcqa_toolkit.backends.hf.generation import generate_one, generate_padded
from mcqa_toolkit.backends.hf.tokens import (
    context_continuation,
    context_continuations,
    encode,
    letter_requests,
    next_token_candidates,
    prompt_text,
    shared_prefix_ids,
)
from mcqa_toolkit.datasets import load
from mcqa_toolkit.prompts import load_template, render, select_shots, split_shots
from mcqa_toolkit.prompts.permutations import permutations
from mcqa_toolkit.scoring.first_token import score_first_token
from mcqa_toolkit.scoring.loglik import score_loglik, text_logprobs

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
    """The acceptance test: sliding-window Gemma 3, 9-shot prompts, shuffles, letters and options, through the
    Backend protocol, against the naive full-prompt computation of the same requests."""
    backend = HFBackend(gemma)
    checked = 0
    for prompts in four_shot_prompts:
        ids = encode(gemma, *prompt_text(gemma, prompts[0]))
        assert len(ids) > 512, "the prompt must cross Gemma's 512-token sliding window"
        assert len(shared_prefix_ids(gemma, prompts[0])) > 300  # the few-shot block is shared at run level
        letters = score_first_token(backend, prompts)
        options = score_loglik(backend, prompts[:1], "sum")
        for p, got in zip(prompts, letters, strict=True):
            text, sp = prompt_text(gemma, p)
            tok = encode(gemma, text, sp)
            cands, exact = next_token_candidates(gemma, tok, text, p.letter_continuations, sp)
            assert all(exact)
            ref = naive_scores(gemma, [Request(tok, len(tok), cands)], full_logits=False)[0]
            assert np.abs(got.option_scores[list(p.permutation)] - ref).max() <= TOL
            checked += 1
        ref_sums = []
        p = prompts[0]
        for cont in p.continuations:
            ctx, c = context_continuation(gemma, p.text, cont)
            ref_sums.append(naive_scores(gemma, [Request(ctx + c, len(ctx))], full_logits=False)[0].sum())
        got_sums = np.array(options[0].extra["loglik_sum"])[list(p.permutation)]
        assert np.abs(got_sums - np.array(ref_sums)).max() <= TOL * 10  # sums over ~3-10 tokens
    usage = backend.usage()
    assert checked == 6 and usage["forwarded_tokens"] < usage["naive"] / 3


@pytest.fixture(scope="module")
def engine_work(gemma, four_shot_prompts):
    """Per item: (letter Requests, option Requests, option counts per shuffle) and their naive reference
    (options of the first item only: the naive reference forwards every option's full prompt)."""
    work = []
    for i, prompts in enumerate(four_shot_prompts):
        letters = [Request(ids, len(ids), cands) for ids, cands, _ in letter_requests(gemma, prompts)]
        options, sizes = [], []
        if i == 0:
            pairs = context_continuations(gemma, [(p.text, c) for p in prompts for c in p.continuations])
            options = [Request(ctx + c, len(ctx)) for ctx, c in pairs]
            sizes = [len(p.continuations) for p in prompts]
        work.append((letters, options, sizes, naive_scores(gemma, letters, full_logits=False),
                     naive_scores(gemma, options, full_logits=False)))
    return work


@pytest.mark.parametrize("options", [dict(), dict(attention="masks", linear="torch"), dict(pack=False)])
def test_engine_equals_naive_per_token_with_and_without_packing(gemma, four_shot_prompts, engine_work, options):
    """Packed trie rows (the CPU's default: tree attention, oneDNN linears; and the dense sdpa masks with PyTorch's
    linear) and the unpacked fallback all equal the naive computation on the real model: every letter log-prob and
    every option token log-prob within 1e-4, identical letter and option choices in every shuffle."""
    pack = options.get("pack", True)
    scorer = PrefixScorer(gemma, **options)
    shared = shared_prefix_ids(gemma, four_shot_prompts[0][0])
    for letters, options, sizes, ref_letters, ref_options in engine_work:
        got_letters = scorer.score(letters, shared)
        assert max(float(np.abs(a - b).max()) for a, b in zip(got_letters, ref_letters, strict=True)) <= TOL
        assert [int(np.argmax(a)) for a in got_letters] == [int(np.argmax(b)) for b in ref_letters]
        if not options:
            continue
        got_options = scorer.score(options, shared)
        assert max(float(np.abs(a - b).max()) for a, b in zip(got_options, ref_options, strict=True)) <= TOL
        cut = np.cumsum(sizes)[:-1]
        mine = np.split(np.array([a.sum() for a in got_options]), cut)
        theirs = np.split(np.array([b.sum() for b in ref_options]), cut)
        assert [int(np.argmax(a)) for a in mine] == [int(np.argmax(b)) for b in theirs]
    st = scorer.stats
    assert st.unique <= st.forwarded < st.naive / 3
    if pack:
        assert st.forwarded <= 1.1 * st.unique


def test_token_cache_gives_whole_text_ids_on_gemma(gemma, four_shot_prompts):
    """Gemma's tokenizer is of the kind TokenCache cuts (one word, newline runs as added tokens): letter and option
    texts of 9-shot prompts get exactly the ids of whole-text encoding, encoding a fraction of the characters."""
    from mcqa_toolkit.backends.hf.segments import TokenCache

    cache = TokenCache(gemma.tokenizer)
    for prompts in four_shot_prompts:
        assert letter_requests(gemma, prompts, cache) == letter_requests(gemma, prompts)
        pairs = [(p.text, c) for p in prompts for c in p.continuations]
        assert context_continuations(gemma, pairs, True, cache) == context_continuations(gemma, pairs)
        assert shared_prefix_ids(gemma, prompts[0], cache=cache) == shared_prefix_ids(gemma, prompts[0])
    assert cache.supported and cache.stats["encoded_chars"] < 0.2 * cache.stats["chars"]


def test_generation_with_prefix_cache_matches_plain_generation(gemma, four_shot_prompts):
    p = four_shot_prompts[0][0]
    ids = encode(gemma, *prompt_text(gemma, p))
    shared = shared_prefix_ids(gemma, p)
    plain, n_plain = generate_one(gemma, ids, max_new_tokens=6, stop=())
    engine = PrefixScorer(gemma)
    cached, n_cached = generate_one(gemma, ids, max_new_tokens=6, stop=(), cache=engine.prefix_cache_for(ids, shared),
                                    cached=len(shared))
    assert plain == cached and plain.text and plain.n_generated_tokens == 6
    # token accounting: the cached call forwards the prompt minus the prefix, both forward 5 generated tokens
    assert n_plain == len(ids) + 5 and n_cached == len(ids) - len(shared) + 5


def test_batched_greedy_generation_matches_one_by_one(gemma):
    items = load("demo", language="es")[:3]
    t = load_template("es", "enade")
    ids = [encode(gemma, *prompt_text(gemma, render(it, t))) for it in items]
    batched, forwarded, padded = generate_padded(gemma, ids, max_new_tokens=4)
    single = [generate_one(gemma, x, max_new_tokens=4)[0] for x in ids]
    assert [g.text for g in batched] == [g.text for g in single] and all(g.text for g in batched)
    assert forwarded == sum(len(x) + g.n_generated_tokens - 1 for x, g in zip(ids, batched, strict=True))
    assert padded >= sum(max(map(len, ids)) - len(x) for x in ids)


def test_text_logprobs_for_min_k(gemma):
    text = "A água ferve a 100 graus Celsius ao nível do mar."
    (lp,) = text_logprobs(HFBackend(gemma), [text])
    assert lp.ndim == 1 and len(lp) == len(encode(gemma, text, False))
    assert (lp <= 0).all() and np.isfinite(lp).all()


def test_course_exam_of_every_type_on_gemma(gemma, tmp_path):
    """The embedded model sits a few questions of each type of the demo course exam and grades its own short
    answer: every question yields a record, statuses are in the vocabulary, the judge's verdict is kept whole,
    and the exam score and student comparison compute. The yes/no path scores multi/truefalse without
    generating."""
    import json

    from mcqa_toolkit import measure
    from mcqa_toolkit.records.columns import STATUSES
    from mcqa_toolkit.run import Strategy, run
    from mcqa_toolkit.scoring.judge import LLMJudge

    backend = HFBackend(gemma)
    items = load("course_exam").filter(item_id=[f"course-{i}" for i in (101, 102, 103, 104, 105)])
    judge = [LLMJudge(backend, max_new_tokens=40)]
    st = Strategy.generate(max_new_tokens=16, stop=("\n\n", "\nQuestion"))
    df = run(items, backend, st, tmp_path / "gen", dataset="course_exam", judges=judge, progress=False)
    assert sorted(df["item_id"]) == sorted(items.ids) and set(df["status"]) <= set(STATUSES)
    assert (df["generated_text"] != "").any() and set(df["answer_type"]) == {"single", "multi", "truefalse", "short"}
    short = df[df["item_id"] == "course-104"].iloc[0]
    verdict = json.loads(short["judgements"])[0]
    assert verdict["raw_output"] and verdict["status"] in ("ok", "error")
    assert (short["status"] == "error") == np.isnan(short["points_earned"])
    if verdict["status"] == "ok":
        assert 0 <= short["points_earned"] == verdict["score"] <= 10
    graded = df[df["status"] != "error"]
    assert ((graded["points_earned"] >= 0) & (graded["points_earned"] <= graded["points_possible"])).all()
    scores = measure.course_exam_scores(df)
    cmp = measure.compare_to_students(scores, measure.student_statistics(items))
    assert len(cmp) == 1 and np.isfinite(cmp["model_score"]).all()
    again = run(items, backend, st, tmp_path / "gen", dataset="course_exam", judges=judge, progress=False)
    pd.testing.assert_frame_equal(again.drop(columns=["seconds", "n_forwarded_tokens"]),
                                  df.drop(columns=["seconds", "n_forwarded_tokens"]))
    yes_no = run(items.filter(answer_type=["multi", "truefalse"]), backend, Strategy.first_token(), tmp_path / "yn",
                 progress=False)
    assert (yes_no["extraction_rule"].isin(["yes_no_p>=0.5", "none"])).all()
    p_true = json.loads(yes_no.set_index("item_id").loc["course-103", "extra"])["p_true"]
    assert len(p_true) == 3 and all(0 < p < 1 for p in p_true)
