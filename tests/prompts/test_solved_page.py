"""Solved pages (what a model is contaminated with) and the seeded choice of the items exposed."""
import pytest

from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.prompts.solved_page import (
    PAGE_TEMPLATES,
    exposure_split,
    has_page,
    matched_split,
    page_template,
    solved_page,
)


def _item(**kw):
    base = dict(item_id="ENEM_2021_MT_906_q140-pt", source="enem", exam="ENEM_2021_MT_906", year=2021,
                stem="  Quanto é 2 + 2?\n", options=("3", "4", "5", "6", "7"), answer=1, language="pt",
                meta={"number": 140})
    return Item(**{**base, **kw})


def test_a_page_shows_the_published_order_and_key_in_the_exam_language():
    assert solved_page(_item()) == ("ENEM 2021 — Questão 140\n\nQuanto é 2 + 2?\n\nA) 3\nB) 4\nC) 5\nD) 6\nE) 7\n"
                                    "\nResposta: B\n")
    english = solved_page(_item(language="en", answer=4))
    assert english.startswith("ENEM 2021 — Question 140\n") and english.endswith("\nAnswer: E\n")
    # the English question of the Portuguese exam is shown on a Portuguese page
    foreign = solved_page(_item(language="en", meta={"number": 1, "exam_language": "pt"}))
    assert foreign.startswith("ENEM 2021 — Questão 1\n") and foreign.endswith("Resposta: B\n")
    assert solved_page(_item(year=None, source="t", exam="Final 2020", meta={})).startswith(
        "Final 2020 — Questão ENEM_2021_MT_906_q140-pt")
    assert set(PAGE_TEMPLATES) == {"pt", "en", "es", "it"}


def test_items_without_a_key_have_no_page():
    annulled = _item(answer=None)
    assert not has_page(annulled) and has_page(_item())
    with pytest.raises(ValueError, match="ENEM_2021_MT_906_q140-pt.*only single-answer items with a key"):
        solved_page(annulled)
    with pytest.raises(ValueError, match="no solved-page template for language 'de'"):
        page_template("de")


def test_exposure_split_is_seeded_per_subject_and_leaves_out_annulled_items():
    items = ItemSet([Item(item_id=f"{s}{k}", source="t", exam="T", stem="?", options=("a", "b"),
                          answer=None if k == 0 else 1, subject=s) for s in "ab" for k in range(9)])
    exposed, held = exposure_split(items, 0.5, seed=1)
    assert exposure_split(items, 0.5, seed=1) == (exposed, held) and exposure_split(items, 0.5, 2) != (exposed, held)
    assert sum(i.startswith("a") for i in exposed) == 4 and sum(i.startswith("b") for i in exposed) == 4
    assert not {"a0", "b0"} & set(exposed + held) and len(exposed) + len(held) == 16
    assert exposure_split(ItemSet(list(items)[::-1]), 0.5, seed=1)[0] == exposed[::-1]   # order does not matter
    with pytest.raises(ValueError, match="in \\(0, 1\\)"):
        exposure_split(items, 1.0)


def test_matched_split_draws_as_many_items_per_subject_seeded():
    items = ItemSet([Item(item_id=f"{s}{k}", source="t", exam="T", stem="?", options=("a", "b"), answer=k % 2,
                          subject=s) for s in ("bio", "math") for k in range(8)]
                    + [Item(item_id="annulled", source="t", exam="T", stem="?", options=("a", "b"), answer=None,
                            subject="bio")])
    got = matched_split(items, {"bio": 3, "math": 2}, seed=5)
    assert len(got) == 5 and got == [i for i in items.ids if i in set(got)]          # item order
    assert sum(i.startswith("bio") for i in got) == 3 and "annulled" not in got
    assert got == matched_split(items, {"bio": 3, "math": 2}, seed=5)                # seeded
    assert len({tuple(matched_split(items, {"bio": 3, "math": 2}, seed=s)) for s in range(6)}) > 1
    assert [i for i in got if i.startswith("math")] == [i for i in matched_split(items, {"math": 2}, seed=5)]
    with pytest.raises(ValueError, match="too few"):
        matched_split(items, {"bio": 9})
