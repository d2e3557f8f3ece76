"""Answer extraction for the `generate` method: a cascade of named rules, first match wins.

Every result records the rule that fired, so analyses can separate clean answers from fallbacks:

1. `bare_letter`: the whole output is one letter, possibly wrapped ("C", "(C)", "**C.**", "$C$").
2. explicit phrasings, per language (`label_*` before `correct_is_*` before `option_word_*`):
   "Resposta: X", "Respuesta: X", "Risposta: X", "Answer: (X)", "ANSWER: $X$";
   "A resposta correta é X", "La respuesta correcta es X", "La risposta corretta è X", "The answer is X";
   "Alternativa X", "Opción X", "Opzione X", "Option X".
3. `refusal`: "I cannot answer", "não posso responder", "no puedo responder", "non posso rispondere", ...
   -> status `refused` (checked after the explicit phrasings, before the weak rules below, so a refusal
   that lists options is not read as an answer).
4. weak markers: `boxed` (\\boxed{X}), `bold` (**X**), `parenthesized` ((X)), `line_start` ("X)" starting
   a line).
5. `last_valid_letter`: the last letter standing alone as a word: the recorded fallback.
6. nothing -> status `unanswered`, rule `none`.

Rules 1-4 take the first match: models, base models especially, often go on to invent the next question
and answer it. Only uppercase letters in `letters` count: lowercase "a", "e", "o" are articles and
conjunctions in pt/es/it. Uppercase "A", "E", "I" are words too ("A resposta", "E quindi", "I think"), so
in labels, phrases and the fallback such a letter is skipped when a lowercase word follows it, unless that
word is a copula or "because" ("A é a correta", "E because ..."); after "Alternativa"/"Option" it always
counts. Any letter followed by an apostrophe ("E' la C", "D'altra parte") or by ". x" ("E. coli") is skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Extraction", "extract_answer", "LANGUAGES", "RULE_NAMES"]

LANGUAGES = ("pt", "es", "it", "en")
_WORD_LIKE = frozenset("AEI")
_OPEN = r"[\s*_$`\"'(\[{]*"  # wrappers allowed between a phrase and its letter: "Resposta: **(C)**"
# A word-like capital followed by one of these is still a letter: "A é a correta", "E because ..."
_VERB_AFTER = (
    r"(?:é|è|es|is|era|seria|sería|sarebbe|está|sembra|parece|seems|was|porque|pois|because|perché|since)\b"
)

# (rule name, language, pattern with {L} standing for the letter group), in priority order
_PHRASES: tuple[tuple[str, str, str], ...] = (
    ("label_pt", "pt", r"(?i:\bresposta(?:\s+(?:final|correta|certa))?\s*\**\s*[:：])" + _OPEN + "{L}"),
    ("label_es", "es", r"(?i:\brespuesta(?:\s+(?:final|correcta))?\s*\**\s*[:：])" + _OPEN + "{L}"),
    ("label_it", "it", r"(?i:\brisposta(?:\s+(?:finale|corretta|esatta|giusta))?\s*\**\s*[:：])" + _OPEN + "{L}"),
    ("label_en", "en", r"(?i:\b(?:final\s+|correct\s+)?answer\s*\**\s*[:：])" + _OPEN + "{L}"),
    ("correct_is_pt", "pt",
     r"(?i:\b(?:resposta|alternativa|op[çc][ãa]o|letra)(?:\s+(?:correta|certa|final))?\s+(?:é|seria)\s*:?\s*"
     r"(?:a\s+)?(?:(?:alternativa|letra|op[çc][ãa]o)\s+)?)" + _OPEN + "{L}"),
    ("correct_is_es", "es",
     r"(?i:\b(?:respuesta|opci[óo]n|alternativa|letra)(?:\s+(?:correcta|final))?\s+(?:es|ser[íi]a)\s*:?\s*"
     r"(?:la\s+)?(?:(?:opci[óo]n|alternativa|letra)\s+)?)" + _OPEN + "{L}"),
    ("correct_is_it", "it",
     r"(?i:\b(?:risposta|opzione|alternativa|lettera)(?:\s+(?:corretta|esatta|giusta|finale))?\s+"
     r"(?:è|é|e'|e’|sarebbe)\s*:?\s*(?:la\s+|l['’]\s*)?(?:(?:opzione|alternativa|lettera)\s+)?)"
     + _OPEN + "{L}"),
    ("correct_is_en", "en",
     r"(?i:\b(?:answer|option|choice|alternative)\s+(?:is|would\s+be|should\s+be)\s*:?\s*"
     r"(?:(?:option|choice|letter|alternative)\s+)?)" + _OPEN + "{L}"),
    ("option_word_pt", "pt", r"(?i:\b(?:alternativa|letra|op[çc][ãa]o)\s*:?\s*)" + _OPEN + "{L}"),
    ("option_word_es", "es", r"(?i:\b(?:opci[óo]n|alternativa|letra|inciso)\s*:?\s*)" + _OPEN + "{L}"),
    ("option_word_it", "it", r"(?i:\b(?:opzione|alternativa|lettera)\s*:?\s*)" + _OPEN + "{L}"),
    ("option_word_en", "en", r"(?i:\b(?:option|choice|letter)\s*:?\s*)" + _OPEN + "{L}"),
)
_WEAK: tuple[tuple[str, str], ...] = (
    ("boxed", r"\\boxed\{\s*\(?{L}"),
    ("bold", r"\*\*\s*\(?{L}\s*[).:]?\s*(?:\*\*|[).:])"),
    ("parenthesized", r"\({L}\)"),
    ("line_start", r"(?m:^[ \t>*_-]*{L}\))"),
)
_REFUSAL = re.compile(
    r"(?i:\bI(?:\s+cannot|\s+can\s*not|\s+can['’]t|\s+am\s+unable\s+to|['’]m\s+unable\s+to"
    r"|\s+am\s+not\s+able\s+to|['’]m\s+not\s+able\s+to)\s+(?:answer|determine|choose|select|help|assist|provide)"
    r"|\bI\s+don['’]t\s+know\b|\bI\s+do\s+not\s+know\b"
    r"|\bn[ãa]o\s+(?:posso|consigo|sou\s+capaz\s+de|tenho\s+como|é\s+poss[íi]vel)"
    r"\s+(?:responder|determinar|escolher)"
    r"|\bn[ãa]o\s+sei\b"
    r"|\bno\s+(?:puedo|soy\s+capaz\s+de|es\s+posible|se\s+puede)\s+(?:responder|contestar|determinar|elegir)"
    r"|\bno\s+s[ée]\s+(?:la\s+respuesta|cu[áa]l)"
    r"|\bnon\s+(?:posso|sono\s+in\s+grado\s+di|è\s+possibile|riesco\s+a)\s+(?:rispondere|determinare|scegliere)"
    r"|\bnon\s+lo\s+so\b|\bnon\s+so\s+(?:rispondere|quale)\b)"
)
RULE_NAMES = ("bare_letter",) + tuple(n for n, _, _ in _PHRASES) + ("refusal",) + tuple(
    n for n, _ in _WEAK) + ("last_valid_letter", "none")


@dataclass(frozen=True)
class Extraction:
    """What a generated text answered: `letter` and its shown `option_index`, or None; `rule` that fired."""

    letter: str | None
    option_index: int | None
    rule: str
    status: str  # answered | unanswered | refused


def _letter_group(letters: str) -> str:
    return f"(?<![\\w'’])(?P<letter>[{re.escape(letters)}])(?![\\w'’])"


def _acceptable(text: str, m: re.Match[str], word_check: bool = True) -> bool:
    """False for a capital that is really a word ("A resposta", "E quindi") or an abbreviation ("E. coli")."""
    after = text[m.end("letter"):]
    if re.match(r"\.\s*[a-zà-ÿ]", after):
        return False
    if not word_check or m.group("letter") not in _WORD_LIKE:
        return True
    return not re.match(r"\s+[a-zà-ÿ]", after) or bool(re.match(r"\s+" + _VERB_AFTER, after))


def _first(pattern: re.Pattern[str], text: str, word_check: bool = True) -> str | None:
    for m in pattern.finditer(text):
        if _acceptable(text, m, word_check):
            return m.group("letter")
    return None


def _check(text: str, letters: str, language: str | None) -> None:
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    if not isinstance(letters, str) or not re.fullmatch(r"[A-Z]+", letters) or len(set(letters)) != len(letters):
        raise ValueError(f"letters must be distinct uppercase letters such as 'ABCDE', got {letters!r}")
    if language is not None and language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES} or None, got {language!r}")


def extract_answer(text: str, letters: str = "ABCDE", language: str | None = None) -> Extraction:
    """The answer in a model's generated `text`, by the first rule of the cascade that finds one.

    `letters` are the shown letters (a letter outside them never counts); `option_index` is the letter's
    position in `letters`, i.e. the shown position. `language` limits the explicit phrasings to that
    language plus English (models often answer in English); None uses all four.
    """
    _check(text, letters, language)
    L = _letter_group(letters)

    def found(letter: str, rule: str) -> Extraction:
        return Extraction(letter, letters.index(letter), rule, "answered")

    bare = re.fullmatch(rf"[\s*_$`\"'(\[{{]*(?P<letter>[{re.escape(letters)}])[\s*_$`\"')\]}}.:,;!]*", text)
    if bare:
        return found(bare.group("letter"), "bare_letter")
    for name, lang, pattern in _PHRASES:
        if language is None or lang in (language, "en"):
            # after "Alternativa"/"Option" a capital is a letter, never an article
            letter = _first(re.compile(pattern.replace("{L}", L)), text, not name.startswith("option_word"))
            if letter:
                return found(letter, name)
    if _REFUSAL.search(text):
        return Extraction(None, None, "refusal", "refused")
    for name, pattern in _WEAK:
        letter = _first(re.compile(pattern.replace("{L}", L)), text)
        if letter:
            return found(letter, name)
    last = [m.group("letter") for m in re.finditer(L, text) if _acceptable(text, m)]
    if last:
        return found(last[-1], "last_valid_letter")
    return Extraction(None, None, "none", "unanswered")
