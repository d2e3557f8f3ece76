"""datasets.head_qa: HEAD-QA's JSON per language (fixtures written here in the release's layout: two exams, 4 and 5
answers, a qid gap, a question on a figure), the Spanish and English versions linked by parallel_id so that the
language gap and DIF run on a loaded pair, errors naming file, record and field, and the real excerpts."""
import json

import numpy as np
import pandas as pd
import pytest
from lookup_backend import LookupBackend, seeded_table
from paths import FIXTURES, SHARED

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.common import UnusableRecordsWarning
from mcqa_toolkit.datasets.head_qa import parse_record
from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.measure import accuracy, dif_persons, language_gap, mantel_haenszel
from mcqa_toolkit.run import run
from mcqa_toolkit.run.strategy import strategy

ES, EN = FIXTURES / "head_qa" / "HEAD.json", FIXTURES / "head_qa" / "HEAD_EN.json"


def test_one_language_file():
    items = load("head_qa", path=ES)
    assert len(items) == 8 and {it.language for it in items} == {"es"}
    q = items["headqa-es-Cuaderno_2016_1_E-4"]                    # qid 3 is not in the exam (annulled): a gap
    assert (q.exam, q.year, q.subject, q.answer, q.options[q.answer]) == ("Cuaderno_2016_1_E", 2016, "nursing", 2,
                                                                          "Semisentado.")
    fig = items["headqa-es-Cuaderno_2013_1_F-2"]
    assert fig.has_image and fig.meta["image"].endswith("FIR-2013-img1.png") and fig.n_options == 5
    assert fig.subject == "pharmacology" and not q.has_image and q.meta["image"] == ""


def test_spanish_and_english_pair_on_parallel_id():
    items = load("head_qa", path=[ES, EN])
    pairs = items.by_parallel_id()
    assert len(items) == 16 and len(pairs) == 8 and all(set(v) == {"es", "en"} for v in pairs.values())
    es, en = pairs["headqa-Cuaderno_2016_1_E-1"]["es"], pairs["headqa-Cuaderno_2016_1_E-1"]["en"]
    assert es.answer == en.answer == 1 and en.options[1] == "60 to 100." and es.item_id != en.item_id


def test_language_gap_and_dif_run_on_a_loaded_pair(tmp_path):
    """The pair through run() under the head_qa strategy (cloze, char-normalised), 20 shuffles a language (the
    persons of DIF), then measure.language_gap and Mantel-Haenszel DIF on the records."""
    items = load("head_qa", path=[ES, EN])
    table = seeded_table(items, seed=3)
    backend = LookupBackend(table)
    s = strategy("head_qa", shuffles=20)
    records = pd.concat([run(items.filter(language=lang), backend, s, tmp_path / lang, dataset="head_qa",
                             progress=False) for lang in ("es", "en")], ignore_index=True)
    records["model"] = "lookup"
    # naive: the option whose log-likelihood per character of " <text>" (the continuation after "Answer:") is best
    naive = {it.item_id: float(np.argmax([v / len(" " + o) for v, o in zip(table[it.item_id], it.options, strict=True)])
                               == it.answer) for it in items}
    got = records.groupby("item_id")["correct"].mean()
    assert got.to_dict() == naive
    acc = accuracy(records, by=("model", "strategy", "language"), n_boot=50)
    gap = language_gap(acc, reference="en", score="accuracy", by=("model", "strategy"))
    mean = {lang: np.mean([naive[it.item_id] for it in items if it.language == lang]) for lang in ("es", "en")}
    assert gap.loc[0, "language"] == "es" and gap.loc[0, "gap_pct"] == pytest.approx(
        (mean["en"] - mean["es"]) / mean["en"] * 100)
    persons = dif_persons(records, focal="es", reference="en")
    assert persons.responses.shape == (40, 8) and set(persons.responses.columns) == set(items.by_parallel_id())
    dif = mantel_haenszel(persons.responses, persons.group, "es", "en", within=persons.block)
    assert len(dif.table) == 8 and set(dif.table["item_id"]) == set(persons.responses.columns)


def _file(tmp_path, question=None, **top):
    data = json.loads(ES.read_text())
    if question is not None:
        data["exams"]["Cuaderno_2016_1_E"]["data"][1] = question
    data.update(top)
    p = tmp_path / "h.json"
    p.write_text(json.dumps(data, ensure_ascii=False))
    return p


