"""datasets.common: one rule for every loader and every field. For each loader, a valid file of three records (ours,
in the release's layout) has its middle record corrupted, one field at a time and in several ways (deleted, null,
empty, a stray character, a number, a list, an object; for CSV an empty or stray cell; for the record as a whole, a
line that is not JSON or a row with a cell missing): the load never raises, the other two records load, and the
corrupted record either still loads (a tolerable value) or is left out and named (file, record, field, reason)
while strict=True refuses at it with the same error. Each field the format needs must be refused by at least one
corruption, so the sweep cannot pass by loading everything."""
import json
import warnings
from pathlib import Path

import pytest
from releases import CELL_MISSING, COURSE_META, COURSE_RECORDS, NOT_A_RECORD, NOT_JSON, RELEASES, csv_text, jsonl_text

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.common import UnusableRecordsWarning
from mcqa_toolkit.items import DatasetError

DELETE = object()
JSON_BAD = (DELETE, None, "", "@", 12345, [], {"x": 1})
CSV_BAD = ("", "@")


def _corrupt(rec, path, value):
    """A deep copy of `rec` with the field at `path` ("question.stem", "answers.0.aid") set to `value` or deleted."""
    rec = json.loads(json.dumps(rec))
    *parents, last = path.split(".")
    node = rec
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return rec


def _load(release, tmp_path, records, strict=False, text=None):
    for name, content in release.extra.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    kwargs = {k: (tmp_path / v if k == "path" else v) for k, v in release.kwargs.items()}
    if release.name == "hub":
        return load("hub", name_or_path="room/medicina", dataset=records, strict=strict, **kwargs)
    (tmp_path / release.file).write_text(text if text is not None else release.write(records), encoding="utf-8")
    kwargs.setdefault("path", tmp_path / release.file)
    return load(release.name, strict=strict, **kwargs)


def _cases(release):
    """(label, records or None, file text or None) of every corruption of the middle record."""
    for path in release.fields():
        if path == NOT_A_RECORD:
            yield path, None, None
        elif path == NOT_JSON:
            lines = release.write(release.records).splitlines(keepends=True)
            yield path, None, lines[0] + '{"id": "broken\n' + lines[2]
        elif path == CELL_MISSING:
            rows = [dict(r) for r in release.records]
            rows[1] = dict(list(rows[1].items())[:-1])
            text = release.write(rows[:1]) + csv_text(rows[1:2], header=False) + csv_text(rows[2:], header=False)
            yield path, None, text
        else:
            for value in (CSV_BAD if release.csv else JSON_BAD):
                yield path, value, None


def _sweep_ids():
    return [(r, f) for r in RELEASES for f in r.fields()]


@pytest.mark.parametrize("release,path", _sweep_ids(),
                         ids=[f"{r.name}:{r.file or 'rows'}:{f}" for r, f in _sweep_ids()])
def test_one_bad_record_never_refuses_a_file(tmp_path, release, path):
    clean = _load(release, tmp_path, release.records)
    assert len(clean) == 3 and not clean.skipped
    refused = 0
    for label, value, text in _cases(release):
        if label != path:
            continue
        records = list(release.records)
        if path == NOT_A_RECORD:
            records[1] = ["not", "a", "record"]
        elif text is None:
            records[1] = _corrupt(records[1], path, value)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            items = _load(release, tmp_path, records, text=text)
        what = f"{path} = {'deleted' if value is DELETE else repr(value)}"
        assert {clean.ids[0], clean.ids[2]} <= set(items.ids), what
        if not items.skipped:
            assert len(items) == 3 and len(_load(release, tmp_path, records, strict=True, text=text)) == 3, what
            continue
        refused += 1
        (left_out,) = items.skipped
        file = release.file and str(tmp_path / release.file)
        assert (left_out.path, left_out.record) == (file or "hub:room/medicina[test]", release.middle), what
        assert left_out.reason and (left_out.field is None) == (path in (NOT_JSON, NOT_A_RECORD, CELL_MISSING)), what
        if left_out.field is not None:
            assert path.split(".")[-1] in left_out.field or left_out.field in path \
                or left_out.field in release.named.get(path, ()), f"{what}: named {left_out.field!r}"
        ours = [w for w in caught if w.category is UnusableRecordsWarning]
        assert len(ours) == 1 and str(left_out) in str(ours[0].message), what
        with pytest.raises(DatasetError) as e:
            _load(release, tmp_path, records, strict=True, text=text)
        assert (e.value.record, e.value.field, e.value.message) == (left_out.record, left_out.field,
                                                                    left_out.reason), what
    if path not in release.tolerant:
        assert refused, f"no corruption of {path} left the record out: is it a field the format needs?"


