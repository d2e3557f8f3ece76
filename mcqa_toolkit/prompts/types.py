"""Prompts for the question types beyond single choice: multi-answer, true/false groups and short answer (and
single choice when a strategy asks for structured JSON output), read from the `question_types` section of
`templates/<lang>.yaml` (documented there), so users edit them like every other prompt.

`render_typed` makes the generation prompt; `render_yes_no` makes the no-generation prompts of log-prob
strategies, one per option (multi: "is option B correct?") or statement (truefalse: "is statement 2 true?"),
each scored as `yes_word` against `no_word`. Both return the same `Prompt` as `builder.render`.

Course-exam choice questions whose options could not be split from the stem (meta options_parsed False) are
asked like single/multi questions with the letters found in the stem (meta option_letters) and no option lines.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcqa_toolkit.items import LETTERS, Item
from mcqa_toolkit.prompts.builder import Prompt, split_trailing
from mcqa_toolkit.prompts.permutations import check_permutation, identity
from mcqa_toolkit.prompts.template import check_text, read_template_file, template_path

__all__ = ["TypeTemplate", "load_type_template", "question_kind", "render_typed", "render_yes_no", "KINDS"]

KINDS = ("single", "multi", "truefalse", "short")
_BASE = {"instruction": {"valid_letters", "n_statements", "subject"}, "question": {"stem", "subject"},
         "answer_cue": set(), "json_example": set()}
_FIELDS: dict[str, dict[str, set[str]]] = {
    "single": {**_BASE, "option": {"letter", "text"}},
    "multi": {**_BASE, "option": {"letter", "text"}, "yes_no_question": {"letter", "text"}, "yes_word": set(),
              "no_word": set(), "yes_no_cue": set()},
    "truefalse": {**_BASE, "yes_no_question": {"number", "text"}, "yes_word": set(), "no_word": set(),
                  "yes_no_cue": set()},
    "short": dict(_BASE),
}
_COMMON = {"structured": {"example"}, "structured_cue": set()}


@dataclass(frozen=True)
class TypeTemplate:
    """The prompt fragments of one question type in one language (+ the shared structured-output ones)."""

    language: str
    kind: str
    source: str
    fields: dict[str, str]

    def __getattr__(self, name: str) -> str:
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(name) from None


def load_type_template(language: str, kind: str, path: str | Path | None = None) -> TypeTemplate:
    """The `question_types.<kind>` prompts of `language` (bundled file, or the YAML at `path`); a missing or
    unknown key, a non-string value or an unknown placeholder -> ValueError naming the file and the key."""
    if kind not in KINDS:
        raise ValueError(f"question type {kind!r} not in {KINDS}")
    file = template_path(language, path)
    data = read_template_file(file)
    section = data.get("question_types")
    if not isinstance(section, dict) or not isinstance(section.get(kind), dict):
        raise ValueError(f"{file}: no mapping question_types.{kind}")
    raw = {**{k: section.get(k) for k in _COMMON}, **section[kind]}
    wanted = {**_COMMON, **_FIELDS[kind]}
    missing, unknown = sorted(set(wanted) - set(raw)), sorted(set(section[kind]) - set(_FIELDS[kind]))
    if missing or unknown:
        raise ValueError(f"{file}: question_types.{kind}: missing key(s) {missing}, unknown key(s) {unknown}")
    for key, allowed in wanted.items():
        check_text(f"{file}: question_types.{kind}.{key}", raw[key], allowed)
    return TypeTemplate(language, kind, str(file), {k: raw[k] for k in wanted})


def question_kind(item: Item) -> tuple[str, str]:
    """(how the item is asked: single | multi | truefalse | short, the letters it is answered with).

    A course-exam choice question kept as "short" because its options stayed in the stem is asked as a choice
    question over the letters the loader found there (meta option_letters)."""
    if item.answer_type == "short" and item.meta.get("options_parsed") is False:
        kind = {"SingleChoice": "single", "MultipleChoice": "multi"}.get(str(item.meta.get("question_type")))
        letters = item.meta.get("option_letters") or ""
        if kind is None or not letters:
            raise ValueError(f"item {item.item_id!r}: a choice question without parsed options needs "
                             "meta question_type (Single/MultipleChoice) and meta option_letters")
        return kind, letters
    if item.answer_type == "truefalse":
        return "truefalse", ""
    return item.answer_type, item.letters if item.answer_type in ("single", "multi") else ""


def _n_statements(item: Item) -> int:
    return len(item.answer) if isinstance(item.answer, tuple) else len(item.meta.get("statements") or ())


def _body(item: Item, tt: TypeTemplate, perm: tuple[int, ...], letters: str) -> tuple[str, str]:
    """(instruction, question with its option lines)."""
    instruction = tt.instruction.format(valid_letters=", ".join(letters), n_statements=_n_statements(item),
                                        subject=item.subject)
    question = tt.question.format(stem=item.stem, subject=item.subject)
    if "option" in tt.fields and item.options:
        question += "".join(tt.option.format(letter=LETTERS[pos], text=item.options[o]) for pos, o in enumerate(perm))
    return instruction, question


def _prompt(item: Item, perm: tuple[int, ...], shuffle: int, letters: str, shared: str, body: str, cue: str,
            chat: bool, continuations: tuple[str, ...] = ()) -> Prompt:
    cue, space = split_trailing(cue)
    messages = assistant_prefix = None
    if chat:
        messages = ({"role": "user", "content": body.rstrip()},)
        assistant_prefix = cue
    conts = tuple(space + c for c in continuations)
    return Prompt(item_id=item.item_id, shuffle=shuffle, permutation=perm, letters=letters, text=body + cue,
                  shared_prefix=shared, continuations=conts, letter_continuations=conts, neutral_context=cue,
                  messages=messages, assistant_prefix=assistant_prefix)


def render_typed(item: Item, tt: TypeTemplate, *, permutation: Sequence[int] | None = None, shuffle: int = 0,
                 chat: bool = False, structured: bool = False) -> Prompt:
    """The generation prompt of `item` (its options in `permutation` order): instruction, question, and with
    `structured` the JSON reply format, then the answer cue (or `structured_cue`)."""
    kind, letters = question_kind(item)
    if kind != tt.kind:
        raise ValueError(f"item {item.item_id!r} is asked as {kind!r}, but the template is for {tt.kind!r}")
    perm = identity(item.n_options) if permutation is None else check_permutation(permutation, item.n_options)
    instruction, question = _body(item, tt, perm, letters)
    body = instruction + question
    cue = tt.answer_cue
    if structured:
        body += tt.structured.format(example=tt.json_example)
        cue = tt.structured_cue
    return _prompt(item, perm, shuffle, letters, instruction, body, cue, chat)


def render_yes_no(item: Item, tt: TypeTemplate, *, permutation: Sequence[int] | None = None, shuffle: int = 0,
                  chat: bool = False) -> list[Prompt]:
    """One prompt per shown option (multi) or per statement (truefalse, needs meta["statements"]); each ends
    with `yes_no_cue` and carries (yes_word, no_word) as its two scored continuations."""
    kind, letters = question_kind(item)
    if kind not in ("multi", "truefalse") or kind != tt.kind or item.answer_type != kind:
        raise ValueError(f"item {item.item_id!r}: yes/no prompts are for multi and truefalse items with their "
                         f"own template, not {item.answer_type!r} with {tt.kind!r}")
    perm = identity(item.n_options) if permutation is None else check_permutation(permutation, item.n_options)
    instruction, question = _body(item, tt, perm, letters)
    if kind == "multi":
        asks: list[dict[str, Any]] = [{"letter": LETTERS[pos], "text": item.options[o]} for pos, o in enumerate(perm)]
    else:
        statements = item.meta.get("statements") or ()
        if len(statements) != _n_statements(item):
            raise ValueError(f"item {item.item_id!r}: its statements could not be split from the stem "
                             "(meta['statements']); ask it with method='generate'")
        asks = [{"number": k + 1, "text": s} for k, s in enumerate(statements)]
    return [_prompt(item, perm, shuffle, letters, question, question + tt.yes_no_question.format(**a),
                    tt.yes_no_cue, chat, (tt.yes_word, tt.no_word)) for a in asks]
