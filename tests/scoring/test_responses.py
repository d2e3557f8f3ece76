"""Reading generated answers of every question type (scoring/responses.py): tables of model outputs with the
value, rule and status each must give, including the tricky ones ("A and C", "A, B, D.", "T F T", JSON in a
code fence), wrong-length true/false lists, refusals, and the lenient JSON reader."""
import pytest

from mcqa_toolkit.scoring.responses import parse_json_answer, read_letters, read_response, read_short, read_truefalse

# (output, expected shown positions or None, rule, status)
LETTER_CASES = [
    ("A and C", (0, 2), "bare_letters", "answered"),
    ("A, B, D.", (0, 1, 3), "bare_letters", "answered"),
    ("B D", (1, 3), "bare_letters", "answered"),
    ("(A), (C)", (0, 2), "bare_letters", "answered"),
    ("**B**", (1,), "bare_letters", "answered"),
    ("C, A", (0, 2), "bare_letters", "answered"),                      # sorted, order of mention dropped
    ("A, A and C", (0, 2), "bare_letters", "answered"),                # distinct
    ("Answer: A, C\n\nQuestion: 3. Which of ...", (0, 2), "labels_en", "answered"),
    ("The correct answers are B and D because both hold.", (1, 3), "labels_en", "answered"),
    ("Correct options: A; D", (0, 3), "labels_en", "answered"),
    ("As alternativas corretas são A e D.", (0, 3), "labels_pt", "answered"),
    ("Resposta: A, B e D", (0, 1, 3), "labels_pt", "answered"),
    ("Las opciones correctas son B y C.", (1, 2), "labels_es", "answered"),
    ("Le risposte corrette sono A ed C", (0, 2), "labels_it", "answered"),
    ("Answer: A resposta é B", (1,), "labels_pt", "answered"),          # "A" is the article, not a letter
    ("I think it is option C.", (2,), "single:option_word_en", "answered"),
    ("I cannot answer this without the figure.", None, "refusal", "refused"),
    ("All of them are about routing.", None, "none", "unanswered"),
    ("E. coli is a bacterium.", None, "none", "unanswered"),            # E here is not the letter E
]


@pytest.mark.parametrize("text,value,rule,status", LETTER_CASES)
def test_read_letters(text, value, rule, status):
    got = read_letters(text, "ABCDE")
    assert (got.value, got.rule, got.status) == (value, rule, status)
    assert bool(got.reason) == (value is None)


def test_letters_outside_the_shown_ones_never_count():
    assert read_letters("A, E", "ABCD").value == (0,)  # E is not an option of a 4-option item: single cascade
    assert read_letters("F, G", "ABCD").status == "unanswered"


T, F = True, False
TF_CASES = [
    ("T F T", 3, (T, F, T), "tf_list", "answered"),
    ("True, False, True", 3, (T, F, T), "tf_list", "answered"),
    ("true / false / TRUE.", 3, (T, F, T), "tf_list", "answered"),
    ("V, F, V, V", 4, (T, F, T, T), "tf_list", "answered"),
    ("Verdadeiro, Falso e Verdadeiro", 3, (T, F, T), "tf_list", "answered"),
    ("Vero, Falso", 2, (T, F), "tf_list", "answered"),
    ("Answer: True, False, True\n\nQuestion: next", 3, (T, F, T), "tf_label", "answered"),
    ("Resposta: F, F, V", 3, (F, F, T), "tf_label", "answered"),
    ("1. True\n2. False\n3) True\n", 3, (T, F, T), "tf_numbered", "answered"),
    ("The first is True, the second False and the third True.", 3, (T, F, T), "tf_words", "answered"),
    # the wrong number of values is unanswered with the reason, never padded or cut
    ("True, False", 3, None, "tf_list", "unanswered"),
    ("Answer: T, F, T, F", 3, None, "tf_label", "unanswered"),
    ("I don't know.", 2, None, "refusal", "refused"),
    ("It depends on the network.", 2, None, "none", "unanswered"),
]


@pytest.mark.parametrize("text,n,value,rule,status", TF_CASES)
def test_read_truefalse(text, n, value, rule, status):
    got = read_truefalse(text, n)
    assert (got.value, got.rule, got.status) == (value, rule, status)
    if value is None and status == "unanswered":
        assert "True/False" in got.reason


def test_wrong_count_reason_names_the_counts():
    assert read_truefalse("True, False", 3).reason == "2 True/False values for 3 statements"


def test_read_short_keeps_the_whole_text():
    text = "  Because the third message\nacknowledges the server's number.  "
    assert read_short(text).value == text.strip() and read_short(text).rule == "text"
    assert read_short(" \n ").status == "unanswered"


JSON_CASES = [
    ('```json\n{"answer": "A,C", "explanation": "both are private"}\n```\nDone.', "multi", (0, 2),
     "json:bare_letters"),
    ('{"answer": ["B", "D"], "explanation": "x"}', "multi", (1, 3), "json:bare_letters"),
    ('Sure! {"answer": "True,False,True", "explanation": "..."} Hope it helps', "truefalse", (T, F, T),
     "json:tf_list"),
    ('{"answer": [true, false, true]}', "truefalse", (T, F, T), "json:tf_list"),
    ('{"answer": "B", "explanation": "TCP retransmits"}', "single", 1, "json:bare_letter"),
    ('{"answer": "Sequence numbers must be acknowledged.", "explanation": "e"}', "short",
     "Sequence numbers must be acknowledged.", "json:text"),
    ('{"answer": "B"', "single", 1, "last_valid_letter"),             # unparseable JSON: the plain cascade
]


@pytest.mark.parametrize("text,kind,value,rule", JSON_CASES)
def test_json_replies_are_read_leniently_with_the_plain_cascade_as_fallback(text, kind, value, rule):
    got = read_response(text, kind, letters="ABCD", n_statements=3)
    assert (got.value, got.rule, got.status) == (value, rule, "answered")


def test_parse_json_answer():
    assert parse_json_answer('x {"a": 1} then {"answer": "C", "explanation": {"k": 1}} y') == ("C", '{"k": 1}')
    assert parse_json_answer('{"explanation": "no answer key"}') is None
    assert parse_json_answer("no json at all") is None
    assert read_response('{"answer": "A", "explanation": "why"}', "single", letters="AB").explanation == "why"


def test_bad_arguments_are_errors():
    with pytest.raises(ValueError, match="positive int"):
        read_truefalse("True", 0)
    with pytest.raises(ValueError, match="unknown question type"):
        read_response("A", "essay", letters="AB")
    with pytest.raises(ValueError, match="letters"):
        read_letters("A", "abc")
