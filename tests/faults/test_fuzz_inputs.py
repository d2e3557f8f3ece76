"""Bad input, fuzzed: mutated copies of our own fixtures of every loader format, of a params file and of an
ENEM microdata file (fuzz_mutations: cut short, wrong types, wrong encodings, duplicated ids, huge fields, NUL
bytes). Every input loads, or raises DatasetError naming the file, the record and the field (for params files:
`mcqa run` exits 2 with one `mcqa: error:` line); never another exception, never a hang (each input has
10 s). Hypothesis runs derandomized (the same inputs on every run) with no example database."""
from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fuzz_mutations import Hang, change_record, mutated, within
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import FIXTURES

from mcqa_toolkit import cli
from mcqa_toolkit.datasets import load
from mcqa_toolkit.enem import iter_microdata
from mcqa_toolkit.items import DatasetError, ItemSet

pytestmark = pytest.mark.faults
EXAMPLES = 200
FUZZ = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=5), derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SECONDS = 10  # per input: longer is a hang

# format -> ({file name in the case folder: (fixture, kind)}, how it is loaded from the case folder)
E = FIXTURES / "enem"
FORMATS: dict[str, tuple[dict[str, tuple[Path, str]], Callable[[Path], Any]]] = {
    "medicina jsonl": ({"m.jsonl": (FIXTURES / "medicina" / "medicina_small.jsonl", "jsonl")},
                       lambda d: load("medicina", path=d / "m.jsonl")),
    "uned csv": ({"uned_es.csv": (FIXTURES / "uned" / "uned_es.csv", "csv")},
                 lambda d: load("uned", path=d / "uned_es.csv")),
    "uned json": ({"uned_en.json": (FIXTURES / "uned" / "uned_en.json", "json")},
                  lambda d: load("uned", path=d / "uned_en.json")),
    "enade csv": ({"e.csv": (FIXTURES / "enade" / "enade_small.csv", "csv")},
                  lambda d: load("enade", path=d / "e.csv")),
    "enade jsonl": ({"e.jsonl": (FIXTURES / "enade" / "enade_letters.jsonl", "jsonl")},
                    lambda d: load("enade", path=d / "e.jsonl")),
    "mmlu csv": ({"basic_science_test.csv": (FIXTURES / "mmlu" / "test" / "basic_science_test.csv", "csv")},
                 lambda d: load("mmlu", path=d / "basic_science_test.csv")),
    "enem exam csv + ITENS_PROVA": (
        {"pt_ENEM_2022_CN_CO_PROVA_9102.csv": (E / "exams" / "pt_ENEM_2022_CN_CO_PROVA_9102.csv", "csv"),
         "ITENS_PROVA_2022.csv": (E / "ITENS_PROVA_2022.csv", "csv;")},
        lambda d: load("enem", path=d / "pt_ENEM_2022_CN_CO_PROVA_9102.csv", item_params=d / "ITENS_PROVA_2022.csv")),
    "enem bluex json": ({"b.json": (E / "bluex_small.json", "json")}, lambda d: load("enem", path=d / "b.json")),
    "enem 2024 jsonl": ({"e.jsonl": (E / "enem2023_small.jsonl", "jsonl")}, lambda d: load("enem", path=d / "e.jsonl")),
    "enem ITENS_PROVA": ({"ITENS_PROVA_2022.csv": (E / "ITENS_PROVA_2022.csv", "csv;")},
                         lambda d: load("enem_params", path=d / "ITENS_PROVA_2022.csv")),
    "course exam folder": ({"exams_metadata.json": (FIXTURES / "course_exam" / "exams_metadata.json", "json"),
                            "questions.jsonl": (FIXTURES / "course_exam" / "questions.jsonl", "jsonl")},
                           lambda d: load("course_exam", path=d)),
    "oab exam txt": ({"2019-29a.txt": (FIXTURES / "oab" / "2019-29a.txt", "txt")},
                     lambda d: load("oab", path=d / "2019-29a.txt")),
    "head_qa json pair": ({"HEAD.json": (FIXTURES / "head_qa" / "HEAD.json", "json"),
                           "HEAD_EN.json": (FIXTURES / "head_qa" / "HEAD_EN.json", "json")},
                          lambda d: load("head_qa", path=[d / "HEAD.json", d / "HEAD_EN.json"])),
    "exams jsonl": ({"dev.jsonl": (FIXTURES / "exams" / "dev.jsonl", "jsonl"),
                     "parallel_questions.jsonl": (FIXTURES / "exams" / "parallel_questions.jsonl", "jsonl")},
                    lambda d: load("exams", path=d / "dev.jsonl", parallel=d / "parallel_questions.jsonl")),
    "agieval jsonl": ({"gaokao-physics.jsonl": (FIXTURES / "agieval" / "gaokao-physics.jsonl", "jsonl"),
                       "lsat-rc.jsonl": (FIXTURES / "agieval" / "lsat-rc.jsonl", "jsonl")},
                      lambda d: load("agieval", path=d)),
    "demo items folder": ({"items/computing.jsonl": (FIXTURES / "demo_na_texts" / "items" / "computing.jsonl",
                                                     "jsonl")},
                          lambda d: load("demo", path=d)),
}


