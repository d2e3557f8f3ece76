"""Item identity across tools: which of our loaders' items a question from another tool's results is.

Another tool's result names a question in its own way (lm-eval's `doc`, inspect_ai's sample id and metadata,
HELM's instance id and references). `SourceQuestion` is what a reader could find; `ItemMatcher` finds our item
for it, in this order:
  1. an id: the source's id equals an item's `item_id` or `parallel_id`;
  2. exam year and question number (ENEM-style: `Item.year` and `Item.meta["number"]`, the loaders' public
     fields), narrowed by language and then by the stem's text when several items share them;
  3. the text: a hash of the normalised stem (NFKC, case-folded, whitespace collapsed), narrowed by the options.
A match also maps the options the source showed to our option indices (by normalised text; in the source's
order when the texts differ but the number agrees), giving the record's permutation, and checks that the
source's key is our key. What does not match gets an Item built from the source (no IRT parameters) and is
listed with the reason, never dropped.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcqa_toolkit.items import Item, ItemSet

__all__ = ["SourceQuestion", "Match", "ItemMatcher", "normalise_text", "text_hash", "source_item", "as_int"]


def normalise_text(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed, stripped: what two renderings of one question share."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", str(text)).casefold()).strip()


def as_int(value: Any) -> int | None:
    """A year or question number as another tool stored it (an int, or a string of digits), else None."""
    return int(value) if isinstance(value, (int, str)) and str(value).strip().isdigit() else None


def text_hash(text: str) -> str:
    """sha256[:16] of the normalised text."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class SourceQuestion:
    """A question as another tool recorded it. `key` names it in that tool's file (for error messages and
    the unmatched list); `ids` are its identifiers; `options` are in the order the tool showed them and
    `answer` is the shown position of the key (None when unknown or annulled)."""

    key: str
    stem: str
    options: tuple[str, ...]
    answer: int | None
    ids: tuple[str, ...] = ()
    year: int | None = None
    number: int | None = None
    language: str | None = None
    subject: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Match:
    """Our item for a source question, how it was found, and permutation[shown position] = our option index."""

    item: Item
    permutation: tuple[int, ...]
    how: str


def _option_map(item: Item, q: SourceQuestion) -> tuple[int, ...] | str:
    """Shown position -> our option index, or why the options cannot be lined up."""
    if len(q.options) != item.n_options:
        return f"{len(q.options)} options, our item has {item.n_options}"
    ours = [normalise_text(o) for o in item.options]
    theirs = [normalise_text(o) for o in q.options]
    if sorted(ours) == sorted(theirs) and len(set(ours)) == len(ours):
        perm = tuple(ours.index(t) for t in theirs)
    else:  # texts rendered differently (letters, markup): the source's order is ours
        perm = tuple(range(item.n_options))
    if q.answer is not None and item.answer_type == "single" and isinstance(item.answer, int) \
            and perm[q.answer] != item.answer:
        return f"its key ({q.options[q.answer][:40]!r}) is not our key ({item.options[item.answer][:40]!r})"
    return perm


class ItemMatcher:
    """Finds our items for source questions (see the module docstring); `items` None matches nothing."""

    def __init__(self, items: ItemSet | None):
        self.items = items if items is not None else ItemSet([])
        self._by_id: dict[str, list[Item]] = {}
        self._by_number: dict[tuple[int, int], list[Item]] = {}
        self._by_text: dict[str, list[Item]] = {}
        for it in self.items:
            for key in {it.item_id, it.parallel_id}:
                self._by_id.setdefault(key, []).append(it)
            number = it.meta.get("number") if isinstance(it.meta, Mapping) else None
            if it.year is not None and isinstance(number, int):
                self._by_number.setdefault((int(it.year), number), []).append(it)
            self._by_text.setdefault(text_hash(it.stem), []).append(it)

    def _narrow(self, found: list[Item], q: SourceQuestion) -> list[Item]:
        if len(found) > 1 and q.language:
            found = [it for it in found if it.language == q.language] or found
        if len(found) > 1:
            same_text = [it for it in found if text_hash(it.stem) == text_hash(q.stem)]
            found = same_text or found
        if len(found) > 1:
            opts = sorted(normalise_text(o) for o in q.options)
            found = [it for it in found if sorted(normalise_text(o) for o in it.options) == opts] or found
        return found

    def match(self, q: SourceQuestion) -> Match | str:
        """The Match, or the reason there is none (a sentence naming the source question)."""
        candidates: list[tuple[str, list[Item]]] = []
        ids = [i for i in q.ids if i in self._by_id]
        if ids:
            candidates.append(("id", [it for i in ids for it in self._by_id[i]]))
        if q.year is not None and q.number is not None:
            candidates.append(("year_number", self._by_number.get((int(q.year), int(q.number)), [])))
        candidates.append(("text", self._by_text.get(text_hash(q.stem), [])))
        reasons = []
        for how, found in candidates:
            found = self._narrow(list({it.item_id: it for it in found}.values()), q)
            if not found:
                continue
            if len(found) > 1:
                reasons.append(f"{how}: {len(found)} items fit ({', '.join(it.item_id for it in found[:3])}...)")
                continue
            perm = _option_map(found[0], q)
            if isinstance(perm, str):
                reasons.append(f"{how}: {found[0].item_id}: {perm}")
                continue
            return Match(found[0], perm, how)
        why = "; ".join(reasons) if reasons else "no item with its id, year and number, or text"
        return f"{q.key}: {why}"


def source_item(q: SourceQuestion, source: str, exam: str) -> Item:
    """An Item built from the source question alone (no IRT parameters), for questions that match none of
    ours: id = the source's first id, else `<exam>:<text hash>`; options in the source's order."""
    item_id = q.ids[0] if q.ids else f"{exam}:{text_hash(q.stem + '|' + '|'.join(q.options))}"
    return Item(item_id=item_id, source=source, exam=exam, stem=q.stem, options=tuple(q.options), answer=q.answer,
                year=q.year, subject=q.subject, language=q.language or "",
                meta={**dict(q.meta), **({"number": q.number} if q.number is not None else {})})


def option_index(text: str, options: Sequence[str]) -> int | None:
    """The shown position an extracted answer names: a letter A.. (optionally with ')' or '.') or an option's
    text; None when it names none."""
    t = str(text).strip()
    m = re.fullmatch(r"\(?([A-Ja-j])[).:]?", t)
    if m and ord(m[1].upper()) - 65 < len(options):
        return ord(m[1].upper()) - 65
    norm = [normalise_text(o) for o in options]
    return norm.index(normalise_text(t)) if normalise_text(t) in norm else None
