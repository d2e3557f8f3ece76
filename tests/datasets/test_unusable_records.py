"""Records that cannot be administered (no question text, no option text, nothing in the record to recover it from)
are left out of a load with one warning naming each (file, record, id, field, reason), counted on the ItemSet
(`skipped`), and refused with strict=True; present-but-odd text ("None", "NA") still loads. One case per loader
(fixtures written here, in our own words); tests/datasets/test_common.py holds the rule for every other field."""
import json
import warnings

import pytest
from test_loader_errors import BLUEX, ENEM_HEAD, MED, UNED_HEAD, jl

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.common import UnusableRecordsWarning
from mcqa_toolkit.items import DatasetError

UNED_ROW = "Capital of Spain?,Madrid,Paris,Rome,,A,2020,T1,01,Geography,T1_{n}\n"
ENADE_HEAD = "id,ano,curso,enunciado,alternativa_a,alternativa_b,alternativa_c,alternativa_d,alternativa_e,gabarito\n"


def _bluex(n, **kw):
    return {**BLUEX, "id": f"ENEM_2022_{n}", "number": n, **kw}


# (case, dataset, files, kwargs, n items kept, (record, field) of the record left out)
CASES = [
    ("medicina-empty-text", "medicina", {"m.jsonl": jl(MED, {**MED, "id": 2, "text": " "}, {**MED, "id": 3})},
     {"path": "m.jsonl"}, 2, (2, "text")),
    ("medicina-no-option-text", "medicina", {"m.jsonl": jl(MED, {**MED, "id": 2, "answers": [""] * 5})},
     {"path": "m.jsonl"}, 1, (2, "answers")),
    ("uned-no-options", "uned", {"u_es.csv": UNED_HEAD + UNED_ROW.format(n=1) + ",,,,,A,2020,T1,02,Geo,T1_2\n"
                                 .replace(",,,,,A", "What?,,,,,A")}, {"path": "u_es.csv"}, 1, (2, "A-C")),
    ("uned-empty-question", "uned", {"u_es.csv": UNED_HEAD + UNED_ROW.format(n=1)
                                     + UNED_ROW.format(n=2).replace("Capital of Spain?", "")},
     {"path": "u_es.csv"}, 1, (2, "question")),
    ("enade-empty-stem", "enade", {"e.csv": ENADE_HEAD + "1,2019,Enf,Qual?,a,b,c,d,e,A\n2,2019,Enf,,a,b,c,d,e,B\n"},
     {"path": "e.csv"}, 1, (2, "enunciado")),
    ("mmlu-no-options", "mmlu", {"bio_test.csv": "Which is a cell?,a,b,c,d,A\nWhat?,,,,,B\n"},
     {"path": "bio_test.csv"}, 1, (2, "A-D")),
    ("enem-csv-empty-body", "enem", {"ENEM_2022_CN_CO_PROVA_7.csv": ENEM_HEAD
                                     + "Q91,Quanto?,0,50,100,150,200,2022,91,CN,C,portuguese\n"
                                     + "Q92,,0,50,100,150,200,2022,92,CN,A,portuguese\n"},
     {"path": "ENEM_2022_CN_CO_PROVA_7.csv"}, 1, (2, "body")),
    ("enem-json-no-option-text", "enem", {"b.json": json.dumps([_bluex(136), _bluex(137, options=[], alternatives=[]),
                                                                _bluex(138)])},
     {"path": "b.json"}, 2, (2, "options")),
    ("oab-no-option-text", "oab", {"2020-30.txt": "Questão 1\nAREA\nQuem decide?\nOPTIONS\nA) Eu.\nB:CORRECT) Tu.\n\n"
                                   "Questão 2\nAREA CIVIL\nE agora?\nOPTIONS\n\n"}, {"path": "2020-30.txt"}, 1,
     (8, "OPTIONS")),
    ("head-qa-empty-question", "head_qa", {"h.json": json.dumps({"language": "es", "exams": {"Cuaderno_2016_1_E": {
        "data": [{"qid": 1, "qtext": "¿Qué?", "ra": 1, "answers": [{"aid": 1, "atext": "a"}, {"aid": 2, "atext": "b"}]},
                 {"qid": 2, "qtext": " ", "ra": 1,
                  "answers": [{"aid": 1, "atext": "a"}, {"aid": 2, "atext": "b"}]}]}}})},
     {"path": "h.json"}, 1, ("Cuaderno_2016_1_E/2", "qtext")),
    ("exams-no-choices", "exams", {"dev.jsonl": jl(*(
        {"id": f"q{k}", "question": {"stem": "Quanto?", "choices": choices}, "answerKey": "A",
         "info": {"grade": 12, "subject": "Math", "language": "Portuguese"}}
        for k, choices in ((1, [{"text": "1", "label": "A"}, {"text": "2", "label": "B"}]), (2, []))))},
     {"path": "dev.jsonl"}, 1, (2, "question.choices")),
    ("agieval-empty-question", "agieval", {"sat-math.jsonl": jl(
        {"passage": "", "question": "1 + 1?", "options": ["(A)1", "(B)2"], "label": "B"},
        {"passage": None, "question": "", "options": ["(A)1", "(B)2"], "label": "B"})},
     {"path": "sat-math.jsonl"}, 1, (2, "question")),
    ("course-exam-empty-problem", "course_exam", {
        "c/exams_metadata.json": json.dumps({"exams": [{"exam_id": "ex1", "course": "Physics", "year": 2024,
                                                        "score_total": 10, "score_max": 9, "score_avg": 6,
                                                        "score_median": 6, "score_standard_deviation": 1.5,
                                                        "num_questions": 2}]}),
        "c/questions.jsonl": jl({"instance_id": 1, "exam_id": "ex1", "points": 5, "type": "ShortAnswerQuestion",
                                  "problem": "Name a noble gas.", "answer": "neon"},
                                 {"instance_id": 2, "exam_id": "ex1", "points": 5, "type": "ShortAnswerQuestion",
                                  "problem": "", "answer": "argon"})},
     {"path": "c"}, 1, (2, "problem")),
]


