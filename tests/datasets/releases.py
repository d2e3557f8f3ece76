"""A valid file of each loader for tests/datasets/test_common.py's corruption sweep: three records of our own, in the
release's layout, how they are written, and what the loader calls the middle one."""
import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from test_loader_errors import BLUEX, EXAMS, MED

# corruptions of the record as a whole (they name no field)
NOT_JSON, NOT_A_RECORD, CELL_MISSING = "(a line that is not JSON)", "(not an object)", "(a cell missing)"


def jsonl_text(records):
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def csv_text(records, header=True):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if header:
        writer.writerow(list(records[0]))
    writer.writerows([list(r.values()) for r in records])
    return out.getvalue()


@dataclass
class Release:
    """A loader's valid file: three records, how they are written, and the name its middle record goes by."""

    name: str
    file: str
    records: list[dict]
    write: Callable[[list[dict]], str]
    middle: Any = 2                        # the middle record's number as the loader names it
    kwargs: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)          # other files of the release, written as they are
    tolerant: tuple = ()                   # fields with no corruption the format refuses (optional, free text)
    named: dict = field(default_factory=dict)          # corrupted field -> other fields the loader may name
    csv: bool = False

    def fields(self) -> list[str]:
        rec = self.records[1]
        paths = [k for k in rec]
        paths += [f"{k}.{k2}" for k, v in rec.items() if isinstance(v, dict) for k2 in v]
        paths += [f"{k}.0.{k2}" for k, v in rec.items() if isinstance(v, list) and v and isinstance(v[0], dict)
                  for k2 in v[0]]
        return paths + [CELL_MISSING if self.csv else NOT_JSON if self.file.endswith(".jsonl") else NOT_A_RECORD]


def _medicina(k):
    return {**MED, "id": k, "text": f"Quale organo numero {k}?"}


def _uned(k):
    return {"question": f"¿Capital número {k}?", "A": "Madrid", "B": "París", "C": "Roma", "D": "", "solution": "A",
            "year": "2020", "test_name": "T1", "code": "01", "subject": "Geografía", "id": f"T1_{k}"}


def _enade(k):
    return {"id": str(k), "ano": "2019", "curso": "Enfermagem", "enunciado": f"Qual órgão, caso {k}?",
            "alternativa_a": "rim", "alternativa_b": "pele", "alternativa_c": "osso", "alternativa_d": "olho",
            "alternativa_e": "dente", "gabarito": "A", "tem_imagem": "False"}


def _mmlu(k):
    return {"question": f"Which gas, case {k}?", "A": "oxygen", "B": "neon", "C": "argon", "D": "xenon", "answer": "B"}


def _course(k, kind="SingleChoice", answer="B"):
    return {"instance_id": k, "exam_id": "ex1", "problem_num": k, "points": 5, "type": kind,
            "problem": f"Question {k}: which is larger?\nA. 1\nB. 2\nC. 0", "answer": answer, "explanation": ""}


def _enem_row(k):
    return {"question": f"Q{90 + k}", "body": f"Quanto é {k} + {k}?", "A": "0", "B": "1", "C": str(2 * k), "D": "9",
            "E": "11", "year": "2022", "question_number": str(90 + k), "test": "CN", "answer": "C",
            "language": "portuguese"}


def _bluex(k):
    return {**BLUEX, "id": f"ENEM_2022_{135 + k}", "number": 135 + k, "question": f"Quanto é {k} + 2?",
            "context": "", "alternatives": ["A 1", "B 2", "C 3", "D 4", "E 5"]}


def _enem24(k):
    return {"id": f"questao_{90 + k:02d}", "exam": "2024", "IU": False, "ledor": False, "question": f"Pergunta {k}?",
            "alternatives": ["um.", "dois.", "três.", "quatro.", "cinco."], "label": "B", "figures": [],
            "description": []}


def _headqa(k):
    return {"qid": str(k), "qtext": f"¿Pregunta {k}?", "ra": "2",
            "answers": [{"aid": a, "atext": f"respuesta {a}"} for a in (1, 2, 3, 4)], "image": ""}


def _exams(k):
    return {"id": f"7a7a-{k}", "question": {"stem": f"Qual é a pergunta {k}?", "choices": [
        {"text": "um", "label": "A"}, {"text": "dois", "label": "B"}, {"text": "três", "label": "C"}]},
        "answerKey": "B", "info": {"grade": 12, "subject": "Math", "language": "Portuguese"}}


def _agieval(k):
    return {"passage": "", "question": f"Which number, case {k}?", "options": ["(A)1", "(B)2", "(C)3", "(D)4"],
            "label": "C" if k != 2 else ["A", "C"], "answer": None, "other": {"source": "2021年模拟"}}


def _headqa_file(records):
    return json.dumps({"version": "1.0", "language": "es", "exams": {"Cuaderno_2016_1_M": {
        "name": "Cuaderno_2016_1_M", "data": records}}}, ensure_ascii=False)


COURSE_META = json.dumps(EXAMS)
COURSE_RECORDS = [_course(1), _course(2, "MultipleChoice", "A,B"), _course(3, "ShortAnswerQuestion", "two")]

RELEASES = [
    Release("medicina", "m.jsonl", [_medicina(k) for k in (1, 2, 3)], jsonl_text),
    Release("hub", "", [_medicina(k) for k in (1, 2, 3)], list, kwargs={"mapper": "medicina"}),
    Release("uned", "u_es.csv", [_uned(k) for k in (1, 2, 3)], csv_text, csv=True, tolerant=("D",)),
    Release("uned", "u_en.json", [_uned(k) for k in (1, 2, 3)], lambda rs: json.dumps(rs, ensure_ascii=False)),
    Release("enade", "e.csv", [_enade(k) for k in (1, 2, 3)], csv_text, csv=True,
            tolerant=("id", "alternativa_e")),      # an empty fifth alternative: a four-option item
    Release("mmlu", "physics_test.csv", [_mmlu(k) for k in (1, 2, 3)], lambda rs: csv_text(rs, header=False), csv=True),
    Release("course_exam", "questions.jsonl", COURSE_RECORDS, jsonl_text, kwargs={"path": "."},
            extra={"exams_metadata.json": COURSE_META}, tolerant=("problem_num", "explanation")),
    Release("enem", "ENEM_2022_CN_CO_PROVA_77.csv", [_enem_row(k) for k in (1, 2, 3)], csv_text, csv=True,
            tolerant=("question",)),
    Release("enem", "b.json", [_bluex(k) for k in (1, 2, 3)], lambda rs: json.dumps(rs, ensure_ascii=False),
            tolerant=("context", "alternatives", "exam")),     # the text, options and year are found elsewhere
    Release("enem", "2024.jsonl", [_enem24(k) for k in (1, 2, 3)], jsonl_text,
            named={"id": ("number",), "alternatives": ("options",)}),
    Release("head_qa", "h.json", [_headqa(k) for k in (1, 2, 3)], _headqa_file, middle="Cuaderno_2016_1_M/2"),
    Release("exams", "dev.jsonl", [_exams(k) for k in (1, 2, 3)], jsonl_text, tolerant=("info.grade",),
            named={"question": ("stem",)}),
    Release("agieval", "gaokao-physics.jsonl", [_agieval(k) for k in (1, 2, 3)], jsonl_text,
            tolerant=("answer", "other", "other.source")),
]
