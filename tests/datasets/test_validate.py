"""datasets.validate and `mcqa validate NAME PATH...`: per path, the questions loaded and the records left out by
reason (counts, the first few named); exit 0 unless a path cannot be read, or --strict and a record was left out.
Fixtures are written here, in our own words, in the EXAMS and AGIEval layouts."""
import json

import pytest

from mcqa_toolkit.cli import main
from mcqa_toolkit.datasets.validate import SHOWN, reason_kind, validate
from mcqa_toolkit.items import SkippedRecord


def _exams(k, key="A", language="Portuguese"):
    return {"id": f"v-{k}", "question": {"stem": f"Pergunta {k}?", "choices": [{"text": "sim", "label": "A"},
                                                                                {"text": "não", "label": "B"}]},
            "answerKey": key, "info": {"grade": 10, "subject": "Logic", "language": language}}


def _write(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def release(tmp_path):
    """dev.jsonl: 4 questions, 2 with a key that is no label, 1 in a language no library knows; test.jsonl clean."""
    dev = _write(tmp_path / "dev.jsonl", [_exams(1), _exams(2, key="@"), _exams(3, key="%"),
                                          _exams(4, language="Martian"), _exams(5), _exams(6, language="Italian")])
    test = _write(tmp_path / "test.jsonl", [_exams(k) for k in (7, 8)])
    return dev, test


def test_counts_per_path_and_reason(release):
    dev, test = release
    got = validate("exams", [dev, test])
    assert [(r.path, r.loaded, len(r.left_out), r.error) for r in got] == [(str(dev), 3, 3, ""), (str(test), 2, 0, "")]
    assert got[0].reasons() == [("field 'answerKey': … is not a choice label (…)", 2),
                                ("field 'info.language': unknown language … (not a language name or code that "
                                 "langcodes knows)", 1)]
    assert [r.record for r in got[0].left_out] == [2, 3, 4]


def test_the_command_prints_each_path_and_exits_0_unless_strict(release, capsys):
    dev, test = release
    assert main(["validate", "exams", str(dev), str(test)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{dev}: 3 questions loaded, 3 record(s) left out"
    assert out[1] == "       2  field 'answerKey': … is not a choice label (…)"
    assert out[3] == f"  left out: {dev}: record 2 (v-2): field 'answerKey': '@' is not a choice label (['A', 'B'])"
    assert f"{test}: 2 questions loaded, 0 record(s) left out" in out
    assert out[-1] == "2 path(s): 5 loaded, 3 record(s) left out, 0 cannot be read: ok"
    assert main(["validate", "exams", str(dev), "--strict"]) == 1
    assert capsys.readouterr().out.splitlines()[-1].endswith("FAILED (--strict: no record may be left out)")
    assert main(["validate", "exams", str(test), "--strict"]) == 0


def test_loader_arguments_and_a_path_that_cannot_be_read(release, tmp_path, capsys):
    dev, _ = release
    assert main(["validate", "exams", str(dev), "--dataset-args", '{"languages": ["it"]}']) == 0
    assert capsys.readouterr().out.startswith(f"{dev}: 1 questions loaded, 3 record(s) left out")
    missing = tmp_path / "nope.jsonl"
    assert main(["validate", "exams", str(dev), str(missing)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert f"{missing}: cannot be read: {missing}: file or directory not found" in out
    assert out[-1] == "2 path(s): 3 loaded, 3 record(s) left out, 1 cannot be read: FAILED"


@pytest.mark.parametrize("argv, message", [
    (["validate", "nosuch", "x.jsonl"], "unknown dataset 'nosuch'"),
    (["validate", "exams", "x.jsonl", "--dataset-args", "{languages"], "--dataset-args is not JSON"),
    (["validate", "exams", "x.jsonl", "--dataset-args", "[1]"], "not a JSON object"),
    (["validate", "exams", "x.jsonl", "--dataset-args", '{"langs": ["pt"]}'], "dataset 'exams'"),
])
def test_a_bad_invocation_is_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcqa: error: ") and message in err and err.count("\n") == 1


def test_many_records_left_out_are_counted_and_the_first_few_named(tmp_path):
    p = _write(tmp_path / "jec-qa-ca.jsonl", [{"question": f"问题{k}", "options": ["(A)是", "(B)否"],
                                              "label": "A" if k == 0 else "。"} for k in range(SHOWN + 4)])
    (report,) = validate("agieval", [p])
    text = report.text().splitlines()
    assert text[0] == f"{p}: 1 questions loaded, {SHOWN + 3} record(s) left out"
    assert text[1] == f"  {SHOWN + 3:>6}  field 'label': answer … is not written in letters of the options (AB)"
    assert sum(line.startswith("  left out: ") for line in text) == SHOWN and text[-1] == "  ... and 3 more"


def test_reason_kind_drops_particulars_only():
    rec = SkippedRecord("f", 3, "x", "ra", "right answer 7 is not an aid of this question ([1, 2, 3, 4])")
    assert reason_kind(rec) == "field 'ra': right answer … is not an aid of this question (…)"


def test_a_loader_of_tables_counts_rows(capsys):
    from paths import FIXTURES

    assert main(["validate", "enem_params", str(FIXTURES / "enem" / "ITENS_PROVA_2017.csv")]) == 0
    assert " rows loaded, 0 record(s) left out" in capsys.readouterr().out.splitlines()[0]
