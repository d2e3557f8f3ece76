"""Render an Item (with optional few-shot examples and an option permutation) into a `Prompt`.

The Prompt carries everything a scorer needs and nothing model-specific: the completion text, the chat
messages, and the exact strings to score after the prompt. Tokenisation is the scorer's business, with one
convention fixed here (the lm-evaluation-harness one): `text` never ends with a space. When the answer cue
ends with a space ("Answer: "), the prompt ends with "Answer:" and the space starts every continuation
(" A", " Genetic mapping."), because BPE tokenisers fold the space into the next word's token (" A" and
"A" are different ids). A cue like "Answer: (" is kept whole and the letter follows directly ("A").
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcqa_toolkit.items import Item
from mcqa_toolkit.prompts.permutations import check_permutation, identity
from mcqa_toolkit.prompts.template import Template

__all__ = ["Prompt", "render", "Shot"]

Shot = tuple[Item, tuple[int, ...]]  # a few-shot example and the option order it is shown in


@dataclass(frozen=True)
class Prompt:
    """One rendered prompt for one (item, shuffle).

    permutation[pos] is the original option index shown at position pos; `letters[pos]` is its letter.
    `continuations` and `letter_continuations` have one entry per SHOWN position and are the strings scored
    right after `text` (or, when rendered with chat=True, right after `assistant_prefix`).
    `letter_continuations` is empty when options are not shown (cloze).
    `shared_prefix` is instruction + few-shot block: identical for every item rendered with the same
    template and shots (and the same subject / number of options when the instruction uses {subject} /
    {valid_letters}); `text.startswith(shared_prefix)` always holds.
    `neutral_context` is the cue alone, the context for PMI: score(option) - loglik(option | neutral_context);
    `neutral_context + continuations[i]` reads like the template's neutral_cue followed by the option.
    `messages` (chat=True only) holds the system message (if any) and one user turn with the instruction,
    shots and question; the assistant turn then starts with `assistant_prefix` (possibly "").
    """

    item_id: str
    shuffle: int
    permutation: tuple[int, ...]
    letters: str
    text: str
    shared_prefix: str
    continuations: tuple[str, ...]
    letter_continuations: tuple[str, ...]
    neutral_context: str
    messages: tuple[Mapping[str, str], ...] | None = None
    assistant_prefix: str | None = None
    shot_ids: tuple[str, ...] = ()


def split_trailing(text: str, chars: str | None = " ") -> tuple[str, str]:
    """('Answer:', ' ') for 'Answer: ': `text` without its trailing `chars` (None: any whitespace), and those
    characters, which move to the front of whatever is scored next (the tokenizer has different ids for ' A'
    and 'A', and a model writes the space with the letter). The one splitter of the package."""
    stripped = text.rstrip(chars)
    return stripped, text[len(stripped):]


def move_trailing(context: str, continuation: str) -> tuple[str, str]:
    """lm-evaluation-harness's convention for scoring a continuation: the context's trailing whitespace moves
    to the continuation ('Answer: ' + 'Paris' is scored as 'Answer:' + ' Paris')."""
    head, tail = split_trailing(context, None)
    return head, tail + continuation


def _valid_letters(letters: str) -> str:
    return ", ".join(letters)


def _subject(item: Item, template: Template, *field_names: str) -> str:
    if item.subject or not template.uses("subject", *field_names):
        return item.subject
    raise ValueError(
        f"item {item.item_id!r} has no subject, but style {template.style!r} of {template.source} uses {{subject}}"
    )


def _check_renderable(item: Item, role: str) -> None:
    if not isinstance(item, Item):
        raise ValueError(f"{role} must be an Item, got {type(item).__name__}")
    if item.answer_type not in ("single", "multi"):
        raise ValueError(
            f"{role} {item.item_id!r}: answer_type {item.answer_type!r} cannot be shown as lettered options"
        )


def _question_block(item: Item, perm: tuple[int, ...], template: Template, with_options: bool) -> str:
    out = template.question.format(stem=item.stem, subject=_subject(item, template, "question"))
    if with_options:
        out += template.options_header
        out += "".join(
            template.option.format(letter=item.letters[pos], text=item.options[orig])
            for pos, orig in enumerate(perm)
        )
    return out


def _shot_block(shot: Item, perm: tuple[int, ...], template: Template, with_options: bool) -> str:
    assert isinstance(shot.answer, int), "_normalise_shots lets only single-answer keys through"
    pos = perm.index(shot.answer)
    answer = template.shot_answer.format(letter=shot.letters[pos], text=shot.options[shot.answer])
    return (
        template.shot_prefix + _question_block(shot, perm, template, with_options)
        + template.answer_cue + answer + template.shot_separator
    )


def _normalise_shots(shots: Sequence[Item | Shot], target: Item) -> list[Shot]:
    out: list[Shot] = []
    for i, s in enumerate(shots):
        if isinstance(s, Item):
            item, perm = s, None
        elif isinstance(s, (tuple, list)) and len(s) == 2:
            item, perm = s
        else:
            raise ValueError(f"shots[{i}] must be an Item or an (Item, permutation) pair, got {s!r}")
        _check_renderable(item, f"shots[{i}]")
        if item.answer_type != "single" or not isinstance(item.answer, int):
            raise ValueError(f"shots[{i}] {item.item_id!r}: a few-shot example needs a single-answer key")
        if item.item_id == target.item_id or item.parallel_id == target.parallel_id:
            raise ValueError(f"shots[{i}] {item.item_id!r} is the target item (or a translation of it)")
        if perm is None:
            perm = identity(item.n_options)
        perm = check_permutation(perm, item.n_options, f"shots[{i}] permutation")
        out.append((item, perm))
    return out


def render(
    item: Item,
    template: Template,
    *,
    shots: Sequence[Item | Shot] = (),
    permutation: Sequence[int] | None = None,
    shuffle: int = 0,
    chat: bool = False,
    with_options: bool | None = None,
) -> Prompt:
    """The Prompt for `item` shown in `permutation` order (identity if None) after the few-shot `shots`.

    `shots` are Items (shown in original order) or (Item, permutation) pairs, e.g. from `select_shots`.
    `with_options=None` follows the template (`show_options`; False for the cloze style); False renders
    the stem only and leaves the options as `continuations`. `shuffle` is only recorded.
    """
    _check_renderable(item, "item")
    if not isinstance(template, Template):
        raise ValueError(f"template must be a Template (see load_template), got {type(template).__name__}")
    if not isinstance(shuffle, int) or shuffle < 0:
        raise ValueError(f"shuffle must be a non-negative int, got {shuffle!r}")
    show = template.show_options if with_options is None else bool(with_options)
    if show and not template.uses("text", "option"):
        raise ValueError(
            f"style {template.style!r} of {template.source} has no option format; use with_options=False"
        )
    perm = identity(item.n_options) if permutation is None else check_permutation(permutation, item.n_options)
    shot_list = _normalise_shots(shots, item)
    letters = item.letters

    subject = _subject(item, template, "instruction", *(("system",) if chat else ()))
    shared = template.instruction.format(valid_letters=_valid_letters(letters), subject=subject)
    shared += "".join(_shot_block(s, p, template, show) for s, p in shot_list)
    if shot_list:
        shared += template.shots_footer
    body = shared + _question_block(item, perm, template, show)
    cue, cue_space = split_trailing(template.answer_cue)
    text = body + cue

    messages = assistant_prefix = None
    lead = cue_space
    if chat:
        system = template.system.format(valid_letters=_valid_letters(letters), subject=subject)
        user = body.rstrip()  # the options' trailing newline belongs to no turn
        messages = tuple(
            [{"role": "system", "content": system}] * bool(system) + [{"role": "user", "content": user}]
        )
        assistant_prefix, lead = split_trailing(template.assistant_prefix)

    continuations = tuple(
        lead + template.continuation.format(letter=letters[pos], text=item.options[orig])
        for pos, orig in enumerate(perm)
    )
    # neutral_context + continuation must read like neutral_cue + option, whichever space moved
    neutral = template.neutral_cue
    if lead and neutral.endswith(lead):
        neutral = neutral[: -len(lead)]
    return Prompt(
        item_id=item.item_id,
        shuffle=shuffle,
        permutation=perm,
        letters=letters,
        text=text,
        shared_prefix=shared,
        continuations=continuations,
        letter_continuations=tuple(lead + letter for letter in letters) if show else (),
        neutral_context=neutral,
        messages=messages,
        assistant_prefix=assistant_prefix,
        shot_ids=tuple(s.item_id for s, _ in shot_list),
    )
