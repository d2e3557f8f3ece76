"""datasets.exams: EXAMS JSONL (fixtures written here in the release's layout: 3, 4 and 5 choices, digit labels,
language names and a code), read as a file, a folder and a .jsonl.tar.gz archive as the release ships it,
language names mapped to codes, translations linked through parallel_questions.jsonl, and a run through run().
The release's own defects (an answerKey '@', the language written "North Macedonian") are rewritten here in our
words: the '@' record is left out and named, "North Macedonian" is Macedonian (mk)."""
import io
import json
import tarfile
import warnings

import numpy as np
import pytest
from lookup_backend import LookupBackend, seeded_table
from paths import FIXTURES, SHARED

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.common import UnusableRecordsWarning
from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.run import run
from mcqa_toolkit.run.strategy import strategy

F = FIXTURES / "exams"
DEV = F / "dev.jsonl"
# the 16 languages of the release (its README's table), as ISO 639-1 codes
RELEASE_CODES = {"sq", "ar", "bg", "hr", "fr", "de", "hu", "it", "lt", "mk", "pl", "pt", "sr", "es", "tr", "vi"}


def _tar(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_jsonl_file_with_3_to_5_choices_and_language_codes():
    items = load("exams", path=DEV)
    assert [it.language for it in items] == ["pt", "pt", "it", "hr", "es", "pt"]   # "portuguese" too
    assert [it.n_options for it in items] == [4, 4, 4, 3, 5, 4]
    assert [it.answer_letter for it in items] == ["B", "C", "B", "B", "D", "C"]     # answerKey "3" of labels 1-4
    hr = items["exams-0a1b2c3d-0004"]
    assert (hr.subject, hr.exam, hr.meta["grade"], hr.meta["split"]) == ("Biology", "EXAMS", "8", "dev")
    assert items["exams-0a1b2c3d-0006"].meta["labels"] == ["1", "2", "3", "4"]
    assert RELEASE_CODES >= {it.language for it in items}


def test_the_release_archive_a_folder_languages_and_parallel_questions(tmp_path):
    raw = DEV.read_bytes()
    archive = _tar(tmp_path / "dev.jsonl.tar.gz", {"._dev.jsonl": b"\x00\x05\x16\x07 mac metadata", "dev.jsonl": raw})
    from_tar = load("exams", path=archive)
    assert from_tar.ids == load("exams", path=DEV).ids and from_tar[0].meta["split"] == "dev"
    _tar(tmp_path / "test.jsonl.tar.gz", {"test.jsonl": raw.replace(b"0a1b2c3d", b"9f8e7d6c")})
    (tmp_path / "parallel_questions.jsonl").write_bytes((F / "parallel_questions.jsonl").read_bytes())
    both = load("exams", path=tmp_path, languages=["pt", "it"])
    assert len(both) == 8 and {it.language for it in both} == {"pt", "it"}
    assert {it.meta["split"] for it in both} == {"dev", "test"}
    linked = load("exams", path=DEV, parallel=F / "parallel_questions.jsonl")
    pairs = {k: v for k, v in linked.by_parallel_id().items() if len(v) > 1}
    assert list(pairs) == ["exams-0a1b2c3d-0001"] and set(pairs["exams-0a1b2c3d-0001"]) == {"pt", "it"}
    with pytest.raises(ValueError, match=r"unknown language\(s\) \['xx'\]"):
        load("exams", path=DEV, languages=["xx"])
    assert load("exams", path=DEV, languages=["Italian"]).ids == load("exams", path=DEV, languages=["it"]).ids


def _rec(**kw):
    rec = json.loads(DEV.read_text().splitlines()[0])
    rec.update(kw)
    return rec


@pytest.mark.parametrize("rec, field, message", [
    (_rec(answerKey="E"), "answerKey", "'E' is not a choice label"),
    (_rec(info={"grade": 12, "subject": "Biology", "language": "Martian"}), "info.language", "unknown language"),
    (_rec(info={"grade": 12, "language": "Portuguese"}), "subject", "missing field"),
    (_rec(question={"stem": "?", "choices": [{"text": "a", "label": "A"}, {"text": "b", "label": "A"}]}),
     "question.choices", "repeated choice label"),
    (_rec(question={"stem": "?", "choices": ["a", "b"]}), "question.choices", "expected a list of {text, label}"),
    (_rec(id=7), "id", "expected str"),
])
def test_bad_records_name_the_file_record_and_field(tmp_path, rec, field, message):
    p = tmp_path / "dev.jsonl"
    p.write_text(DEV.read_text() + json.dumps(rec) + "\n")
    with pytest.raises(DatasetError) as e:
        load("exams", path=p, strict=True)
    assert (e.value.path, e.value.record, e.value.field) == (str(p), 7, field) and message in e.value.message
    with pytest.warns(UnusableRecordsWarning, match=f"record 7 .*field '{field}'"):
        items = load("exams", path=p)
    assert len(items) == 6 and [(r.record, r.field) for r in items.skipped] == [(7, field)]


def _exams(id, stem, choices, key, language, subject="Biology"):
    return {"id": id, "question": {"stem": stem, "choices": [{"text": t, "label": lab} for lab, t in choices]},
            "answerKey": key, "info": {"grade": 12, "subject": subject, "language": language}}


# the release's defects, in our words: a key '@' among letter labels; Macedonian written "North Macedonian"
AT_KEY = _exams("5e6f-0001", "Koja e glavnata funkcija na bubrezite?",
                [("A", "filtriranje na krvta"), ("B", "varenje na hranata"), ("C", "dishenje")], "@",
                "North Macedonian")
NORTH_MK = _exams("5e6f-0002", "Кој орган ја лачи жолчката?", [("A", "црниот дроб"), ("B", "срцето"),
                                                              ("C", "белите дробови"), ("D", "бубрегот")], "A",
                  "North Macedonian")


def test_a_key_that_is_no_label_is_left_out_and_named(tmp_path):
    """The multilingual test file stops at record 5861 today ('@' is not a choice label): one bad key must not
    refuse the file."""
    p = tmp_path / "test.jsonl"
    p.write_text(DEV.read_text() + json.dumps(AT_KEY) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        items = load("exams", path=p)
    assert len(items) == 6 and "exams-5e6f-0001" not in items
    (skipped,) = items.skipped
    assert (skipped.path, skipped.record, skipped.item_id, skipped.field) == (str(p), 7, "5e6f-0001", "answerKey")
    assert skipped.reason == "'@' is not a choice label (['A', 'B', 'C'])"
    assert [str(w.message).count("record 7") for w in caught if w.category is UnusableRecordsWarning] == [1]
    with pytest.raises(DatasetError, match=r"record 7: field 'answerKey': '@' is not a choice label"):
        load("exams", path=p, strict=True)


def test_north_macedonian_is_macedonian(tmp_path):
    """The cross-lingual Macedonian files write their language "North Macedonian" (the other files "Macedonian"):
    both are mk."""
    p = tmp_path / "dev_mk.jsonl"
    p.write_text(json.dumps(NORTH_MK) + "\n" + json.dumps({**NORTH_MK, "id": "5e6f-0003", "info": {
        **NORTH_MK["info"], "language": "Macedonian"}}) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnusableRecordsWarning)
        items = load("exams", path=p, strict=True)
    assert [it.language for it in items] == ["mk", "mk"] and items[0].answer == 0
    assert load("exams", path=p, languages=["mk"]).ids == items.ids


def test_a_bad_member_or_archive_is_named(tmp_path):
    archive = _tar(tmp_path / "dev.jsonl.tar.gz", {"data/dev.jsonl": DEV.read_bytes() + b'{"id": \n'})
    with pytest.raises(DatasetError) as e:
        load("exams", path=archive, strict=True)
    assert (e.value.path, e.value.record) == (f"{archive}/data/dev.jsonl", 7) and "invalid JSON" in e.value.message
    with pytest.warns(UnusableRecordsWarning, match="invalid JSON"):
        items = load("exams", path=archive)
    assert len(items) == 6 and [(r.path, r.record) for r in items.skipped] == [(f"{archive}/data/dev.jsonl", 7)]
    (tmp_path / "x.jsonl.tar.gz").write_bytes(b"not gzip at all")
    with pytest.raises(DatasetError, match="not a readable .tar.gz archive"):
        load("exams", path=tmp_path / "x.jsonl.tar.gz")
    with pytest.raises(DatasetError, match=r"no \*.jsonl file in this archive"):
        load("exams", path=_tar(tmp_path / "e.tar.gz", {"readme.txt": b"hi"}))


def test_runs_under_the_exams_strategy_in_every_language(tmp_path):
    """The `exams` strategy asks in English around each question's own language, so Croatian (no template) runs."""
    items = load("exams", path=DEV)
    table = seeded_table(items, seed=2)
    records = run(items, LookupBackend(table), strategy("exams"), tmp_path / "run", dataset="exams", progress=False)
    assert sorted(set(records["language"])) == ["es", "hr", "it", "pt"]
    naive = {it.item_id: int(np.argmax(table[it.item_id]) == it.answer) for it in items}
    assert dict(zip(records["item_id"], records["correct"].astype(int), strict=True)) == naive
    with pytest.raises(ValueError, match=r"no prompt templates in language\(s\) \['hr'\]"):
        run(items, LookupBackend(table), strategy("exams", language=None), tmp_path / "own", progress=False)


needs_shared = pytest.mark.skipif(not (SHARED / "formats").is_dir(), reason="real-format samples live in ../shared")


@needs_shared
def test_the_real_excerpt_loads_as_published():
    items = load("exams", path=SHARED / "formats" / "exams_multilingual_dev_sample.jsonl")
    assert {it.language for it in items} <= RELEASE_CODES and {"pt", "it"} <= {it.language for it in items}
    assert all(3 <= it.n_options <= 5 and it.meta["split"] == "dev" for it in items)
    assert any(it.n_options == 3 for it in items)
