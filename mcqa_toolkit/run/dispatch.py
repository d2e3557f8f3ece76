"""The one dispatcher: how every item is asked under a strategy, and how its answers are read and judged.

Routes (`route`):
  letters   single choice, rendered by prompts.render (with its few-shot examples) and scored by the strategy's
            method from the table of methods (scoring.methods: first_token, loglik, cloze, generate).
  generate  multi, truefalse and short items under a generate strategy, every short item (an answer must be
            written), choice questions whose options stayed in the stem, and single choice under a structured
            strategy: prompts.types.render_typed, then scoring.typed.score_typed_generate.
  yes_no    multi and truefalse items under a log-prob strategy (first_token, loglik, cloze): every option /
            statement asked as its own yes/no question (scoring.typed.score_yes_no). A true/false group whose
            statements could not be split from the stem is generated instead (recorded in its rule).
Short answers are graded in the same block by the judges (`judge` route). Items without options to shuffle
(truefalse, short, and choice questions whose options stayed in the stem) get one record (shuffle 0): every
shuffle would show the same prompt. Few-shot examples are single-answer and precede single-answer questions
only. `check_plan` refuses, before any request, a run that could not give every item a record.

A *block* is the items asked in one backend call (one item; several for padded greedy generation, or for log-prob
methods when the backend declares `items_per_call`, e.g. the local engine on a GPU).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcqa_toolkit.backends.base import Backend, CapabilityError
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.prompts import load_template, render
from mcqa_toolkit.prompts.permutations import identity, permutations, stable_seed
from mcqa_toolkit.prompts.types import load_type_template, question_kind, render_typed, render_yes_no
from mcqa_toolkit.run.strategy import Strategy
from mcqa_toolkit.scoring.judge import LLMJudge, judge_answers
from mcqa_toolkit.scoring.methods import METHODS, check_method, generates
from mcqa_toolkit.scoring.scored import Scored
from mcqa_toolkit.scoring.typed import score_typed_generate, score_yes_no

__all__ = ["route", "record_permutations", "check_plan", "ask", "ask_letters", "letters_prompt", "prepare", "ROUTES"]

ROUTES = ("letters", "generate", "yes_no")
Pair = tuple[Any, Scored]  # (the prompt a record was asked with, what its answer scored)


def _statements_split(item: Item) -> bool:
    key = item.answer if isinstance(item.answer, (tuple, str)) else ()  # a true/false key: a tuple of bools
    return len(item.meta.get("statements") or ()) == len(key)


def route(item: Item, strategy: Strategy) -> str:
    """letters | generate | yes_no (see the module docstring)."""
    question_kind(item)  # a choice question kept in its stem must name its letters: refused here, before any work
    if item.answer_type == "single" and not strategy.structured:
        return "letters"
    if item.answer_type in ("multi", "truefalse") and not generates(strategy.method):
        if item.answer_type == "multi" or _statements_split(item):
            return "yes_no"
    return "generate"


def record_permutations(item: Item, strategy: Strategy) -> list[tuple[int, ...]]:
    """The option orders of an item's records: the strategy's shuffles when it shows lettered options, else one."""
    if item.answer_type in ("single", "multi"):
        return permutations(item.n_options, strategy.shuffles, seed=strategy.seed, key=item.parallel_id,
                            keep_original=strategy.keep_original)
    return [identity(item.n_options)]


def check_plan(items: ItemSet, backend: Backend, strategy: Strategy, judges: Sequence[LLMJudge]) -> None:
    """Refuse, in one sentence and before any request, what this backend / these judges cannot turn into
    records: the strategy's method or chat formatting, generation needed but not available, short answers
    without a judge, adaptive administration of items that are not asked by letters."""
    check_method(backend, strategy.method, strategy.chat)
    routes = {it.item_id: route(it, strategy) for it in items}
    if strategy.adaptive is not None:
        bad = [i for i, r in routes.items() if r != "letters"]
        if bad:
            raise ValueError(f"adaptive administration asks single-answer questions by letters; {len(bad)} items "
                             f"are not (e.g. {bad[:3]}): filter them, e.g. items.filter(answer_type='single')")
    gen = [i for i, r in routes.items() if r == "generate"]
    if gen and not backend.capabilities.generate:
        raise CapabilityError(f"backend {backend.name!r} cannot generate text, which {len(gen)} item(s) need "
                              f"(e.g. {gen[:3]}: short answers, or questions without separable options)")
    short = [it.item_id for it in items if question_kind(it)[0] == "short"]
    if short and not judges:
        raise ValueError(f"{len(short)} short-answer item(s) (e.g. {short[:3]}) need a judge: pass judges=[LLMJudge("
                         "backend)] to run(), or `judges: [model]` in the params file")


def _language(block: Sequence[Item], strategy: Strategy) -> str | None:
    """The extraction language of a block: its one prompt language, else None (all four)."""
    languages = {strategy.language or it.exam_language for it in block}
    return languages.pop() if len(languages) == 1 else None


def _seeds(strategy: Strategy, prompts: Sequence[Any]) -> list[int]:
    return [stable_seed(strategy.seed, p.item_id, p.shuffle) for p in prompts]


def letters_prompt(item: Item, strategy: Strategy, shots: Sequence[Any], permutation: Sequence[int],
                   shuffle: int) -> Any:
    """A single-answer item's prompt in one option order after its few-shot examples; whether the options
    are shown is the method's (scoring.methods)."""
    return render(item, load_template(strategy.language or item.exam_language, strategy.style), shots=shots,
                  permutation=permutation, shuffle=shuffle, chat=strategy.chat,
                  with_options=METHODS[strategy.method].shows_options)


