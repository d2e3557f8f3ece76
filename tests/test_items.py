"""Item / ItemSet / DatasetError behaviour."""
import pickle

import pytest

from mcqa_toolkit.items import DatasetError, Item, ItemSet


def _item(i, lang="pt", subject="biology", **kw):
    return Item(item_id=f"q{i}-{lang}", source="test", exam="T", stem=f"stem {i}", options=("a", "b", "c", "d"),
                answer=i % 4, subject=subject, language=lang, parallel_id=f"q{i}", **kw)


def test_item_validation():
    with pytest.raises(ValueError, match="option index"):
        Item(item_id="x", source="t", exam="e", stem="s", options=("a", "b"), answer=2)
    with pytest.raises(ValueError, match="2..10 options"):
        Item(item_id="x", source="t", exam="e", stem="s", options=("a",), answer=0)
    it = Item(item_id="x", source="t", exam="e", stem="s", options=["a", "b"], answer=None)
    assert it.options == ("a", "b") and it.answer_letter is None and it.parallel_id == "x"


def test_itemset_filter_frame_parallel():
    s = ItemSet([_item(i, lang) for i in range(3) for lang in ("pt", "en")])
    assert len(s.filter(language="pt")) == 3
    assert len(s.filter(language=["pt", "en"], answer=lambda a: a > 0)) == 4
    with pytest.raises(ValueError, match="unknown Item field"):
        s.filter(colour="red")
    df = s.to_frame()
    assert list(df["answer_letter"][:2]) == ["A", "A"] and df["irt_a"].isna().all()
    par = s.by_parallel_id()
    assert set(par["q1"]) == {"pt", "en"} and par["q1"]["en"].item_id == "q1-en"
    assert s["q2-en"].answer == 2
    assert s.summary().loc["total", "total"] == 6
    assert s.fingerprint() == ItemSet(list(s)).fingerprint() != s[:2].fingerprint()


def test_itemset_rejects_duplicates():
    with pytest.raises(ValueError, match="duplicate item_id 'q0-pt'"):
        ItemSet([_item(0), _item(0)])


def test_dataset_error_names_all_four_fields_and_pickles():
    e = DatasetError("data/x.jsonl", 7, "label", "label 9 out of range 0..4")
    assert str(e) == "data/x.jsonl: record 7: field 'label': label 9 out of range 0..4"
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.path, e2.record, e2.field, e2.message) == (e.path, e.record, e.field, e.message)