OAB_QUESTION = "Questão {n}\n\nAREA CIVIL\n\nQuem responde pelo dano número {n}?\n\nOPTIONS\n\n{options}\n"
OAB_OPTIONS = "A) O dono.\n\nB:CORRECT) O autor.\n\nC) Ninguém.\n\nD) O Estado.\n"
# corruptions of the middle question block of a plain-text exam: (what, old, new, field named or None if it loads)
OAB_CORRUPTIONS = [
    ("annulled", "Questão 2\n", "Questão 2 NULL\n", "header"),
    ("no area line", "AREA CIVIL\n\nQuem responde pelo dano número 2", "Quem responde pelo dano número 2", None),
    ("no stem", "Quem responde pelo dano número 2?", "", "stem"),
    ("no OPTIONS line", "número 2?\n\nOPTIONS", "número 2?\n\n", "OPTIONS"),
    ("no key", "B:CORRECT) O autor.\n\nC) Ninguém.\n\nD) O Estado.\n\nQuestão 3",
     "B) O autor.\n\nC) Ninguém.\n\nD) O Estado.\n\nQuestão 3", "key"),
    ("two keys", "A) O dono.\n\nB:CORRECT) O autor.\n\nC) Ninguém.\n\nD) O Estado.\n\nQuestão 3",
     "A:CORRECT) O dono.\n\nB:CORRECT) O autor.\n\nC) Ninguém.\n\nD) O Estado.\n\nQuestão 3", "key"),
    ("options out of order", "C) Ninguém.\n\nD) O Estado.\n\nQuestão 3", "D) Ninguém.\n\nC) O Estado.\n\nQuestão 3",
     "OPTIONS"),
    ("one option", "C) Ninguém.\n\nD) O Estado.\n\nQuestão 3", "\nQuestão 3", None),
    ("no option text", "OPTIONS\n\nA) O dono.\n\nB:CORRECT) O autor.\n\nC) Ninguém.\n\nD) O Estado.\n\nQuestão 3",
     "OPTIONS\n\n\nQuestão 3", "OPTIONS"),
]


@pytest.mark.parametrize("what, old, new, named", OAB_CORRUPTIONS, ids=[c[0] for c in OAB_CORRUPTIONS])
def test_one_bad_question_never_refuses_an_oab_exam(tmp_path, what, old, new, named):
    text = "".join(OAB_QUESTION.format(n=n, options=OAB_OPTIONS) for n in (1, 2, 3))
    start = text.index("Questão 2")
    bad = text[:start] + text[start:].replace(old, new, 1)
    assert bad != text
    p = tmp_path / "2020-30.txt"
    p.write_text(bad, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableRecordsWarning)
        items = load("oab", path=p)
    assert {"oab-2020-30-q1", "oab-2020-30-q3"} <= set(items.ids)
    if named is None:
        assert len(items) == 3 and not items.skipped
        return
    (left_out,) = items.skipped
    line = bad.count("\n", 0, start) + 1
    assert (left_out.path, left_out.record, left_out.item_id, left_out.field) == (str(p), line, "oab-2020-30-q2",
                                                                                  named)
    with pytest.raises(DatasetError) as e:
        load("oab", path=p, strict=True)
    assert (e.value.record, e.value.field, e.value.message) == (line, named, left_out.reason)


def test_every_loader_is_swept():
    from mcqa_toolkit.datasets import REGISTRY

    # the demo is the package's own data (refused whole: test_loader_errors.py, na-demo-*); enem_params reads
    # INEP's item parameters, a table that is all or nothing (a missing parameter would score wrongly)
    assert {r.name for r in RELEASES} | {"oab"} == set(REGISTRY) - {"demo", "enem_params"}


def test_an_exam_entry_left_out_takes_its_questions_with_it(tmp_path):
    """course_exam's metadata entries follow the rule too: a bad one is left out and named, and so are the questions
    of that exam (their exam is unknown); the other exam's questions load."""
    meta = json.loads(COURSE_META)
    meta["exams"].append({**meta["exams"][0], "exam_id": "ex2", "score_avg": "n/a"})
    (tmp_path / "exams_metadata.json").write_text(json.dumps(meta))
    (tmp_path / "questions.jsonl").write_text(jsonl_text([COURSE_RECORDS[0], {**COURSE_RECORDS[2], "exam_id": "ex2"}]))
    with pytest.warns(UnusableRecordsWarning):
        items = load("course_exam", path=tmp_path)
    assert items.ids == ["course-1"]
    assert [(Path(r.path).name, r.record, r.field) for r in items.skipped] == [
        ("exams_metadata.json", 2, "score_avg"), ("questions.jsonl", 2, "exam_id")]


@pytest.mark.parametrize("text, why", [
    ("", None),
    ('[{"id": 1}, {"id": 2}]\n', "expected a JSON object, got list"),
    ("id,topic,text\n1,biologia,x\n", "invalid JSON"),
])
def test_a_file_with_no_usable_record_is_refused_as_a_whole(tmp_path, text, why):
    """Not JSONL at all (a JSON list on one line, a CSV): one error naming the file and why its first record could
    not be used. An empty file is an empty set."""
    p = tmp_path / "m.jsonl"
    p.write_text(text)
    if why is None:
        assert len(load("medicina", path=p)) == 0
        return
    with pytest.raises(DatasetError) as e:
        load("medicina", path=p)
    assert (e.value.path, e.value.record, e.value.field) == (str(p), "-", None)
    assert "none of its" in e.value.message and why in e.value.message


@pytest.mark.parametrize("name, make", [
    ("medicina", lambda p: p / "missing.jsonl"),
    ("medicina", lambda p: p),                                       # a folder where a file is read
    ("medicina", lambda p: (p / "b.jsonl").write_bytes(b"\xff\xfe\x00garbage") and p / "b.jsonl"),
    ("uned", lambda p: (p / "u_es.json").write_text('{"a": 1}') and p / "u_es.json"),
    ("mmlu", lambda p: (p / "bio_test.csv").write_text('"unterminated,a,b\n') and p / "bio_test.csv"),
])
def test_a_file_that_cannot_be_read_is_one_clear_error(tmp_path, name, make):
    path = make(tmp_path)
    for strict in (False, True):
        with pytest.raises(DatasetError) as e:
            load(name, path=path, strict=strict)
        assert e.value.path == str(path) and e.value.message, str(e.value)