def _outcome(call: Callable[[], Any], names: set[str]) -> str:
    """'loaded', 'left out' (loaded, records named in ItemSet.skipped) or 'DatasetError' (naming one of `names`);
    anything else fails the example."""
    try:
        with within(SECONDS):
            got = call()
    except DatasetError as e:
        assert Path(e.path).name in names or e.path in names, f"DatasetError names {e.path!r}, not the file: {e}"
        assert e.record is not None
        where = f"{e.path}: " + ("" if e.record == "-" else f"record {e.record}: ")  # "-": the whole file
        assert str(e).startswith(where + ("" if e.field is None else f"field {e.field!r}: ")), str(e)
        return "DatasetError"
    except Hang:
        pytest.fail(f"no answer within {SECONDS} s")
    assert isinstance(got, (ItemSet, pd.DataFrame))  # enem_params gives the validated ITENS_PROVA table
    return "left out" if isinstance(got, ItemSet) and got.skipped else "loaded"


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_fuzzed_loader_inputs(fmt, figures):
    files, call = FORMATS[fmt]
    originals = {name: fixture.read_bytes() for name, (fixture, _) in files.items()}
    counts: Counter = Counter()

    @FUZZ
    @given(st.data())
    def one(data):
        target = data.draw(st.sampled_from(sorted(files)), label="file")
        damaged = data.draw(mutated(originals[target], files[target][1]), label="content")
        with tempfile.TemporaryDirectory(prefix="mcqa_fuzz_") as tmp:
            d = Path(tmp)
            for name, raw in originals.items():
                (d / name).parent.mkdir(parents=True, exist_ok=True)
                (d / name).write_bytes(damaged if name == target else raw)
            counts[_outcome(lambda: call(d), {Path(n).name for n in files} | {str(d)})] += 1

    one()
    assert sum(counts.values()) >= EXAMPLES and counts["DatasetError"] > 0
    figures.add("fuzz_loaders", formats=1, fuzzed_inputs=sum(counts.values()),
                loaded=counts["loaded"] + counts["left out"],
                dataset_errors=counts["DatasetError"])


def test_fuzzed_hub_rows(figures):
    """load_hub maps rows of an in-memory dataset (HF `datasets`) with the file loaders' record parsers."""
    rows = [json.loads(line) for line in (FIXTURES / "medicina" / "medicina_small.jsonl").read_text().splitlines()]
    counts: Counter = Counter()

    @FUZZ
    @given(st.data())
    def one(data):
        damaged = rows
        for _ in range(data.draw(st.integers(1, 3))):
            damaged = change_record(data.draw, damaged)
        counts[_outcome(lambda: load("hub", name_or_path="rows", mapper="medicina", dataset=damaged),
                        {"hub:rows[test]"})] += 1

    one()
    assert counts["left out"] + counts["DatasetError"] > 0   # damaged rows were named (or, none usable, refused)
    figures.add("fuzz_hub", fuzzed_inputs=sum(counts.values()), loaded=counts["loaded"] + counts["left out"],
                dataset_errors=counts["DatasetError"])


# ---- params files -------------------------------------------------------------------------------------
PARAMS = """\
output_dir: out
models: [gemma-3-270m, {backend: openai, model: served, name: api, base_url: "http://127.0.0.1:9/v1"}]
datasets: [demo, {name: medicina, label: med, args: {path: "MEDICINA", language: pt}}]
languages: [pt]
strategies: [enem_0shot, {base: S4, shuffles: 2}]
limit: 3
seed: 0
min_k: false
""".replace("MEDICINA", str(FIXTURES / "medicina" / "medicina_small.jsonl"))  # a real file: dry runs load datasets