def ask_letters(backend: Backend, prompts: Sequence[Any], block: Sequence[Item], strategy: Strategy) -> list[Scored]:
    """Single-answer prompts scored by the strategy's method, in one backend call."""
    return METHODS[strategy.method].score(backend, prompts, strategy, _language(block, strategy),
                                          _seeds(strategy, prompts))


def _generate(backend: Backend, items: list[Item], strategy: Strategy, language: str | None,
              fallback: set[str]) -> list[Pair]:
    if not items:
        return []
    prompts, owners = [], []
    for it in items:
        tt = load_type_template(strategy.language or it.exam_language, question_kind(it)[0])
        for k, perm in enumerate(record_permutations(it, strategy)):
            prompts.append(render_typed(it, tt, permutation=perm, shuffle=k, chat=strategy.chat,
                                        structured=strategy.structured))
            owners.append(it)
    scored = score_typed_generate(backend, owners, prompts, language=language,
                                  max_new_tokens=strategy.max_new_tokens, temperature=strategy.temperature,
                                  stop=strategy.stop, seeds=_seeds(strategy, prompts))
    out = []
    for p, s in zip(prompts, scored, strict=True):
        if p.item_id in fallback:  # a yes/no strategy had to generate this one
            s = Scored(**{**s.__dict__, "extraction_rule": f"generate_fallback:{s.extraction_rule}"})
        out.append((p, s))
    return out


def _yes_no(backend: Backend, item: Item, strategy: Strategy) -> list[Pair]:
    tt = load_type_template(strategy.language or item.exam_language, item.answer_type)
    groups = [render_yes_no(item, tt, permutation=perm, shuffle=k, chat=strategy.chat)
              for k, perm in enumerate(record_permutations(item, strategy))]
    return [(g[0], s) for g, s in zip(groups, score_yes_no(backend, item, groups, strategy.method), strict=True)]


def _judge(pairs: list[Pair], by_id: dict[str, Item], judges: Sequence[LLMJudge], combine: str) -> list[Pair]:
    todo = [i for i, (p, s) in enumerate(pairs)
            if question_kind(by_id[p.item_id])[0] == "short" and s.status == "answered"]
    if not todo:
        return pairs
    verdicts = judge_answers(judges, [by_id[pairs[i][0].item_id] for i in todo], [pairs[i][1].response for i in todo],
                             combine)
    out = list(pairs)
    for i, (points, judgements) in zip(todo, verdicts, strict=True):
        p, s = pairs[i]
        status = "error" if points is None else s.status
        out[i] = (p, Scored(**{**s.__dict__, "status": status, "points_earned": points,
                               "judgements": tuple(judgements)}))
    return out


def prepare(backend: Any, block: Sequence[Item], strategy: Strategy, shots: dict[str, list]) -> None:
    """A PreparingBackend's preparation of the block's letters call (`ask` renders the same prompts and makes the
    call): run ahead of the block by run.pipeline."""
    letters = [it for it in block if route(it, strategy) == "letters"]
    prompts = [letters_prompt(it, strategy, shots[it.item_id], p, k)
               for it in letters for k, p in enumerate(record_permutations(it, strategy))]
    if prompts and not generates(strategy.method):
        backend.prepare(prompts, strategy.method)


def ask(backend: Backend, block: Sequence[Item], strategy: Strategy, shots: dict[str, list], *,
        judges: Sequence[LLMJudge] = (), combine: str = "mean") -> list[Pair]:
    """(prompt, Scored) for every record of a block, every route, short answers judged: letters first (every
    shuffle of the block's items in one call, so each stem is shared and forward calls can carry several items),
    then generated answers, then yes/no questions."""
    routes = {it.item_id: route(it, strategy) for it in block}
    letters = [it for it in block if routes[it.item_id] == "letters"]
    prompts = [letters_prompt(it, strategy, shots[it.item_id], p, k)
               for it in letters for k, p in enumerate(record_permutations(it, strategy))]
    pairs: list[Pair] = (list(zip(prompts, ask_letters(backend, prompts, letters, strategy), strict=True))
                         if prompts else [])
    generated = [it for it in block if routes[it.item_id] == "generate"]
    fallback = {it.item_id for it in generated if not generates(strategy.method) and it.answer_type == "truefalse"}
    language = _language([it for it in block if routes[it.item_id] != "letters"], strategy)
    pairs += _generate(backend, generated, strategy, language, fallback)
    for it in block:
        if routes[it.item_id] == "yes_no":
            pairs += _yes_no(backend, it, strategy)
    return _judge(pairs, {it.item_id: it for it in block}, judges, combine)
