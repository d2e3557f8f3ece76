"""Language names and codes as sources write them ("Portuguese", "portuguese", "pt", "pt-BR", "North Macedonian")
-> the language code of an Item, through langcodes (CLDR's names, the IANA subtag registry), not a table of ours.

Item.language is a language subtag ("pt", "es", "mk"): territory and script are dropped, so "Portuguese", "pt-BR"
and "Brazilian Portuguese" are all "pt", and a source's every spelling of one language is one code.
"""
from __future__ import annotations

import functools

import langcodes


@functools.lru_cache(maxsize=1024)
def language_code(value: str) -> str | None:
    """The language subtag `value` names, or None when it names none (the caller's record is then unusable):
    - a valid BCP-47 tag, any case or with "_" ("pt", "pt-BR", "pt_br", "por") -> its language, shortest form ("pt");
    - a language's name in English or else in any language ("Portuguese", "português") -> its code;
    - a name that qualifies a language name with its country ("North Macedonian", as EXAMS writes Macedonian) ->
      that language, when the whole names a country (North Macedonia) whose most likely language in CLDR it is.
    "und" (undetermined) names no language."""
    text = " ".join(str(value).split())
    if not text:
        return None
    try:
        found = langcodes.get(text) if langcodes.tag_is_valid(text) else _named(text)
    except (LookupError, ValueError):
        found = None
    return found.language if found is not None and found.language not in (None, "und") else None


def _named(name: str) -> langcodes.Language | None:
    for language in ("en", None):    # the releases write English names: English first, any language after
        try:
            return langcodes.find(name, language)
        except LookupError:
            pass
    return _qualified(name)


def _qualified(name: str) -> langcodes.Language | None:
    """'North Macedonian' -> mk: a trailing language name (Macedonian, mk) with words before it, when the whole name
    is found as a country's (North Macedonia) and that country's most likely language is the same one."""
    words = name.split()
    try:
        country = langcodes.Language.find_name("territory", name, "en").territory
    except LookupError:
        return None
    likely = langcodes.Language.make(territory=country).maximize().language
    for k in range(1, len(words)):
        try:
            base = langcodes.find(" ".join(words[k:]), "en")
        except LookupError:
            continue
        if base.language == likely:
            return langcodes.Language.make(language=base.language)
    return None
