"""Token ids of many long prompts, each shared piece of text encoded once per run (`TokenCache`).

An exam run renders every item's shuffles as long prompts: instruction + few-shot block (the same for every item
of the run, ~5,000 characters on ENEM), the stem (the same for every shuffle of an item), then the options in the
shuffle's order and the cue; letter scoring also encodes each prompt followed by each letter. Encoding every text
whole repeats the shared parts for every shuffle and letter (145 ms per item on the reference CPU for 30 shuffles
of a ~1,500-token prompt). `TokenCache` cuts each text into segments at boundaries no token can cross, encodes
every segment it has not seen (one tokenizer call per batch) and concatenates the cached ids.

Why the ids are exactly those of the whole text: a BPE model forms every token by merging adjacent symbols into a
vocabulary entry, and added tokens (special tokens, newline runs) are matched as whole strings; so if no entry of
either contains the two characters on each side of a cut, no token crosses it, and the merges on each side never
interact (each step merges the best-ranked pair, and pairs on one side do not depend on the other):
encode(a + b) == encode(a) + encode(b), special tokens with the first segment only. Cuts sit right after a
newline whose next character never follows a newline inside a vocabulary entry or an added token (for Gemma: a
run of newlines ends a segment).

That argument needs a tokenizer that encodes the normalised text as one word with a BPE model (no dropout),
a normaliser that maps one character at a time (string replacements of single characters, e.g. Gemma's ' ' ->
'▁'), no pre-tokenizer (or a split on a string the normaliser removes, as Gemma's GGUF tokenizer has), added
tokens that do not absorb their neighbours (no lstrip / rstrip / single_word), and a post-processor that only
prepends (BOS). `newline_followers` checks all of that and returns None otherwise; such tokenizers (byte-level
BPE with a regex pre-tokenizer: Llama 3, Qwen, GPT-2) are encoded whole, as before.
"""
from __future__ import annotations

import json
import re
import weakref
from collections.abc import Sequence
from itertools import chain
from typing import Any

MAX_SEGMENTS = 20_000  # cached segments kept (a run's few-shot lines and a few items' lines; cleared when full)


def _normaliser_ok(spec: Any) -> bool:
    """Whether a normaliser maps text one character at a time: none, or single-character string replacements."""
    if spec is None:
        return True
    if spec.get("type") == "Sequence":
        return all(_normaliser_ok(s) for s in spec.get("normalizers", []))
    pattern = spec.get("pattern", {})
    return spec.get("type") == "Replace" and "String" in pattern and len(pattern["String"]) == 1


def _replaced(spec: Any) -> set[str]:
    """The characters a (checked) normaliser replaces."""
    if spec is None:
        return set()
    if spec.get("type") == "Sequence":
        return set().union(*(_replaced(s) for s in spec.get("normalizers", [])))
    return {spec["pattern"]["String"]}


def _pre_tokenizer_ok(spec: Any, normaliser: Any) -> bool:
    """No pre-tokenizer, or a split on a string the normaliser replaces (so it never splits)."""
    if spec is None:
        return True
    pattern = spec.get("pattern", {})
    return spec.get("type") == "Split" and pattern.get("String") in _replaced(normaliser)


def _state(component: Any) -> Any:
    """A tokenizers component (normaliser, pre-tokenizer) as its JSON spec, None when absent."""
    return None if component is None else json.loads(component.__getstate__())