def test_fuzzed_params_files(figures, tmp_path):
    counts: Counter = Counter()
    base = PARAMS.encode()
    assert cli.main(["run", _write(tmp_path / "ok.yaml", base), "--dry-run"]) == 0

    @FUZZ
    @given(mutated(base, "yaml"))
    def one(damaged):
        with tempfile.TemporaryDirectory(prefix="mcqa_fuzz_") as tmp:
            path = _write(Path(tmp) / "params.yaml", damaged)
            out, err = io.StringIO(), io.StringIO()
            with _cwd(tmp), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), within(SECONDS):
                code = cli.main(["run", path, "--dry-run"])
        lines = err.getvalue().splitlines()
        if code == 0:
            assert not lines, err.getvalue()
        elif code == 1:  # some combinations refused before any run folder exists (run.preflight), one line each
            refused = [line for line in out.getvalue().splitlines() if line.startswith("  cannot start ")]
            assert refused and not lines, (out.getvalue(), err.getvalue())
        else:
            assert code == 2 and len(lines) == 1 and lines[0].startswith("mcqa: error: "), (code, err.getvalue())
        counts[code] += 1

    one()
    assert counts[2] > 0
    figures.add("fuzz_params", fuzzed_inputs=sum(counts.values()), accepted=counts[0],
                partly_refused_exit_1=counts[1], refused_exit_2=counts[2])


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


@contextlib.contextmanager
def _cwd(path: str):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


# ---- ENEM microdata -----------------------------------------------------------------------------------
def _microdata() -> bytes:
    """A valid MICRODADOS file (';', latin-1) of a few MT candidates of the golden booklet 1211."""
    from mcqa_toolkit.enem.itens_prova import read_itens_prova

    items = read_itens_prova(E / "ITENS_PROVA_golden.csv")
    key = "".join(items[items["CO_PROVA"] == 1211].sort_values("CO_POSICAO")["TX_GABARITO"])
    right = key.replace("X", "A")  # X marks an annulled item's key, not a mark a candidate can make
    rows = [{"NU_INSCRICAO": i, "TP_PRESENCA_MT": p, "CO_PROVA_MT": 1211, "NU_NOTA_MT": "612,3" if i else 500.1,
             "TX_RESPOSTAS_MT": answers, "TX_GABARITO_MT": key, "TP_LINGUA": 0}
            for i, (p, answers) in enumerate([(1, right), (1, "A" * 45), (0, ""), (1, "B*.C" + right[4:])])]
    return pd.DataFrame(rows).to_csv(sep=";", index=False).encode("latin-1")


def test_fuzzed_enem_microdata(figures, tmp_path):
    base = _microdata()
    items = (E / "ITENS_PROVA_golden.csv").read_bytes()
    (tmp_path / "m.csv").write_bytes(base)
    (tmp_path / "i.csv").write_bytes(items)
    assert _scored(tmp_path / "m.csv", tmp_path / "i.csv", strict=True) is not None  # the base file is sound
    counts: Counter = Counter()

    @FUZZ
    @given(st.data())
    def one(data):
        damaged = data.draw(mutated(base, "csv;"))
        strict = data.draw(st.booleans(), label="strict")
        with tempfile.TemporaryDirectory(prefix="mcqa_fuzz_") as tmp:
            md, ip = Path(tmp) / "MICRODADOS_ENEM_2022.csv", Path(tmp) / "ITENS_PROVA_2022.csv"
            md.write_bytes(damaged)
            ip.write_bytes(items)
            counts[_outcome(lambda: _scored(md, ip, strict), {md.name, ip.name})] += 1

    one()
    assert counts["DatasetError"] > 0
    figures.add("fuzz_microdata", fuzzed_inputs=sum(counts.values()), scored=counts["loaded"],
                dataset_errors=counts["DatasetError"])


def _scored(md: Path, ip: Path, strict: bool) -> ItemSet:
    """Every chunk of the file (2 rows a chunk); an ItemSet stands for 'read to the end'."""
    for chunk in iter_microdata(md, ip, chunksize=2, strict=strict):
        assert list(chunk.scores.columns)[:2] == ["area", "CO_PROVA"] or chunk.scores.empty
    return ItemSet([])