GOOD = {"qid": "2", "qtext": "¿?", "ra": "1", "answers": [{"aid": 1, "atext": "a"}, {"aid": 2, "atext": "b"}],
        "image": ""}


@pytest.mark.parametrize("question, record, field, message", [
    ({**GOOD, "ra": "3"}, "Cuaderno_2016_1_E/2", "ra", "right answer 3 is not an aid"),
    ({**GOOD, "answers": [{"aid": 1, "atext": "a"}, {"aid": 1, "atext": "b"}]}, "Cuaderno_2016_1_E/2", "answers.aid",
     "repeated aid"),
    ({**GOOD, "qid": "x"}, "Cuaderno_2016_1_E/2", "qid", "not an integer"),
    ({**GOOD, "image": 3}, "Cuaderno_2016_1_E/2", "image", "expected a file name"),
    ({**GOOD, "answers": [{"aid": 1, "atext": "a"}, {"aid": 2, "atext": ""}]}, "Cuaderno_2016_1_E/2",
     "answers.atext[1]", "empty or non-text option"),
    ("not a question", "Cuaderno_2016_1_E/2", None, "expected a JSON object"),
])
def test_bad_records_name_the_file_record_and_field(tmp_path, question, record, field, message):
    p = _file(tmp_path, question)
    with pytest.raises(DatasetError) as e:
        load("head_qa", path=p, strict=True)
    assert (e.value.path, e.value.record, e.value.field) == (str(p), record, field) and message in e.value.message
    with pytest.warns(UnusableRecordsWarning, match=f"record {record} "):
        items = load("head_qa", path=p)
    assert [(r.record, r.field) for r in items.skipped] == [(record, field)] and len(items) == 7


def test_bad_files_are_refused_in_one_sentence(tmp_path):
    with pytest.raises(DatasetError, match="unknown language 'pt'"):
        load("head_qa", path=_file(tmp_path, language="pt"))
    with pytest.raises(DatasetError, match="the file says 'es', language='en' was passed"):
        load("head_qa", path=_file(tmp_path), language="en")
    no_language = _file(tmp_path, language=None)
    with pytest.raises(DatasetError, match="pass language='es' or 'en'"):
        load("head_qa", path=no_language)
    data = json.loads(ES.read_text())
    data["exams"]["Examen_2016"] = data["exams"].pop("Cuaderno_2013_1_F")
    (tmp_path / "x.json").write_text(json.dumps(data))
    with pytest.raises(DatasetError, match="exam name 'Examen_2016' is not Cuaderno_<year>_<n>_<letter>"):
        load("head_qa", path=tmp_path / "x.json", strict=True)
    with pytest.warns(UnusableRecordsWarning, match="record Examen_2016 "):     # the exam, not the file, is left out
        assert {it.exam for it in load("head_qa", path=tmp_path / "x.json")} == {"Cuaderno_2016_1_E"}
    with pytest.raises(DatasetError, match=r"none of its 8 record\(s\) can be used.*duplicate id "
                                           r"'headqa-es-Cuaderno_2016_1_E-1'"):
        load("head_qa", path=[ES, ES])



def test_parse_record_names_an_exam_name_without_year_and_subject():
    rec = {"qid": "1", "qtext": "q", "ra": "1", "answers": [{"aid": 1, "atext": "a"}, {"aid": 2, "atext": "b"}]}
    with pytest.raises(DatasetError, match="exam name 'Examen_2016' is not Cuaderno_<year>_<n>_<letter>") as e:
        parse_record(rec, "Examen_2016/1", "x.json", "Examen_2016", "es")
    assert (e.value.record, e.value.field) == ("Examen_2016/1", "exams")


needs_shared = pytest.mark.skipif(not (SHARED / "formats").is_dir(), reason="real-format samples live in ../shared")


@needs_shared
def test_the_real_excerpts_pair_up():
    F = SHARED / "formats"
    items = load("head_qa", path=[F / "headqa_es_sample.json", F / "headqa_en_sample.json"])
    pairs = items.by_parallel_id()
    assert all(set(v) == {"es", "en"} for v in pairs.values()) and len(items) == 2 * len(pairs)
    assert all(v["es"].answer == v["en"].answer and v["es"].subject == v["en"].subject for v in pairs.values())
    assert {it.subject for it in items} <= {"biology", "medicine"} and any(it.has_image for it in items)
    assert all(it.n_options == 4 for it in items)
