"""Bad input -> exactly one DatasetError naming the file, the record and the field: at the first bad record with
strict=True; without it the bad record is left out and named the same way (ItemSet.skipped) and the file loads, or,
when no record of the file is usable, the file is refused in one error that gives the reason. A file that cannot be
read is the same error either way.

Each case writes small files into tmp_path and calls a loader; the table lists what the error must say:
(file name, record number or "header"/"-", field).
"""
import inspect
import json
import warnings

import pytest

from mcqa_toolkit.datasets import load, loader
from mcqa_toolkit.datasets.common import UnusableRecordsWarning
from mcqa_toolkit.items import DatasetError

# ---- valid records, mutated per case ----------------------------------------------------------------------------
MED = {"id": 1, "topic": "biologia", "text": "Quale organo pompa il sangue?", "answers": ["a", "b", "c", "d", "e"],
       "label": 1}
UNED_HEAD = "question,A,B,C,D,solution,year,test_name,code,subject,id\n"
UNED_ROW = "Capital of Spain?,Madrid,Paris,Rome,,A,2020,T1,01,Geography,T1_1\n"
ENADE_HEAD = ("id,ano,curso,enunciado,alternativa_a,alternativa_b,alternativa_c,alternativa_d,alternativa_e,gabarito,"
              "tem_imagem\n")
ENADE_ROW = "1,2019,Enfermagem,Qual órgão filtra o sangue?,rim,pele,osso,olho,dente,A,False\n"
EXAMS = {"exams": [{"exam_id": "ex1", "course": "Physics", "year": 2024, "score_total": 10, "score_max": 9,
                    "score_avg": 6, "score_median": 6, "score_standard_deviation": 1.5, "num_questions": 1}]}
COURSE_Q = {"instance_id": 1, "exam_id": "ex1", "problem_num": 1, "points": 5, "type": "SingleChoice",
            "problem": "Boiling point of water at sea level?\nA. 0 C\nB. 100 C", "answer": "B", "explanation": ""}
ENEM_HEAD = "question,body,A,B,C,D,E,year,question_number,test,answer,language\n"
ENEM_ROW = "Q91,A água ferve a que temperatura?,0,50,100,150,200,2022,91,CN,C,portuguese\n"
ENEM_CSV = "ENEM_2022_CN_CO_PROVA_77.csv"
PARAMS_HEAD = ("CO_POSICAO;SG_AREA;CO_ITEM;TX_GABARITO;IN_ITEM_ABAN;NU_PARAM_A;NU_PARAM_B;NU_PARAM_C;CO_PROVA;"
               "TP_LINGUA\n")
PARAMS_ROW = "91;CN;5;C;0;1.5;0.2;0.2;77;\n"
BLUEX = {"id": "ENEM_2022_136", "number": 136, "exam": "2022", "question": "Quanto é 2 + 2?",
         "options": ["1", "2", "3", "4", "5"], "label": "d"}


def jl(*recs):
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)


def ch(rec, **kw):
    """A copy of `rec` with fields changed; a value of ... deletes the field."""
    out = {**rec, **kw}
    return {k: v for k, v in out.items() if v is not ...}


