"""Reading a generated answer for every question type: several letters (multi), one True/False per statement
(truefalse), free text (short), optionally from a structured JSON reply {"answer": ..., "explanation": ...}.

Each reader returns a `Reading`: the answer in SHOWN terms (letter positions for multi, bools for truefalse,
text for short), the rule that fired, the status (answered | unanswered | refused) and, when nothing usable
was read, the reason. Rules, first match wins:

multi (`read_letters`): `bare_letters` (the whole output is a list of letters: "A, C", "B D", "A and C",
  "A, B, D."), `labels_<lang>` (a label then a list: "Answers: A and C", "As alternativas corretas são A e
  D", "Las opciones correctas son B y C"), `refusal`, then the single-letter cascade of extract.py
  (`single:<rule>`: one letter is a valid multi answer), else `none`.
truefalse (`read_truefalse`): `tf_list` (the whole output is a list of values: "T F T", "True, False,
  True", "V, F"), `tf_label` (a label then a list), `tf_numbered` (lines "1. True", "2) False"), `refusal`,
  `tf_words` (every True/False word of the output, when there are exactly as many as statements), else
  `none`. Values are True/False, T/F and V/F (verdadeiro/verdadero/vero, falso). A list of the wrong
  length is `unanswered` with the counts in the reason, never padded or cut.
short (`read_short`): the whole text, stripped (`text`); empty -> unanswered. Refusals are not detected:
  the judge grades whatever was written.
structured (`parse_json_answer`): the first JSON object with an "answer" key, inside a code fence or not,
  with any text around it; the answer (string, list or bool list) is then read by the rules above and the
  rule is prefixed `json:`. Tried first on every output (asked for or not, a JSON reply means what it says);
  without one, or with unparseable JSON, the plain rules read the whole text.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mcqa_toolkit.scoring.extract import _OPEN, _REFUSAL, _VERB_AFTER, _WORD_LIKE, _check, extract_answer

__all__ = ["Reading", "read_letters", "read_truefalse", "read_short", "parse_json_answer", "read_response"]


@dataclass(frozen=True)
class Reading:
    """What a generated text answered, in shown terms: `value` is a tuple of shown positions (multi), a tuple
    of bools (truefalse), a str (short), or None; `reason` says why nothing usable was read."""

    value: Any
    rule: str
    status: str  # answered | unanswered | refused
    reason: str = ""
    explanation: str = ""  # the JSON reply's explanation, when there was one


_SEP = r"\s*(?:,|;|/|&|\+|\band\b|\be\b|\by\b|\bed\b)?\s*"
_LIST_PHRASES: tuple[tuple[str, str, str], ...] = (
    ("labels_pt", "pt", r"(?i:\b(?:respostas?|alternativas?|op[çc](?:[ãa]o|[õo]es)|letras?)"
                        r"(?:\s+(?:corretas?|certas?|finais|final))?\s*(?:[:：]|\s(?:s[ãa]o|é|seriam|seria)\s*:?))"),
    ("labels_es", "es", r"(?i:\b(?:respuestas?|opci(?:[óo]n|ones)|alternativas?|letras?)(?:\s+(?:correctas?|finales"
                        r"|final))?\s*(?:[:：]|\s(?:son|es|ser[íi]an|ser[íi]a)\s*:?))"),
    ("labels_it", "it", r"(?i:\b(?:rispost[ae]|opzion[ei]|alternativ[ae]|letter[ae])(?:\s+(?:corrett[ae]|esatt[ae]"
                        r"|giust[ae]|final[ei]))?\s*(?:[:：]|\s(?:sono|è|é)\s*:?))"),
    ("labels_en", "en", r"(?i:\b(?:(?:final|correct)\s+)?(?:answers?|options?|choices?|letters?)\s*(?:[:：]|\s(?:are"
                        r"|is|would\s+be)\s*:?))"),
)
_TF_WORDS = {"true": True, "false": False, "verdadeiro": True, "verdadero": True, "vero": True, "falso": False}
_TF_LETTERS = {"T": True, "F": False, "V": True}
_TF_WORD = r"(?:[Tt]rue|TRUE|[Ff]alse|FALSE|[Vv]erdadeiro|[Vv]erdadero|[Vv]ero|[Ff]also)"
_TF_TOKEN = rf"(?<![\w'’])(?:{_TF_WORD}|[TFV])(?![\w'’])"
_TF_LIST = rf"{_TF_TOKEN}(?:\s*(?:,|;|/|\||-|\band\b|\be\b|\by\b|\bed\b)?\s*{_TF_TOKEN})*"
_LABEL = r"(?i:\b(?:(?:final|correct)\s+)?(?:answers?|respostas?|respuestas?|rispost[ae])\s*\**\s*[:：])"


def _letter_list(letters: str) -> str:
    one = f"[(\\[*]*(?<![\\w'’])[{re.escape(letters)}](?![\\w'’])[)\\]*]*"  # "A", "(A)", "**A**"
    return f"{one}(?:{_SEP}{one})*"


def _letters_in(span: str, letters: str) -> tuple[int, ...]:
    found = re.findall(f"(?<![\\w'’])([{re.escape(letters)}])(?![\\w'’])", span)
    return tuple(sorted({letters.index(x) for x in found}))


def _word_after(text: str, end: int) -> bool:
    """True when the capital just before `end` is really a word ("A resposta", "I think")."""
    after = text[end:]
    return bool(re.match(r"\s+[a-zà-ÿ]", after)) and not re.match(r"\s+" + _VERB_AFTER, after)


def read_letters(text: str, letters: str, language: str | None = None) -> Reading:
    """The set of shown letters a multi-answer output chose (see the module docstring for the rules)."""
    _check(text, letters, language)
    lst = _letter_list(letters)
    bare = re.fullmatch(rf"[\s*_$`\"'(\[{{]*(?P<list>{lst})[\s*_$`\"')\]}}.:,;!]*", text)
    if bare:
        return Reading(_letters_in(bare.group("list"), letters), "bare_letters", "answered")
    for name, lang, phrase in _LIST_PHRASES:
        if language is not None and lang not in (language, "en"):
            continue
        for m in re.finditer(phrase + _OPEN + f"(?P<list>{lst})", text):
            span = m.group("list")
            if len(span) == 1 and span in _WORD_LIKE and _word_after(text, m.end("list")):
                continue  # "Answer: A resposta ..." is not the letter A
            return Reading(_letters_in(span, letters), name, "answered")
    if _REFUSAL.search(text):
        return Reading(None, "refusal", "refused", "the model declined to answer")
    one = extract_answer(text, letters, language)
    if one.option_index is None:
        return Reading(None, "none", "unanswered", "no option letter found")
    return Reading((one.option_index,), f"single:{one.rule}", "answered")


def _tf_values(span: str) -> tuple[bool, ...]:
    out = []
    for tok in re.findall(_TF_TOKEN, span):
        out.append(_TF_LETTERS[tok] if len(tok) == 1 else _TF_WORDS[tok.lower()])
    return tuple(out)


def _tf_reading(values: tuple[bool, ...], n: int, rule: str) -> Reading:
    if len(values) != n:
        return Reading(None, rule, "unanswered", f"{len(values)} True/False values for {n} statements")
    return Reading(values, rule, "answered")


def read_truefalse(text: str, n: int, language: str | None = None) -> Reading:
    """One bool per statement, in order, from a true/false-group output (see the module docstring)."""
    _check(text, "TF", language)
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n (number of statements) must be a positive int, got {n!r}")
    bare = re.fullmatch(rf"[\s*_$`\"'(\[{{]*(?P<list>{_TF_LIST})[\s*_$`\"')\]}}.:,;!]*", text)
    if bare:
        return _tf_reading(_tf_values(bare.group("list")), n, "tf_list")
    m = re.search(_LABEL + _OPEN + f"(?P<list>{_TF_LIST})", text)
    if m:
        return _tf_reading(_tf_values(m.group("list")), n, "tf_label")
    numbered = re.findall(rf"(?m)^[ \t*_-]*\(?(\d+)[.):]\s*\**\s*({_TF_TOKEN})", text)
    if numbered:
        by_number: dict[int, bool] = {}
        for num, tok in numbered:  # the first value given for each statement number
            by_number.setdefault(int(num), _tf_values(tok)[0])
        if sorted(by_number) == list(range(1, n + 1)):
            return Reading(tuple(by_number[i] for i in range(1, n + 1)), "tf_numbered", "answered")
    if _REFUSAL.search(text):
        return Reading(None, "refusal", "refused", "the model declined to answer")
    words = tuple(_TF_WORDS[w.lower()] for w in re.findall(rf"(?<![\w'’]){_TF_WORD}(?![\w'’])", text))
    if len(words) == n:
        return Reading(words, "tf_words", "answered")
    return Reading(None, "none", "unanswered", f"no list of {n} True/False values found ({len(words)} True/False "
                                               "words in the output)")


def read_short(text: str) -> Reading:
    """The whole answer text (stripped); empty -> unanswered."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    value = text.strip()
    return Reading(value, "text", "answered") if value else Reading(None, "none", "unanswered", "empty answer")