def _write(tmp_path, files):
    for rel, content in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content, encoding="utf-8")


@pytest.mark.parametrize("case,name,files,kwargs,n_kept,where", CASES, ids=[c[0] for c in CASES])
def test_unusable_record_left_out_with_one_warning(tmp_path, case, name, files, kwargs, n_kept, where):
    _write(tmp_path, files)
    args = {k: tmp_path / v if k == "path" else v for k, v in kwargs.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        items = load(name, **args)
    ours = [w for w in caught if issubclass(w.category, UnusableRecordsWarning)]
    assert len(ours) == 1 and len(items) == n_kept
    (skipped,) = items.skipped
    assert (skipped.record, skipped.field) == where and skipped.reason.startswith("no ")
    message = str(ours[0].message)
    assert f"record {where[0]}" in message and repr(where[1]) in message and "strict=True" in message
    assert skipped.item_id and skipped.item_id in message
    assert len(items.filter(lambda it: True).skipped) == 1 and len(items[:1].skipped) == 1   # kept with the set
    with pytest.raises(DatasetError) as e:
        load(name, **args, strict=True)
    assert (e.value.record, e.value.field) == where


def test_odd_text_is_not_unusable(tmp_path):
    """Options that merely look like missing values are text; one empty option among others leaves the record out
    naming that option (it is not "no option text")."""
    _write(tmp_path, {"m.jsonl": jl({**MED, "answers": ["None", "NA", "null", "nan", "N/A"]})})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnusableRecordsWarning)
        items = load("medicina", path=tmp_path / "m.jsonl")
    assert items[0].options == ("None", "NA", "null", "nan", "N/A") and not items.skipped
    _write(tmp_path, {"m.jsonl": jl(MED, {**MED, "id": 2, "answers": ["a", "", "c", "d", "e"]})})
    with pytest.warns(UnusableRecordsWarning):
        items = load("medicina", path=tmp_path / "m.jsonl")
    assert [(r.field, r.reason) for r in items.skipped] == [("answers[1]", "empty or non-text option ''")]


def test_a_run_records_what_its_load_left_out(tmp_path):
    """The run's provenance counts and names the records its dataset left out."""
    from lookup_backend import LookupBackend

    from mcqa_toolkit.run import run, strategy

    _write(tmp_path, {"m.jsonl": jl(MED, {**MED, "id": 2, "text": ""}, {**MED, "id": 3})})
    with pytest.warns(UnusableRecordsWarning):
        items = load("medicina", path=tmp_path / "m.jsonl")
    backend = LookupBackend({it.item_id: [0.0, 1.0, 0.0, 0.0, 0.0] for it in items})
    run(items, backend, strategy("medicina_mc"), tmp_path / "run", progress=False)
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert prov["n_skipped_records"] == 1 and "record 2 (medicina-2): field 'text'" in prov["skipped_records"][0]