# (case id, dataset name, {file name: content}, loader kwargs (file names resolved in tmp_path), expected)
CASES = [
    # medicina
    ("med-bad-json", "medicina", {"m.jsonl": jl(MED) + '{"id": 2, "topic": \n'}, {"path": "m.jsonl"},
     ("m.jsonl", 2, None)),
    ("med-not-object", "medicina", {"m.jsonl": "[1, 2]\n"}, {"path": "m.jsonl"}, ("m.jsonl", 1, None)),
    ("med-missing-field", "medicina", {"m.jsonl": jl(ch(MED, text=...))}, {"path": "m.jsonl"}, ("m.jsonl", 1, "text")),
    ("med-empty-stem", "medicina", {"m.jsonl": jl(ch(MED, text="  "))}, {"path": "m.jsonl"},
     ("m.jsonl", 1, "text")),
    ("med-label-range", "medicina", {"m.jsonl": jl(ch(MED, label=5))}, {"path": "m.jsonl"}, ("m.jsonl", 1, "label")),
    ("med-label-type", "medicina", {"m.jsonl": jl(ch(MED, label="1"))}, {"path": "m.jsonl"}, ("m.jsonl", 1, "label")),
    ("med-duplicate-id", "medicina", {"m.jsonl": jl(MED, MED)}, {"path": "m.jsonl"}, ("m.jsonl", 2, "id")),
    ("med-option-count", "medicina", {"m.jsonl": jl(ch(MED, answers=["a", "b", "c", "d"]))}, {"path": "m.jsonl"},
     ("m.jsonl", 1, "answers")),
    ("med-empty-option", "medicina", {"m.jsonl": jl(ch(MED, answers=["a", "", "c", "d", "e"]))}, {"path": "m.jsonl"},
     ("m.jsonl", 1, "answers[1]")),
    ("med-unknown-topic", "medicina", {"m.jsonl": jl(ch(MED, topic="storia"))}, {"path": "m.jsonl"},
     ("m.jsonl", 1, "topic")),
    ("med-undecodable", "medicina", {"m.jsonl": jl(MED).encode() + b'{"id": 2, "text": "caf\xe9"}\n'},
     {"path": "m.jsonl"}, ("m.jsonl", 2, None)),
    # mmlu
    ("mmlu-letter", "mmlu", {"physics_test.csv": "Water boils at?,0,50,100,150,E\n"}, {"path": "physics_test.csv"},
     ("physics_test.csv", 1, "answer")),
    ("mmlu-few-cells", "mmlu", {"physics_test.csv": "ok?,a,b,c,d,A\nWater boils at?,0,50,100,C\n"},
     {"path": "physics_test.csv"}, ("physics_test.csv", 2, None)),
    ("mmlu-many-cells", "mmlu", {"physics_test.csv": "Water boils at?,0,50,100,150,C,extra\n"},
     {"path": "physics_test.csv"}, ("physics_test.csv", 1, None)),
    ("mmlu-empty-option", "mmlu", {"physics_test.csv": "Water boils at?,0,,100,150,C\n"}, {"path": "physics_test.csv"},
     ("physics_test.csv", 1, "B")),
    ("mmlu-file-name", "mmlu", {"physics.csv": "Water boils at?,0,50,100,150,C\n"}, {"path": "physics.csv"},
     ("physics.csv", "-", None)),
    # uned
    ("uned-letter", "uned", {"uned_es.csv": UNED_HEAD + UNED_ROW.replace(",A,2020", ",D,2020")},
     {"path": "uned_es.csv"}, ("uned_es.csv", 1, "solution")),
    ("uned-missing-column", "uned", {"uned_es.csv": UNED_HEAD.replace("solution,", "") + "q,a,b,c,,2020,T,1,S,1\n"},
     {"path": "uned_es.csv"}, ("uned_es.csv", "header", "solution")),
    ("uned-language", "uned", {"uned.csv": UNED_HEAD + UNED_ROW}, {"path": "uned.csv"}, ("uned.csv", "-", "language")),
    ("uned-year", "uned", {"uned_en.csv": UNED_HEAD + UNED_ROW.replace("2020", "20x0")}, {"path": "uned_en.csv"},
     ("uned_en.csv", 1, "year")),
    ("uned-duplicate-json", "uned", {"uned_en.json": json.dumps([{"question": "q", "A": "a", "B": "b", "C": "c",
     "D": None, "solution": "A", "year": 2020, "test_name": "T", "code": "1", "subject": "S", "id": "T_1"}] * 2)},
     {"path": "uned_en.json"}, ("uned_en.json", 2, "id")),
    ("uned-ragged-columns", "uned", {"uned_en.json": json.dumps({"question": ["q", "r"], "A": ["a"]})},
     {"path": "uned_en.json"}, ("uned_en.json", "-", None)),
    # enade
    ("enade-missing-column", "enade",
     {"e.csv": ENADE_HEAD.replace(",gabarito", "") + ENADE_ROW.replace(",A,False", ",False")},
     {"path": "e.csv"}, ("e.csv", "header", "gabarito")),
    ("enade-three-options", "enade", {"e.csv": ENADE_HEAD + ENADE_ROW.replace("olho,dente", ",")}, {"path": "e.csv"},
     ("e.csv", 1, "alternativa_d")),
    ("enade-letter", "enade", {"e.csv": ENADE_HEAD + ENADE_ROW.replace(",A,False", ",F,False")}, {"path": "e.csv"},
     ("e.csv", 1, "gabarito")),
    ("enade-bool", "enade", {"e.csv": ENADE_HEAD + ENADE_ROW.replace("False", "talvez")}, {"path": "e.csv"},
     ("e.csv", 1, "tem_imagem")),
    ("enade-override-missing", "enade", {"e.csv": ENADE_HEAD + ENADE_ROW},
     {"path": "e.csv", "columns": {"stem": "questao"}}, ("e.csv", "header", "questao")),
    # course exam
    ("course-unknown-exam", "course_exam", {"c/exams_metadata.json": json.dumps(EXAMS),
     "c/questions.jsonl": jl(ch(COURSE_Q, exam_id="ex9"))}, {"path": "c"}, ("questions.jsonl", 1, "exam_id")),
    ("course-type", "course_exam", {"c/exams_metadata.json": json.dumps(EXAMS),
     "c/questions.jsonl": jl(ch(COURSE_Q, type="Essay"))}, {"path": "c"}, ("questions.jsonl", 1, "type")),
    ("course-truefalse", "course_exam", {"c/exams_metadata.json": json.dumps(EXAMS),
     "c/questions.jsonl": jl(ch(COURSE_Q, type="True/False Questions", answer="Yes,No"))}, {"path": "c"},
     ("questions.jsonl", 1, "answer")),
    ("course-multi-letter", "course_exam", {"c/exams_metadata.json": json.dumps(EXAMS),
     "c/questions.jsonl": jl(ch(COURSE_Q, type="MultipleChoice", answer="A,Z"))}, {"path": "c"},
     ("questions.jsonl", 1, "answer")),
    ("course-points", "course_exam", {"c/exams_metadata.json": json.dumps(EXAMS),
     "c/questions.jsonl": jl(ch(COURSE_Q, points=0))}, {"path": "c"}, ("questions.jsonl", 1, "points")),
    ("course-duplicate", "course_exam", {"c/exams_metadata.json": json.dumps(EXAMS),
     "c/questions.jsonl": jl(COURSE_Q, COURSE_Q)}, {"path": "c"}, ("questions.jsonl", 2, "instance_id")),
    ("course-no-exams-key", "course_exam", {"c/exams_metadata.json": json.dumps({"tests": []}),
     "c/questions.jsonl": jl(COURSE_Q)}, {"path": "c"}, ("exams_metadata.json", "-", "exams")),
    ("course-stat", "course_exam",
     {"c/exams_metadata.json": json.dumps({"exams": [ch(EXAMS["exams"][0], score_avg="n/a")]}),
      "c/questions.jsonl": jl(COURSE_Q)}, {"path": "c"}, ("exams_metadata.json", 1, "score_avg")),
    # enem exam CSV / JSON
    ("enem-area", "enem", {"exam.csv": ENEM_HEAD + ENEM_ROW.replace(",CN,", ",XX,")}, {"path": "exam.csv"},
     ("exam.csv", 1, "test")),
    ("enem-letter", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW.replace(",C,portuguese", ",F,portuguese")},
     {"path": ENEM_CSV}, (ENEM_CSV, 1, "answer")),
    ("enem-missing-column", "enem", {ENEM_CSV: ENEM_HEAD.replace(",answer", "") + ENEM_ROW.replace(",C,", ",")},
     {"path": ENEM_CSV}, (ENEM_CSV, "header", "answer")),
    ("enem-year-vs-name", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW.replace(",2022,", ",2021,")}, {"path": ENEM_CSV},
     (ENEM_CSV, 1, "year")),
    ("enem-language", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW.replace("portuguese", "klingon")}, {"path": ENEM_CSV},
     (ENEM_CSV, 1, "language")),
    ("enem-json-label", "enem", {"b.json": json.dumps([ch(BLUEX, label="z")])}, {"path": "b.json"},
     ("b.json", 1, "label")),
    ("enem-json-options", "enem", {"b.json": json.dumps([ch(BLUEX, options=..., alternatives=["1", "2", "3", "4"])])},
     {"path": "b.json"}, ("b.json", 1, "alternatives")),
    ("enem-json-number", "enem", {"b.json": json.dumps([ch(BLUEX, id="ENEM_2022_x", number=...)])}, {"path": "b.json"},
     ("b.json", 1, "number")),
    ("enem-jsonl-bad-line", "enem", {"e.jsonl": jl(BLUEX) + "not json\n"}, {"path": "e.jsonl"}, ("e.jsonl", 2, None)),
    # enem with ITENS_PROVA
    ("params-key-mismatch", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW,
     "IP.csv": PARAMS_HEAD + PARAMS_ROW.replace(";C;", ";B;")},
     {"path": ENEM_CSV, "item_params": "IP.csv"}, (ENEM_CSV, 1, "answer")),
    ("params-bad-number", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW,
     "IP.csv": PARAMS_HEAD + PARAMS_ROW.replace("1.5", "abc")},
     {"path": ENEM_CSV, "item_params": "IP.csv"}, ("IP.csv", 1, "NU_PARAM_A")),
    ("params-unknown-area", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW,
     "IP.csv": PARAMS_HEAD + PARAMS_ROW.replace(";CN;", ";ZZ;")},
     {"path": ENEM_CSV, "item_params": "IP.csv"}, ("IP.csv", 1, "SG_AREA")),
    ("params-missing-column", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW, "IP.csv": "CO_POSICAO;SG_AREA\n91;CN\n"},
     {"path": ENEM_CSV, "item_params": "IP.csv"}, ("IP.csv", "header", "CO_ITEM")),
    ("params-other-booklet", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW,
     "IP.csv": PARAMS_HEAD + PARAMS_ROW.replace(";77;", ";78;")},
     {"path": ENEM_CSV, "item_params": "IP.csv"}, (ENEM_CSV, 1, "co_prova")),
    ("params-no-position", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW,
     "IP.csv": PARAMS_HEAD + PARAMS_ROW.replace("91;", "92;")},
     {"path": ENEM_CSV, "item_params": "IP.csv"}, (ENEM_CSV, 1, "question_number")),
    ("params-needs-foreign-language", "enem",
     {"ENEM_2022_LC_CO_PROVA_5.csv": ENEM_HEAD + "Q1,Read: 'Good morning'.,a,b,c,d,e,2022,1,LC,A,portuguese\n",
      "IP.csv": PARAMS_HEAD + "1;LC;10;A;0;1;0;0.2;5;0\n1;LC;11;B;0;1;0;0.2;5;1\n"},
     {"path": "ENEM_2022_LC_CO_PROVA_5.csv", "item_params": "IP.csv"},
     ("ENEM_2022_LC_CO_PROVA_5.csv", 1, "foreign_language")),
    # text that looks like a missing value is text: the error is the real problem next to it, or none at all
    ("na-mmlu-empty-beside-none", "mmlu", {"physics_test.csv": "Which is not a metal?,None,iron,copper,tin,A\n"
     "Which is a gas?,NA,null,,nan,B\n"}, {"path": "physics_test.csv"}, ("physics_test.csv", 2, "C")),
    ("na-mmlu-answer", "mmlu", {"physics_test.csv": "Which is not a metal?,None,iron,copper,tin,NA\n"},
     {"path": "physics_test.csv"}, ("physics_test.csv", 1, "answer")),
    ("na-med-empty-beside-none", "medicina", {"m.jsonl": jl(ch(MED, answers=["None", "NA", " ", "null", "nan"]))},
     {"path": "m.jsonl"}, ("m.jsonl", 1, "answers[2]")),
    ("na-med-null-option", "medicina", {"m.jsonl": jl(ch(MED, answers=["None", "NA", None, "null", "nan"]))},
     {"path": "m.jsonl"}, ("m.jsonl", 1, "answers[2]")),
    ("na-uned-marker-in-d-only", "uned", {"uned_es.csv": UNED_HEAD + UNED_ROW.replace(",,A,", ",NaN,D,")},
     {"path": "uned_es.csv"}, ("uned_es.csv", 1, "solution")),
    ("na-uned-empty-a-beside-none-d", "uned",
     {"uned_es.csv": UNED_HEAD + UNED_ROW.replace("Madrid,", ",").replace(",,A,", ",None,A,")},
     {"path": "uned_es.csv"}, ("uned_es.csv", 1, "A")),
    ("na-uned-year-text", "uned", {"uned_es.csv": UNED_HEAD + UNED_ROW.replace("2020", "NaN")}, {"path": "uned_es.csv"},
     ("uned_es.csv", 1, "year")),
    ("na-enade-empty-c-beside-none-e", "enade",
     {"e.csv": ENADE_HEAD + ENADE_ROW.replace("osso", "").replace("dente", "None")},
     {"path": "e.csv"}, ("e.csv", 1, "alternativa_c")),
    ("na-enade-letter", "enade", {"e.csv": ENADE_HEAD + ENADE_ROW.replace(",A,False", ",NA,False")}, {"path": "e.csv"},
     ("e.csv", 1, "gabarito")),
    ("na-enade-bool", "enade", {"e.csv": ENADE_HEAD + ENADE_ROW.replace(",False", ",NA")}, {"path": "e.csv"},
     ("e.csv", 1, "tem_imagem")),
    ("na-course-points", "course_exam", {"c/exams_metadata.json": json.dumps(EXAMS),
     "c/questions.jsonl": jl(ch(COURSE_Q, points="nan"))}, {"path": "c"}, ("questions.jsonl", 1, "points")),
    ("na-course-stat", "course_exam",
     {"c/exams_metadata.json": json.dumps({"exams": [ch(EXAMS["exams"][0], score_avg="NaN")]}),
      "c/questions.jsonl": jl(COURSE_Q)}, {"path": "c"}, ("exams_metadata.json", 1, "score_avg")),
    ("na-enem-empty-beside-none", "enem",
     {ENEM_CSV: ENEM_HEAD + ENEM_ROW.replace(",0,50,100,150,200,", ",None,,NA,null,nan,")},
     {"path": ENEM_CSV}, (ENEM_CSV, 1, "B")),
    ("na-enem-number", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW.replace(",91,", ",nan,")}, {"path": ENEM_CSV},
     (ENEM_CSV, 1, "question_number")),
    ("na-enem-language", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW.replace("portuguese", "None")}, {"path": ENEM_CSV},
     (ENEM_CSV, 1, "language")),
    ("na-enem-json-options", "enem", {"b.json": json.dumps([ch(BLUEX, options=["None", "NA", "", "null", "nan"])])},
     {"path": "b.json"}, ("b.json", 1, "options[2]")),
    ("na-enem-jsonl-label", "enem",
     {"e.jsonl": jl(ch(BLUEX, options=["None", "NA", "N/A", "null", "nan"], label="None"))},
     {"path": "e.jsonl"}, ("e.jsonl", 1, "label")),
    ("na-demo-empty-beside-none", "demo", {"d/items/x.jsonl": jl({"id": "x1", "subject": "s", "answer": 0,
     "irt": {"a": 1, "b": 0, "c": 0.2}, "text": {"en": {"stem": "Pick one", "options": ["None", "NA", "", "nan"]}}})},
     {"path": "d", "language": "en"}, ("x.jsonl", 1, "text.en.options[2]")),
    # a booklet code with two item sets (two rows for position 91): the file's answers must pick exactly one
    ("params-two-sets-both-agree", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW,
     "IP.csv": PARAMS_HEAD + PARAMS_ROW + PARAMS_ROW.replace("1.5", "0.7")},
     {"path": ENEM_CSV, "item_params": "IP.csv"}, (ENEM_CSV, "-", "item_set")),
    ("params-two-sets-none-agree", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW,
     "IP.csv": PARAMS_HEAD + PARAMS_ROW.replace(";C;", ";A;") + PARAMS_ROW.replace(";C;", ";B;")},
     {"path": ENEM_CSV, "item_params": "IP.csv"}, (ENEM_CSV, 1, "answer")),
    ("params-item-set-range", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW,
     "IP.csv": PARAMS_HEAD + PARAMS_ROW + PARAMS_ROW.replace(";C;", ";B;")},
     {"path": ENEM_CSV, "item_params": "IP.csv", "item_set": 3}, (ENEM_CSV, "-", "item_set")),
    ("params-sets-do-not-split", "enem", {ENEM_CSV: ENEM_HEAD + ENEM_ROW,
     "IP.csv": PARAMS_HEAD + PARAMS_ROW * 3 + PARAMS_ROW.replace("91;", "92;") * 2},
     {"path": ENEM_CSV, "item_params": "IP.csv"}, ("IP.csv", "-", "CO_POSICAO")),
    ("params-needs-booklet", "enem", {"exam.csv": ENEM_HEAD + ENEM_ROW, "IP.csv": PARAMS_HEAD + PARAMS_ROW},
     {"path": "exam.csv", "item_params": "IP.csv"}, ("exam.csv", 1, "co_prova")),
]


