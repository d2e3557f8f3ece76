"""Item identity across tools: by id, by exam year and question number, by text; options lined up by text."""
from paths import FIXTURES

from mcqa_toolkit.datasets import load
from mcqa_toolkit.interop.match import ItemMatcher, SourceQuestion, option_index, source_item, text_hash

ENEM = dict(path=FIXTURES / "enem" / "exams", item_params=FIXTURES / "enem" / "ITENS_PROVA_2022.csv")
STEM = "Uma panela com água pura é aquecida ao nível do mar. A água entra em ebulição a qual temperatura?"
OPTIONS = ("0 °C.", "50 °C.", "100 °C.", "150 °C.", "212 °C.")


def _matcher():
    return ItemMatcher(load("enem", **ENEM))


def test_match_by_id_narrows_languages_by_text():
    q = SourceQuestion("k", STEM, OPTIONS, 2, ids=("ENEM_2022_CN_9102_q91",))
    m = _matcher().match(q)
    assert m.item.item_id == "ENEM_2022_CN_9102_q91-pt" and m.how == "id" and m.permutation == (0, 1, 2, 3, 4)
    assert m.item.irt == (1.8, 0.5, 0.15)          # INEP's parameters come with the match


def test_match_by_year_and_number_and_shuffled_options():
    shown = (OPTIONS[4], OPTIONS[2], OPTIONS[0], OPTIONS[1], OPTIONS[3])
    q = SourceQuestion("k", "  " + STEM.upper() + " ", shown, 1, year=2022, number=91, language="pt")
    m = _matcher().match(q)
    assert m.how == "year_number" and m.item.item_id.endswith("-pt")
    assert m.permutation == (4, 2, 0, 1, 3)        # shown position -> our option index


def test_match_by_text_only_and_reasons_for_no_match():
    assert _matcher().match(SourceQuestion("k", STEM, OPTIONS, 2)).how == "text"
    wrong_key = _matcher().match(SourceQuestion("doc 3", STEM, OPTIONS, 0))
    assert isinstance(wrong_key, str) and wrong_key.startswith("doc 3:") and "is not our key" in wrong_key
    fewer = _matcher().match(SourceQuestion("doc 4", STEM, OPTIONS[:4], 2))
    assert "4 options, our item has 5" in fewer
    assert "no item with its id" in _matcher().match(SourceQuestion("doc 5", "Something else?", ("a", "b"), 0))


def test_source_item_and_option_index():
    q = SourceQuestion("k", "Q?", ("x", "y"), 1, ids=(), year=2020, number=7)
    it = source_item(q, "lm-eval", "task")
    assert it.item_id == f"task:{text_hash('Q?|x|y')}" and it.answer == 1 and it.meta["number"] == 7
    assert option_index("B", ["x", "y"]) == 1 and option_index("(a)", ["x", "y"]) == 0
    assert option_index(" Y ", ["x", "y"]) == 1 and option_index("C", ["x", "y"]) is None