def newline_followers(tokenizer: Any) -> frozenset[str] | None:
    """The characters that follow a newline inside some vocabulary entry or added token (a cut after a newline is
    safe when the next character is not one of them), or None when the tokenizer is not of the one-word BPE kind
    the module docstring describes."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or type(backend.model).__name__ != "BPE" or backend.model.dropout:
        return None
    normaliser, pre = _state(backend.normalizer), _state(backend.pre_tokenizer)
    if not _normaliser_ok(normaliser) or not _pre_tokenizer_ok(pre, normaliser):
        return None
    added = list(getattr(tokenizer, "added_tokens_decoder", {}).values())
    if any(a.lstrip or a.rstrip or a.single_word for a in added):
        return None
    normalise = backend.normalizer.normalize_str if backend.normalizer is not None else (lambda s: s)
    if normalise("\n") != "\n":
        return None
    bos = tokenizer("", add_special_tokens=True).input_ids
    for probe in ("a", "Resposta: (A)", "\n\nx"):  # the post-processor only prepends
        plain = tokenizer(probe, add_special_tokens=False).input_ids
        if tokenizer(probe, add_special_tokens=True).input_ids != bos + plain:
            return None
    entries = [e for e in backend.get_vocab(with_added_tokens=True) if "\n" in e] + \
        [a.content for a in added if "\n" in a.content]
    followers = {e[i + 1] for e in entries for i in range(len(e) - 1) if e[i] == "\n"}
    # followers are normalised characters: add the raw characters that normalise to one of them
    return frozenset(followers | {c for c in _replaced(normaliser) if normalise(c) in followers})


_PATTERNS: weakref.WeakKeyDictionary[Any, re.Pattern | None] = weakref.WeakKeyDictionary()


def _cut_pattern(tokenizer: Any) -> re.Pattern | None:
    """The cut pattern of `tokenizer` (None: not cut), examined once per tokenizer object: every TokenCache of a
    loaded model (a benchmark's, a renewed backend's) shares it instead of scanning the vocabulary again."""
    try:
        return _PATTERNS[tokenizer]
    except (KeyError, TypeError):
        pass
    followers = newline_followers(tokenizer)
    pattern = None if followers is None else re.compile(
        "\n(?=[^" + re.escape("".join(sorted(followers | {"\n"}))) + "])")
    try:
        _PATTERNS[tokenizer] = pattern
    except TypeError:  # an object that takes no weak reference: examined again next time
        pass
    return pattern


class TokenCache:
    """Encodes texts segment by segment, each distinct segment once (see the module docstring). One per backend
    (a run's); `encode_batch` gives exactly the ids of the tokenizer called on each whole text, `encode_extensions`
    those of a text followed by each of several short suffixes (letters, option texts) without building every
    whole text's ids. Safe to call from several threads (a pipelined run prepares the next block while the model
    computes this one: `_ids`)."""

    def __init__(self, tokenizer: Any, max_segments: int = MAX_SEGMENTS):
        self.tokenizer = tokenizer
        self.max_segments = max_segments
        self._cut: re.Pattern | None | bool = False  # False: not yet known (looked up on first use)
        self._segments: dict[tuple[str, bool], tuple[int, ...]] = {}
        self.stats = {"texts": 0, "chars": 0, "encoded_chars": 0}

    @property
    def supported(self) -> bool:
        """Whether texts are cut into segments (else every text is encoded whole); the tokenizer is examined on
        first use (~0.2 s for Gemma's 262k entries), once per tokenizer object (`_cut_pattern`). The cut pattern
        matches the newline a cut follows (a literal first character: the regex engine jumps from newline to
        newline)."""
        if self._cut is False:
            self._cut = _cut_pattern(self.tokenizer)
        return self._cut is not None

    def split(self, text: str) -> list[str]:
        """The segments of `text` (concatenated, they are `text`; at least one, "" for an empty text)."""
        cut = self._cut
        assert isinstance(cut, re.Pattern), "split() is used only when `supported`"
        out, a = [], 0
        for m in cut.finditer(text):
            out.append(text[a: m.end()])
            a = m.end()
        out.append(text[a:])
        return out

    def _plain(self, texts: Sequence[str], special: bool) -> list[tuple[int, ...]]:
        self.stats["encoded_chars"] += sum(map(len, texts))
        return [tuple(x) for x in self.tokenizer(list(texts), add_special_tokens=special).input_ids]

    def _ids(self, pieces: list[list[tuple[str, bool]]]) -> dict[tuple[str, bool], tuple[int, ...]]:
        """A segment table holding every piece of `pieces` (the missing ones encoded, one tokenizer call per
        special-token mode). Several threads may call it: each works on the table it looked up (a full table is
        replaced, never cleared under another reader), and a segment two threads both miss gets the same ids."""
        seg = self._segments
        missing = list(dict.fromkeys(p for ps in pieces for p in ps if p not in seg))
        if len(seg) + len(missing) > self.max_segments:
            seg = self._segments = {}  # a bounded cache: these texts re-encode what they need
            missing = list(dict.fromkeys(p for ps in pieces for p in ps))
        for special in (True, False):
            todo = [s for s, sp in missing if sp == special]
            for s, ids in zip(todo, self._plain(todo, special) if todo else [], strict=True):
                seg[s, special] = ids
        return seg

    def _count(self, texts: Sequence[str]) -> None:
        self.stats["texts"] += len(texts)
        self.stats["chars"] += sum(map(len, texts))

    def encode_batch(self, texts: Sequence[str], add_special_tokens: bool = True) -> list[tuple[int, ...]]:
        """Token ids of each text, as `tokenizer(text, add_special_tokens=...)` gives them."""
        if not texts:
            return []
        self._count(texts)
        if not self.supported:
            return self._plain(texts, add_special_tokens)
        pieces = [[(s, add_special_tokens and k == 0) for k, s in enumerate(self.split(t))] for t in texts]
        seg = self._ids(pieces)
        return [tuple(chain.from_iterable(seg[p] for p in ps)) for ps in pieces]

    def encode(self, text: str, add_special_tokens: bool = True) -> tuple[int, ...]:
        return self.encode_batch([text], add_special_tokens)[0]

    def encode_extensions(self, texts: Sequence[str], suffixes: Sequence[Sequence[str]],
                          add_special_tokens: bool = True
                          ) -> list[tuple[tuple[int, ...], list[tuple[int, tuple[int, ...]]]]]:
        """Per text: (its ids, per suffix (n, tail)) such that the ids of text + suffix are `ids[:n] + tail`, as
        the tokenizer gives them for the whole string. A cut depends only on the characters beside it, so text +
        suffix has the text's cuts up to its last segment, and that segment + suffix is cut on its own: the
        suffixes cost their last segment's encoding, not a whole text each. Unsupported tokenizers encode every
        text + suffix whole (n = 0)."""
        if not texts:
            return []
        if not self.supported:
            text_ids = self.encode_batch(texts, add_special_tokens)
            wholes = iter(self.encode_batch([t + x for t, xs in zip(texts, suffixes, strict=True) for x in xs],
                                            add_special_tokens))
            return [(i, [(0, next(wholes)) for _ in xs]) for i, xs in zip(text_ids, suffixes, strict=True)]
        self._count(texts)
        cuts = [self.split(t) for t in texts]
        pieces = [[(s, add_special_tokens and k == 0) for k, s in enumerate(c)] for c in cuts]
        tails = [[[(s, add_special_tokens and len(c) == 1 and k == 0) for k, s in enumerate(self.split(c[-1] + x))]
                  for x in xs] for c, xs in zip(cuts, suffixes, strict=True)]
        seg = self._ids(pieces + [t for ts in tails for t in ts])
        out = []
        for ps, ts in zip(pieces, tails, strict=True):
            ids = tuple(chain.from_iterable(seg[p] for p in ps))
            n = len(ids) - len(seg[ps[-1]])
            out.append((ids, [(n, tuple(chain.from_iterable(seg[p] for p in t))) for t in ts]))
        return out