def first_json_object(text: str, key: str) -> dict[str, Any] | None:
    """The first JSON object in `text` that has `key` (code fences and text around it allowed), else None:
    models wrap the object they were asked for in prose or markdown."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and key in obj:
            return obj
    return None


def parse_json_answer(text: str) -> tuple[Any, str] | None:
    """(answer, explanation) from the first JSON object with an "answer" key in `text` (code fences and text
    around it allowed); None when there is none."""
    obj = first_json_object(text, "answer")
    if obj is not None:
        explanation = obj.get("explanation", "")
        return obj["answer"], explanation if isinstance(explanation, str) else json.dumps(explanation)
    return None


def _answer_text(answer: Any) -> str:
    """A JSON answer value as text for the plain readers: lists joined by commas, bools as True/False."""
    if isinstance(answer, bool):
        return str(answer)
    if isinstance(answer, list):
        return ", ".join(_answer_text(a) for a in answer)
    return answer if isinstance(answer, str) else json.dumps(answer)


def read_response(text: str, kind: str, *, letters: str = "", n_statements: int = 0,
                  language: str | None = None) -> Reading:
    """Read `text` as an answer of type `kind` (single | multi | truefalse | short): from its JSON reply's
    "answer" when there is one (rule prefixed `json:`), else from the plain text."""
    source, prefix, explanation = text, "", ""
    parsed = parse_json_answer(text)
    if parsed is not None:
        source, prefix, explanation = _answer_text(parsed[0]), "json:", parsed[1]
    if kind == "single":
        one = extract_answer(source, letters, language)
        value = None if one.option_index is None else one.option_index
        reading = Reading(value, one.rule, one.status, "" if value is not None or one.status == "refused"
                          else "no option letter found")
    elif kind == "multi":
        reading = read_letters(source, letters, language)
    elif kind == "truefalse":
        reading = read_truefalse(source, n_statements, language)
    elif kind == "short":
        reading = read_short(source)
    else:
        raise ValueError(f"unknown question type {kind!r}")
    return Reading(reading.value, prefix + reading.rule, reading.status, reading.reason, explanation)
