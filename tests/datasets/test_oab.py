"""datasets.oab: OAB exam files as legal-nlp/oab-exams publishes them (fixtures written here in the release's layout:
AREA lines full and empty, hard-wrapped paragraphs and enumerations, an annulled question that still marks a key,
a file with mojibake, one that is cp1252), the real excerpt in ../shared/formats, and a run through run()."""
import warnings

import numpy as np
import pytest
from lookup_backend import LookupBackend, seeded_table
from paths import FIXTURES, SHARED
from test_loader_errors import assert_left_out_or_refused

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.common import UnusableRecordsWarning
from mcqa_toolkit.datasets.mojibake import TextRepairWarning
from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.run import run
from mcqa_toolkit.run.strategy import strategy

F = FIXTURES / "oab"
QUESTION = "Questão {n}\n\nAREA CIVIL\n\nQuem responde pelo dano?\n\nOPTIONS\n\n{options}\n"
OPTIONS = "A) O dono.\n\nB:CORRECT) O autor.\n\nC) Ninguém.\n\nD) O Estado.\n"


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableRecordsWarning)
        warnings.simplefilter("ignore", TextRepairWarning)
        return load("oab", path=path, **kw)


def test_an_exam_file_in_the_release_layout():
    with pytest.warns(UnusableRecordsWarning, match=r"record 47 \(oab-2019-29-q3\): field 'header': annulled by "
                                                    r"the exam board \(Questão 3 NULL\)"):
        items = load("oab", path=F / "2019-29.txt")
    assert items.ids == ["oab-2019-29-q1", "oab-2019-29-q2", "oab-2019-29-q4"]
    q1, q2, q4 = items
    assert (q1.exam, q1.year, q1.subject, q1.language, q1.answer_letter) == ("OAB_2019-29", 2019, "ethics", "pt", "B")
    assert q1.stem == ("Renata, advogada inscrita há dois anos, foi procurada por um vizinho que pretende processar a "
                       "empresa em que ela trabalha como empregada. Ela quer saber se pode aceitar a causa.\nSegundo o "
                       "Estatuto da Advocacia, assinale a afirmativa correta.")
    assert q1.options[1] == "Renata não deve patrocinar a causa contra a sua empregadora, por conflito de interesses."
    assert q2.subject == "" and q2.meta["area"] == "" and q2.answer_letter == "C"   # an empty AREA line
    assert q2.stem.split("\n")[1:4] == ["I - Os prazos contam-se em dias úteis.", "II - O prazo para contestar é de "
                                        "quinze dias.", "III - Os prazos nunca se suspendem."]   # enumerations kept
    assert q2.options == ("I, apenas.", "III, apenas.", "I e II, apenas.", "I, II e III.")
    assert q4.subject == "labour" and q4.meta["number"] == 4 and all(it.n_options == 4 for it in items)
    (skipped,) = items.skipped
    assert (skipped.record, skipped.item_id, skipped.field) == (47, "oab-2019-29-q3", "header")
    with pytest.raises(DatasetError, match=r"annulled by the exam board \(Questão 3 NULL\)"):
        load("oab", path=F / "2019-29.txt", strict=True)


def test_mojibake_is_repaired_where_unambiguous_and_reported_where_not():
    with pytest.warns(TextRepairWarning, match=r"keep mojibake .*: OAB_2019-29a Questão 2 \(oab-2019-29a-q2\)"):
        q1, q2 = load("oab", path=F / "2019-29a.txt")
    assert q1.item_id == "oab-2019-29a-q1" and q1.exam == "OAB_2019-29a"          # its header was "QuestÃ£o 1"
    assert q1.stem.endswith("A cobrança é “válida” segundo o município.") and q1.meta["mojibake"] == "repaired"
    assert q1.options[1] == "A taxa é inválida, pois o serviço não é específico nem divisível."
    assert q2.meta["mojibake"] == "unrepaired" and q2.stem.startswith("O prÃncipe herdeiro de um país")


def test_a_folder_reads_its_exam_files_only(tmp_path):
    for f in F.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "2019-29-ans.txt").write_text("1 2 3 4\nBCBA\n")       # the release's answer sheets: not exams
    (tmp_path / "README.org").write_text("notes")
    items = _load(tmp_path)
    assert [it.item_id for it in items] == ["oab-2019-29-q1", "oab-2019-29-q2", "oab-2019-29-q4", "oab-2019-29a-q1",
                                            "oab-2019-29a-q2"]
    (tmp_path / "2020-30.txt").write_bytes(QUESTION.format(n=1, options=OPTIONS).encode("cp1252"))  # not UTF-8
    assert _load(tmp_path)["oab-2020-30-q1"].stem == "Quem responde pelo dano?"


@pytest.mark.parametrize("text, record, field, message", [
    (QUESTION.format(n=1, options=OPTIONS.replace("B:CORRECT", "B")), 1, "key", "0 options marked :CORRECT"),
    (QUESTION.format(n=1, options=OPTIONS.replace("A)", "A:CORRECT)")), 1, "key", "2 options marked"),
    (QUESTION.format(n=1, options=OPTIONS.replace("C)", "D)", 1)), 1, "OPTIONS", "option D (line 13) out of order"),
    ("Exame de Ordem\n" + QUESTION.format(n=1, options=OPTIONS), 1, "header", "text before the first"),
    ("Uma prova qualquer\nsem questões\n", "-", "header", "no 'Questão N' line"),
    (QUESTION.format(n=1, options="A) Só uma.\n"), 1, "OPTIONS", "1 option(s)"),
])
def test_bad_files_name_the_file_record_and_field(tmp_path, text, record, field, message):
    p = tmp_path / "2020-30.txt"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as e:
        _load(p, strict=True)
    assert (e.value.path, e.value.record, e.value.field) == (str(p), record, field) and message in e.value.message
    assert_left_out_or_refused(e.value, lambda: _load(p))
    bad = tmp_path / "prova.txt"
    bad.write_text(QUESTION.format(n=1, options=OPTIONS))
    with pytest.raises(DatasetError, match="file name does not say the exam"):
        _load(bad)


def test_runs_under_the_oab_strategy_and_scores_like_a_naive_count(tmp_path):
    items = _load(F)
    table = seeded_table(items, seed=1)
    records = run(items, LookupBackend(table), strategy("oab"), tmp_path / "run", dataset="oab", progress=False)
    assert len(records) == len(items) and set(records["language"]) == {"pt"}
    naive = {it.item_id: int(np.argmax(table[it.item_id]) == it.answer) for it in items}
    assert dict(zip(records["item_id"], records["correct"].astype(int), strict=True)) == naive


needs_shared = pytest.mark.skipif(not (SHARED / "formats").is_dir(), reason="real-format samples live in ../shared")


@needs_shared
def test_the_real_excerpt_loads_as_published():
    with pytest.warns(UnusableRecordsWarning, match=r"\(Questão 71 NULL\)"):
        items = load("oab", path=SHARED / "formats" / "oab_2016-19_sample.txt")
    assert [it.answer_letter for it in items] == ["D", "B"] and items[0].exam == "OAB_2016-19"
    assert all(it.n_options == 4 and it.language == "pt" and "\n" not in "".join(it.options) for it in items)
    assert items[1].stem.startswith("O advogado Carlos dirigiu-se a uma Delegacia de Polícia para tentar obter cópia")
    assert [r.item_id for r in items.skipped] == ["oab-2016-19-q71"]
