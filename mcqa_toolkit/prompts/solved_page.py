"""A solved question as a web page shows it: the text a model is contaminated with (contamination.fine_tuning).

Exam questions and their keys circulate as pages of solved questions ("Questão 12 — ENEM 2021 ... Resposta: C").
`solved_page` writes one item that way, in the labels of the item's exam language (`Item.exam_language`: the
English questions of ENEM's Portuguese exam are shown on a Portuguese page), with its options in the published
order and the published letter of the key. `exposure_split` draws which items are published (a seeded fraction of
each subject), the design of the contamination experiments. The templates are data (`PAGE_TEMPLATES`), recorded verbatim
in each contaminated model's manifest, so what the model saw can be rebuilt from the manifest and the items.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

from mcqa_toolkit.items import LETTERS, Item, ItemSet
from mcqa_toolkit.prompts.permutations import stable_seed

__all__ = ["PageTemplate", "PAGE_TEMPLATES", "page_template", "solved_page", "has_page", "exposure_split",
           "matched_split"]


@dataclass(frozen=True)
class PageTemplate:
    """The fragments of one solved question: `header` ({exam}, {number}), `option` ({letter}, {text}) and `answer`
    ({letter}); the page is header + stem + blank line + option lines + blank line + answer."""

    header: str
    option: str
    answer: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PAGE_TEMPLATES: dict[str, PageTemplate] = {
    "pt": PageTemplate("{exam} — Questão {number}\n\n", "{letter}) {text}\n", "\nResposta: {letter}\n"),
    "en": PageTemplate("{exam} — Question {number}\n\n", "{letter}) {text}\n", "\nAnswer: {letter}\n"),
    "es": PageTemplate("{exam} — Pregunta {number}\n\n", "{letter}) {text}\n", "\nRespuesta: {letter}\n"),
    "it": PageTemplate("{exam} — Domanda {number}\n\n", "{letter}) {text}\n", "\nRisposta: {letter}\n"),
}


def page_template(language: str) -> PageTemplate:
    """The page template of an exam language (ValueError naming the languages there are)."""
    try:
        return PAGE_TEMPLATES[language]
    except KeyError:
        raise ValueError(f"no solved-page template for language {language!r}; there are {sorted(PAGE_TEMPLATES)}") \
            from None


def _exam_name(item: Item) -> str:
    """'ENEM 2021' for an item of source enem and year 2021; the item's exam otherwise."""
    if item.year is not None and item.source:
        return f"{item.source.upper()} {item.year}"
    return item.exam or item.source


def has_page(item: Item) -> bool:
    """Whether the item has a key to publish: a single-answer item, not annulled."""
    return item.answer_type == "single" and isinstance(item.answer, int) and bool(item.options)


def solved_page(item: Item, template: PageTemplate | None = None) -> str:
    """One single-answer item as a page of solved questions shows it (published option order and key letter).
    An annulled item or one of another type has no key to publish: ValueError naming the item."""
    if not has_page(item):
        raise ValueError(f"item {item.item_id!r}: only single-answer items with a key make a solved page "
                         f"(answer_type {item.answer_type!r}, answer {item.answer!r})")
    t = template or page_template(item.exam_language)
    number = item.meta.get("number", item.item_id)
    options = "".join(t.option.format(letter=LETTERS[k], text=text) for k, text in enumerate(item.options))
    return (t.header.format(exam=_exam_name(item), number=number) + item.stem.strip() + "\n\n" + options
            + t.answer.format(letter=item.answer_letter))  # has_page: a single-answer key


def exposure_split(items: ItemSet, fraction: float = 0.5, seed: int = 0) -> tuple[list[str], list[str]]:
    """(exposed, held_out) item ids, each in item order: within each subject, round(fraction x n) of the items
    that have a page (`has_page`), drawn with a generator seeded by (seed, subject), so the split does not depend
    on the order of the items or on other subjects. Items without a page are in neither list."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction is the share of items exposed, in (0, 1), got {fraction}")
    by_subject: dict[str, list[str]] = {}
    for it in items:
        if has_page(it):
            by_subject.setdefault(it.subject, []).append(it.item_id)
    if not by_subject:
        raise ValueError("no single-answer item with a key: nothing can be exposed")
    chosen: set[str] = set()
    for subject, ids in by_subject.items():
        rng = random.Random(stable_seed("exposure_split", seed, subject))
        chosen.update(rng.sample(sorted(ids), round(fraction * len(ids))))
    keyed = [i for ids in by_subject.values() for i in ids]
    order = {it.item_id: n for n, it in enumerate(items)}
    exposed = sorted(chosen, key=order.__getitem__)
    return exposed, sorted(set(keyed) - chosen, key=order.__getitem__)


def matched_split(items: ItemSet, counts: dict[str, int], seed: int = 0) -> list[str]:
    """Item ids (in item order) of `counts[subject]` items with a page from each subject, drawn with a generator
    seeded by (seed, subject): the pages of a control that sees as many pages of each subject as an exposure split
    of another exam (e.g. `counts` of `exposure_split`'s exposed items), none of that exam's."""
    by_subject: dict[str, list[str]] = {}
    for it in items:
        if has_page(it):
            by_subject.setdefault(it.subject, []).append(it.item_id)
    short = {s: n for s, n in counts.items() if len(by_subject.get(s, ())) < n}
    if short:
        raise ValueError(f"too few items with a page for {short} (subject: wanted)")
    chosen: set[str] = set()
    for subject, n in counts.items():
        chosen.update(random.Random(stable_seed("matched_split", seed, subject)).sample(sorted(by_subject[subject]), n))
    return [it.item_id for it in items if it.item_id in chosen]
