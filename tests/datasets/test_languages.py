"""datasets.languages: language names and codes as the releases write them -> one code, through langcodes. The
names the removed hand-kept tables mapped (EXAMS' 16 languages, ENEM's language column) keep their codes, so nothing
loaded before changes its language."""
import pytest

from mcqa_toolkit.datasets.languages import language_code

# the hand-kept tables this replaces, as they were: EXAMS' LANGUAGE_CODES and ENEM's LANGUAGES
EXAMS_TABLE = {"Albanian": "sq", "Arabic": "ar", "Bulgarian": "bg", "Croatian": "hr", "French": "fr", "German": "de",
               "Hungarian": "hu", "Italian": "it", "Lithuanian": "lt", "Macedonian": "mk", "Polish": "pl",
               "Portuguese": "pt", "Serbian": "sr", "Spanish": "es", "Turkish": "tr", "Vietnamese": "vi"}
ENEM_TABLE = {"portuguese": "pt", "english": "en", "spanish": "es", "pt": "pt", "pt-br": "pt", "en": "en", "es": "es"}


@pytest.mark.parametrize("name, code", sorted({**EXAMS_TABLE, **ENEM_TABLE}.items()))
def test_every_name_and_code_the_tables_mapped_keeps_its_code(name, code):
    assert language_code(name) == code
    assert language_code(name.upper()) == language_code(name.lower()) == language_code(f"  {name} ") == code


@pytest.mark.parametrize("value, code", [
    ("North Macedonian", "mk"),       # EXAMS' cross-lingual Macedonian files
    ("pt-BR", "pt"), ("pt_BR", "pt"), ("por", "pt"), ("Brazilian Portuguese", "pt"), ("Portuguese (Brazil)", "pt"),
    ("sr-Latn", "sr"), ("Serbian (Latin)", "sr"), ("zh-Hans", "zh"), ("español", "es"), ("Chinese", "zh"),
])
def test_names_codes_and_regional_spellings_are_one_language(value, code):
    assert language_code(value) == code


@pytest.mark.parametrize("value", ["", "   ", "Martian", "@", "None", "und", "Brazil", "North Germanic", "123"])
def test_what_names_no_language_is_none(value):
    """A country alone (Brazil), a family (North Germanic), "undetermined", text that is no language: not placed."""
    assert language_code(value) is None
