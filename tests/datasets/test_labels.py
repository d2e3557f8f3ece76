"""datasets.labels: answer keys as sources write them. Several letters are several answers where the format allows
them (`answer_letters`) and an unusable record where it has one key (`letter_to_index`); a key that is not letters of
the options is never guessed. Each result is checked against a direct reading of the letters."""
import pytest

from mcqa_toolkit.datasets.labels import answer_letters, letter_to_index
from mcqa_toolkit.items import DatasetError


@pytest.mark.parametrize("value, expected", [
    ("B", (1,)), (" b ", (1,)), ("AD", (0, 3)), ("A,D", (0, 3)), ("A D", (0, 3)), ("a, d", (0, 3)), ("D;A", (0, 3)),
    ("A/D", (0, 3)), (["A", "D"], (0, 3)), (["D", "A"], (0, 3)), (["A"], (0,)), (["A", "A"], (0,)), ("ＡＤ", (0, 3)),
    ("ABCDE", (0, 1, 2, 3, 4)),
])
def test_letters_name_their_options(value, expected):
    assert answer_letters(value, 5, "f", 3, "label") == expected
    direct = sorted({"ABCDE".index(c) for c in "".join(value if isinstance(value, list) else [value]).upper()
                     .replace("Ａ", "A").replace("Ｄ", "D") if c in "ABCDE"})
    assert list(expected) == direct


@pytest.mark.parametrize("value, reason", [
    ("@", "answer '@' is not written in letters of the options (ABCDE)"),
    ("。", "answer '。' is not written in letters of the options (ABCDE)"),
    ("F", "answer 'F' is not written in letters of the options (ABCDE)"),
    ("A+D", "answer 'A+D' is not written in letters of the options (ABCDE)"),
    ("None", "answer 'None' is not written in letters of the options (ABCDE)"),
    ("", "empty answer ''"), (" , ", "empty answer ' , '"),
    ([], "empty list of answer letters"),
    (["A", 3], "expected answer letters, got int 3"), (2, "expected answer letters, got int 2"),
])
def test_what_is_not_letters_of_the_options_is_refused_naming_the_field(value, reason):
    with pytest.raises(DatasetError) as e:
        answer_letters(value, 5, "f.jsonl", 3, "label")
    assert (e.value.path, e.value.record, e.value.field, e.value.message) == ("f.jsonl", 3, "label", reason)


def test_a_single_key_format_takes_one_letter():
    assert [letter_to_index(v, 4, "f", 1, "answer") for v in ("A", " c", "d")] == [0, 2, 3]
    for value, reason in (("AD", "answer 'AD' names 2 options; this format has one key"),
                          ("E", "answer 'E' is not written in letters of the options (ABCD)"),
                          (["A"], "expected an answer letter, got list ['A']")):
        with pytest.raises(DatasetError) as e:
            letter_to_index(value, 4, "f", 1, "answer")
        assert (e.value.field, e.value.message) == ("answer", reason)
