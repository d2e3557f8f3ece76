"""Answer-extraction cascade: a table of model outputs in pt/es/it/en with the expected letter and rule."""
import pytest

from mcqa_toolkit.scoring.extract import RULE_NAMES, Extraction, extract_answer

# (output, expected letter or None, expected rule)
CASES = [
    # bare letters, wrapped or not
    ("C", "C", "bare_letter"),
    (" B\n", "B", "bare_letter"),
    ("(D)", "D", "bare_letter"),
    ("**E**", "E", "bare_letter"),
    ("A.", "A", "bare_letter"),
    ("$B$", "B", "bare_letter"),
    # Portuguese
    ("Resposta: C", "C", "label_pt"),
    ("**Resposta:** (B)", "B", "label_pt"),
    ("Resposta correta: D) fotossíntese", "D", "label_pt"),
    ("A resposta correta é E, pois a célula perde água.", "E", "correct_is_pt"),
    ("Resposta: A alternativa correta é a C.", "C", "correct_is_pt"),
    ("A resposta é a letra B.", "B", "correct_is_pt"),
    ("Analisando as opções, a alternativa correta é a (D).", "D", "correct_is_pt"),
    ("Alternativa A é a correta, porque descreve o processo.", "A", "option_word_pt"),
    ("Letra E", "E", "option_word_pt"),
    ("A resposta é a mitocôndria.", None, "none"),
    ("Não posso responder a esta questão sem a imagem.", None, "refusal"),
    ("Não sei.", None, "refusal"),
    # Spanish
    ("Respuesta: B", "B", "label_es"),
    ("La respuesta correcta es la C.", "C", "correct_is_es"),
    ("La opción correcta es A porque el ácido es débil.", "A", "correct_is_es"),
    ("Opción D", "D", "option_word_es"),
    ("Letra de la respuesta correcta: B", "B", "label_es"),
    ("Creo que es la opción C.", "C", "option_word_es"),
    ("No puedo responder a esta pregunta.", None, "refusal"),
    ("A veces la pregunta es ambigua.", None, "none"),
    # Italian
    ("Risposta: D", "D", "label_it"),
    ("La risposta corretta è la B.", "B", "correct_is_it"),
    ("La risposta esatta è l'alternativa E.", "E", "correct_is_it"),
    ("E quindi la risposta è C", "C", "correct_is_it"),
    ("Opzione A", "A", "option_word_it"),
    ("Non posso rispondere con certezza.", None, "refusal"),
    ("E' difficile dirlo, e non ho abbastanza informazioni.", None, "none"),
    ("e la cellula si divide in due", None, "none"),
    # English
    ("Answer: (C) Genetic mapping.", "C", "label_en"),
    ("ANSWER: $A$", "A", "label_en"),
    ("The answer is B.", "B", "correct_is_en"),
    ("Letter of the correct answer: D", "D", "label_en"),
    ("The correct answer is option D because...", "D", "correct_is_en"),
    ("I cannot answer this question.", None, "refusal"),
    ("I'm unable to determine the answer from the text.", None, "refusal"),
    ("A cell wall is made of cellulose.", None, "none"),
    ("I think it is about E. coli bacteria.", None, "none"),
    # weak markers and fallbacks
    ("Among the options, **B** stands out.", "B", "bold"),
    ("Considerando tudo, (E) parece melhor.", "E", "parenthesized"),
    ("C) Genetic mapping.\n\nQuestion: next one", "C", "line_start"),
    ("\\boxed{D}", "D", "boxed"),
    ("The enzyme binds and so D fits best", "D", "last_valid_letter"),
    ("Genetic mapping, then B, finally C", "C", "last_valid_letter"),
    ("", None, "none"),
    ("The vitamin is essential.", None, "none"),
]


@pytest.mark.parametrize("text, letter, rule", CASES)
def test_cascade(text, letter, rule):
    got = extract_answer(text)
    assert (got.letter, got.rule) == (letter, rule), got
    assert got.rule in RULE_NAMES
    if letter is None:
        assert got.option_index is None
        assert got.status == ("refused" if rule == "refusal" else "unanswered")
    else:
        assert got.option_index == "ABCDE".index(letter) and got.status == "answered"


def test_table_covers_four_languages_and_many_rules():
    assert len(CASES) >= 40
    assert {r for _, _, r in CASES} >= {"bare_letter", "label_pt", "label_es", "label_it", "label_en", "refusal",
                                        "last_valid_letter", "none", "bold", "parenthesized", "line_start"}


def test_only_shown_letters_count():
    assert extract_answer("Resposta: E", letters="ABCD").rule != "label_pt"
    assert extract_answer("Resposta: E", letters="ABCD").letter is None
    assert extract_answer("Resposta: C", letters="ABC") == Extraction("C", 2, "label_pt", "answered")
    assert extract_answer("Risposta: H", letters="ABCDEFGHIJ").option_index == 7


def test_explicit_phrasing_beats_refusal_and_first_match_wins():
    assert extract_answer("I cannot be fully sure, but the answer is C.").letter == "C"
    # base models continue the few-shot pattern: the first answer is the model's own
    assert extract_answer("Resposta: B\n\nQuestão: outra\nResposta: D").letter == "B"
    # a refusal that lists options is not read as an answer
    assert extract_answer("I cannot answer: options A) and C) both fit.").status == "refused"


def test_language_restricts_phrasings_to_that_language_and_english():
    assert extract_answer("Risposta: C", language="it").rule == "label_it"
    assert extract_answer("Risposta: C", language="pt").rule == "last_valid_letter"
    assert extract_answer("Answer: C", language="es").rule == "label_en"


def test_bad_arguments():
    with pytest.raises(ValueError, match="text"):
        extract_answer(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="letters"):
        extract_answer("A", letters="abc")
    with pytest.raises(ValueError, match="letters"):
        extract_answer("A", letters="AAB")
    with pytest.raises(ValueError, match="language"):
        extract_answer("A", language="fr")
