"""prompts.shots: few-shot candidates come from the target's exam version (Item.exam_language), not from the
language of the item's own text: the English and Spanish questions of ENEM's Portuguese exam get the same
shots as the other questions of their subject (the 4-shot protocol used to stop on them, finding only the five
foreign-language items of their own language). Fixtures written here."""
import pytest

from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.prompts.shots import balanced_permutations, select_shots, split_shots

SUBJECTS = ("humanities", "natural sciences", "languages", "mathematics")


def _exam(version: str = "pt") -> ItemSet:
    """Three questions per subject, b rising with the number; two foreign-language LC questions (en, es) whose
    text language differs from the exam version's."""
    items = []
    for s, subject in enumerate(SUBJECTS):
        for q in range(3):
            items.append(Item(item_id=f"{version}-{s}-{q}", source="t", exam="E", stem=f"{subject} {q}",
                              options=("a", "b", "c", "d", "e"), answer=q % 5, subject=subject, language=version,
                              parallel_id=f"{s}-{q}", irt=(1.0, -2.0 + s * 0.1 + q, 0.2)))
    for lang in ("en", "es"):
        items.append(Item(item_id=f"{version}-fl-{lang}", source="t", exam="E", stem=f"foreign {lang}",
                          options=("a", "b", "c", "d", "e"), answer=1, subject="languages", language=lang,
                          parallel_id=f"fl-{lang}", irt=(1.0, 1.5, 0.2),
                          meta={"exam_language": version} if lang != version else {}))
    return ItemSet(items)


def test_foreign_language_questions_take_their_exam_versions_shots():
    items = _exam("pt")
    pool, evaluated = split_shots(items, 4, "easiest")
    assert sorted(it.item_id for it in pool) == ["pt-0-0", "pt-1-0", "pt-2-0", "pt-3-0"]   # easiest per subject
    lc = select_shots(pool, items["pt-2-1"], 4, "easiest")
    for foreign in ("pt-fl-en", "pt-fl-es"):
        shots = select_shots(pool, items[foreign], 4, "easiest")
        assert [s.item_id for s, _ in shots] == [s.item_id for s, _ in lc]     # the same block as the LC questions
        assert {s.exam_language for s, _ in shots} == {"pt"}


def test_candidates_never_cross_exam_versions():
    both = ItemSet(list(_exam("pt")) + [it for it in _exam("en") if it.language == "en"])
    pool, _ = split_shots(both, 4, "easiest")
    assert {it.exam_language for it in pool} == {"pt", "en"} and len(pool) == 8
    target = both["en-2-1"]
    assert {s.exam_language for s, _ in select_shots(pool, target, 4, "easiest")} == {"en"}
    with pytest.raises(ValueError, match=r"no candidate .* subject 'languages' \(exam language 'it'\)"):
        select_shots(pool, target.with_(language="it"), 4, "easiest")


def test_a_pool_from_another_exam_gives_every_question_the_same_four_items():
    """The ENEM paper's 4-shot block: the easiest question of each subject of an earlier exam, for every question
    of this one (foreign-language ones included)."""
    earlier = ItemSet([it.with_(item_id=f"old-{it.item_id}", parallel_id=f"old-{it.parallel_id}") for it in _exam()])
    now = _exam()
    blocks = {frozenset(s.item_id for s, _ in select_shots(earlier, t, 4, "easiest")) for t in now}
    assert blocks == {frozenset({"old-pt-0-0", "old-pt-1-0", "old-pt-2-0", "old-pt-3-0"})}


def test_balanced_permutations_refuses_a_shot_without_a_single_answer_key():
    shots = list(_exam())[:2]
    annulled = shots[1].with_(answer=None)
    with pytest.raises(ValueError, match="no single-answer key"):
        balanced_permutations([shots[0], annulled])