@pytest.mark.parametrize("name,files,kwargs,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_one_dataset_error(tmp_path, name, files, kwargs, expected):
    for rel, content in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    resolved = {k: tmp_path / v if k in ("path", "item_params") else v for k, v in kwargs.items()}
    strict = {"strict": True} if "strict" in inspect.signature(loader(name)).parameters else {}
    with pytest.raises(DatasetError) as e:
        load(name, **resolved, **strict)
    err = e.value
    assert (err.path.rsplit("/", 1)[-1], err.record, err.field) == expected, str(err)
    assert str(err).startswith(err.path) and err.message
    assert_left_out_or_refused(err, lambda: load(name, **resolved))


def assert_left_out_or_refused(err, lenient):
    """Without strict, the record `err` names is left out and named, or its file is refused: the error is the same
    (a file that cannot be read, the demo's own data, item parameters that do not fit), or says that no record of
    the file could be used and why the first could not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableRecordsWarning)
        try:
            items = lenient()
        except DatasetError as refused:
            assert (refused.path, refused.record, refused.field, refused.message) == \
                (err.path, err.record, err.field, err.message) or (
                    refused.whole_file and "none of its" in refused.message and err.message in refused.message)
            return
    assert (err.path, err.record, err.field, err.message) in [(r.path, r.record, r.field, r.reason)
                                                              for r in items.skipped]


def test_enough_cases():
    assert len(CASES) >= 30


def test_hub_row_errors_name_the_dataset_row_and_field():
    from datasets import Dataset

    ds = Dataset.from_list([{**MED, "id": 1}, {**MED, "id": 2, "label": 9}])
    with pytest.raises(DatasetError) as e:
        load("hub", name_or_path="room/medicina", dataset=ds, mapper="medicina", strict=True)
    assert (e.value.path, e.value.record, e.value.field) == ("hub:room/medicina[test]", 2, "label")
    assert_left_out_or_refused(e.value, lambda: load("hub", name_or_path="room/medicina", dataset=ds,
                                                     mapper="medicina"))


def test_latin1_is_rejected_where_utf8_is_the_format(tmp_path):
    """ENEM exam CSVs may be latin-1; JSONL/UNED files are UTF-8, so stray latin-1 bytes are an error."""
    p = tmp_path / "uned_es.csv"
    p.write_bytes((UNED_HEAD + UNED_ROW.replace("Spain", "España")).encode("latin-1"))
    with pytest.raises(DatasetError) as e:
        load("uned", path=p)
    assert (e.value.record, e.value.field) == (2, None) and "undecodable" in e.value.message


def test_hub_csv_empty_cell_beside_missing_value_lookalikes(tmp_path):
    """Through the HF csv builder too, "None"/"NA" cells are text and the empty cell is the error."""
    p = tmp_path / "uned_es.csv"
    p.write_text(UNED_HEAD + UNED_ROW.replace("Madrid,Paris,Rome,", "None,NA,,"), encoding="utf-8")
    with pytest.raises(DatasetError) as e:
        load("hub", name_or_path="csv", split="train", mapper="uned", mapper_kwargs={"language": "es"},
             data_files=str(p), cache_dir=str(tmp_path / "cache"), strict=True)
    assert (e.value.path, e.value.record, e.value.field) == ("hub:csv[train]", 1, "C")
