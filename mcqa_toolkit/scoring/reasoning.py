"""Reasoning before the answer: separating a model's thinking from its answer, and reading the FINAL answer of a
chain of thought, never a letter the reasoning mentions on the way.

Thinking arrives in two forms. Apart from the answer (Generation.reasoning: vLLM's / DeepSeek's
`reasoning_content`, Gemini's thought parts, Claude's thinking blocks), or inline as `<think>...</think>`
(DeepSeek-R1-style models served without a reasoning parser). `split_reasoning` moves an inline block out of
the answer (everything up to the last `</think>`); a `<think>` never closed means the model ran out of tokens
while thinking: there is no answer (status unanswered, rule `think_unclosed`), as vLLM's deepseek_r1 parser
decides too.

`final_answer` reads a chain of thought written in the answer itself (the `cot` method: "think, then
'Resposta: X'"): the text is cut where the model starts inventing a next question (a line opening with
"Questão:", "Pregunta:", "Domanda:" or "Question:"), then the LAST explicit label ("Resposta: X", "Respuesta: X",
"Risposta: X", "Answer: X", rule `final_label_<lang>`) wins; without one, the single-letter cascade of
extract.py reads the last non-empty line only (rule `final_line:<rule>`); else nothing is read.
"""
from __future__ import annotations

import re

from mcqa_toolkit.scoring.extract import _PHRASES, Extraction, _acceptable, _check, _letter_group, extract_answer

__all__ = ["split_reasoning", "final_answer", "read_answer"]

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_NEXT_QUESTION = re.compile(r"(?m)^[ \t*#]*(?:Questão|Quest[ãa]o|Pregunta|Domanda|Question)\s*\d*\s*:")


def split_reasoning(text: str, reasoning: str = "") -> tuple[str, str, bool]:
    """(reasoning, answer, complete): an inline <think> block moved out of `text` and joined to `reasoning`
    (the provider's separate field); complete is False when a <think> was opened and never closed."""
    if _THINK_CLOSE in text:
        head, _, answer = text.rpartition(_THINK_CLOSE)
        inline = head.split(_THINK_OPEN, 1)[-1].strip()
        return "\n\n".join(x for x in (reasoning.strip(), inline) if x), answer.strip(), True
    if _THINK_OPEN in text:
        before, _, inline = text.partition(_THINK_OPEN)
        return "\n\n".join(x for x in (reasoning.strip(), inline.strip()) if x), before.strip(), False
    return reasoning.strip(), text, True


def final_answer(text: str, letters: str = "ABCDE", language: str | None = None) -> Extraction:
    """The final answer of a chain of thought (see the module docstring)."""
    _check(text, letters, language)
    m = _NEXT_QUESTION.search(text, 1)
    body = text[:m.start()] if m else text
    group = _letter_group(letters)
    last: tuple[int, str, str] | None = None
    for name, lang, pattern in _PHRASES:
        if not name.startswith("label_") or (language is not None and lang not in (language, "en")):
            continue
        for hit in re.finditer(pattern.replace("{L}", group), body):
            if _acceptable(body, hit) and (last is None or hit.start() > last[0]):
                last = (hit.start(), hit.group("letter"), f"final_{name}")
    if last is not None:
        return Extraction(last[1], letters.index(last[1]), last[2], "answered")
    lines = [x for x in body.splitlines() if x.strip()]
    if lines:
        one = extract_answer(lines[-1], letters, language)
        if one.status != "unanswered":
            return Extraction(one.letter, one.option_index, f"final_line:{one.rule}", one.status)
    return Extraction(None, None, "none", "unanswered")


def read_answer(text: str, reasoning: str, letters: str, language: str | None,
                final: bool) -> tuple[Extraction, str, str]:
    """(extraction, answer text, reasoning text) of one generation: reasoning moved apart first, then the
    final-answer reader (`final`, chain of thought) or the extraction cascade on the answer alone."""
    thinking, answer, complete = split_reasoning(text, reasoning)
    if not complete:
        return Extraction(None, None, "think_unclosed", "unanswered"), answer, thinking
    return (final_answer if final else extract_answer)(answer, letters, language), answer, thinking
