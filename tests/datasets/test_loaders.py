"""Every loader on its fixture (our own questions in each real format), the hub path, and the read-only
real-format samples in ../shared/formats when that directory is present."""
import json

import pytest
from paths import FIXTURES, SHARED

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.course_exam import exam_statistics, parse_options
from mcqa_toolkit.datasets.hub import load_hub
from mcqa_toolkit.datasets.uned import guess_language

FIX = FIXTURES
needs_shared = pytest.mark.skipif(not (SHARED / "formats").is_dir(),
                                  reason="real-format samples live in ../shared (beside the repo in CI)")


# ---- medicina --------------------------------------------------------------------------------------------------

def test_medicina_fixture():
    items = load("medicina", path=FIX / "medicina" / "medicina_small.jsonl")
    assert len(items) == 5 and {it.subject for it in items} == {"biologia", "chimica", "fisica-matematica",
                                                                "competenze-conoscenze", "logica"}
    it = items["medicina-102"]
    assert it.options[it.answer] == "O" and it.language == "it" and it.n_options == 5


def test_medicina_full_size_file(tmp_path):
    """The real release has 3,301 lines; a synthetic file of that size loads in one pass."""
    p = tmp_path / "medicina_full.jsonl"
    topics = ["biologia", "chimica", "fisica-matematica", "competenze-conoscenze", "logica"]
    with p.open("w") as f:
        for i in range(3301):
            f.write(json.dumps({"id": i, "topic": topics[i % 5], "text": f"Domanda numero {i}?",
                                "answers": [f"risposta {k}" for k in range(5)], "label": i % 5}) + "\n")
    items = load("medicina", path=p)
    assert len(items) == 3301 and items[-1].answer == 3300 % 5


# ---- mmlu ------------------------------------------------------------------------------------------------------

def test_mmlu_directory_split_and_subjects():
    items = load("mmlu", path=FIX / "mmlu")
    assert len(items) == 6
    test = load("mmlu", path=FIX / "mmlu", split="test")
    assert len(test) == 5 and {it.subject for it in test} == {"basic_science", "world_geography"}
    geo = load("mmlu", path=FIX / "mmlu", split="test", subjects=["world_geography"])
    assert [it.answer_letter for it in geo] == ["C", "D"]


def test_mmlu_quoted_newline_single_file():
    items = load("mmlu", path=FIX / "mmlu" / "test" / "basic_science_test.csv")
    assert len(items) == 3 and "\nChoose the best answer." in items[1].stem
    assert items[1].options[items[1].answer] == "carbon dioxide" and items[0].meta["split"] == "test"


# ---- uned ------------------------------------------------------------------------------------------------------

def test_uned_languages_pair_by_id():
    es = load("uned", path=FIX / "uned" / "uned_es.csv")
    en = load("uned", path=FIX / "uned" / "uned_en.json")
    assert len(es) == len(en) == 3 and es[0].language == "es" and en[0].language == "en"
    assert [it.n_options for it in es] == [3, 4, 4] == [it.n_options for it in en]
    pairs = (es + en).by_parallel_id()
    assert set(pairs["BIO_2019_JUN_1_1"]) == {"es", "en"}
    assert pairs["LIT_2020_SEP_2_1"]["en"].options[1] == "Lisbon"
    assert es[0].item_id == "uned-es-BIO_2019_JUN_1_1" and es[0].year == 2019 and es[0].meta["code"] == "0001"


def test_uned_column_oriented_json_and_language_guess(tmp_path):
    rows = json.loads((FIX / "uned" / "uned_en.json").read_text())
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    p = tmp_path / "anything.json"
    p.write_text(json.dumps(cols))
    items = load("uned", path=p, language="en")
    assert len(items) == 3 and items[0].n_options == 3
    assert guess_language("UNED_ACCESS_2024_EN.csv") == "en" and guess_language("uned-es.json") == "es"
    assert guess_language("data.csv") is None


# ---- enade -----------------------------------------------------------------------------------------------------

def test_enade_csv_and_filters():
    items = load("enade", path=FIX / "enade" / "enade_small.csv")
    assert len(items) == 5 and items["enade-e2"].n_options == 4 and items["enade-e2"].answer == 3
    assert items["enade-e3"].has_image and items["enade-e4"].meta["cannot_fix"]
    assert items["enade-e5"].answer is None and items["enade-e5"].meta["annulled"]
    assert items["enade-e1"].subject == "Enfermagem" and items["enade-e1"].meta["component"] == "Componente Específico"
    kept = load("enade", path=FIX / "enade" / "enade_small.csv", filter_images=True, filter_cannot_fix=True)
    assert kept.ids == ["enade-e1", "enade-e2", "enade-e5"]


def test_enade_letter_columns_and_override():
    items = load("enade", path=FIX / "enade" / "enade_letters.jsonl", columns={"stem": "questao"})
    assert [it.n_options for it in items] == [5, 4]
    assert items[0].options[items[0].answer] == "32" and items[1].has_image and items[0].year == 2022
    with pytest.raises(ValueError, match="unknown ENADE field"):
        load("enade", path=FIX / "enade" / "enade_letters.jsonl", columns={"statement": "questao"})


# ---- course exam -----------------------------------------------------------------------------------------------

def test_course_exam_types():
    items = load("course_exam", path=FIX / "course_exam")
    by = {it.item_id: it for it in items}
    single, multi, tf, short, inline = (by[f"course-{i}"] for i in range(1, 6))
    assert single.answer_type == "single" and single.options == ("0 C", "50 C", "100 C", "150 C") and single.answer == 2
    assert "A. 0 C" not in single.stem and "boil" in single.stem and single.points == 5
    assert multi.answer_type == "multi" and multi.answer == (0, 2, 3) and multi.n_options == 4
    assert tf.answer_type == "truefalse" and tf.answer == (True, True, False) and tf.options == ("True", "False")
    assert len(tf.meta["statements"]) == 3
    assert short.answer_type == "short" and short.options == () and short.answer.startswith("Metal")
    # options on one line cannot be parsed: kept as a letter-keyed short item
    assert inline.answer_type == "short" and inline.answer == "B" and inline.meta["options_parsed"] is False
    assert inline.meta["question_type"] == "SingleChoice" and inline.year == 2023 and inline.subject == "Geography"
    assert single.meta["exam_stats"]["score_avg"] == 21.5


def test_course_exam_statistics():
    df = exam_statistics(FIX / "course_exam").set_index("exam_id")
    assert df.loc["intro_physics_2024_quiz_1", "score_median"] == 22
    assert df.loc["intro_physics_2024_quiz_1", "n_items"] == 4 and df.loc["geo_2023_final", "points_in_file"] == 10
    assert {"score_total", "score_max", "score_avg", "score_standard_deviation", "num_questions"} <= set(df.columns)


def test_parse_options_takes_last_run():
    stem, opts = parse_options("Steps:\nA. first\nB. second\nThen pick one:\nA) yes\nB) no\nC) maybe")
    assert opts == ("yes", "no", "maybe") and stem == "Steps:\nA. first\nB. second\nThen pick one:"


# ---- hub -------------------------------------------------------------------------------------------------------

def test_hub_from_dataset_objects():
    from datasets import Dataset, DatasetDict

    mmlu = Dataset.from_list([
        {"question": "What is 3 + 4?", "subject": "arithmetic", "choices": ["5", "6", "7", "8"], "answer": 2},
        {"question": "What is 9 - 5?", "subject": "arithmetic", "choices": ["2", "4", "6", "8"], "answer": 1},
    ])
    items = load("hub", name_or_path="local/mmlu", dataset=DatasetDict({"test": mmlu}), mapper="mmlu")
    assert len(items) == 2 and items[0].options[items[0].answer] == "7" and items.name == "hub:local/mmlu[test]"
    rows = json.loads((FIX / "uned" / "uned_en.json").read_text())
    uned = load_hub("local/uned", dataset=Dataset.from_list(rows), mapper="uned", mapper_kwargs={"language": "en"})
    assert [it.n_options for it in uned] == [3, 4, 4] and uned[0].item_id == "uned-en-BIO_2019_JUN_1_1"
    lines = (FIX / "enem" / "enem2023_small.jsonl").read_text().splitlines()
    enem = load_hub("local/enem", dataset=Dataset.from_list([json.loads(x) for x in lines]), mapper="enem")
    assert enem[2].answer is None and enem[1].has_image


def test_hub_local_files_through_load_dataset(tmp_path):
    med = load_hub("json", split="train", mapper="medicina", cache_dir=str(tmp_path / "cache"),
                   data_files=str(FIX / "medicina" / "medicina_small.jsonl"))
    assert len(med) == 5 and med["medicina-104"].answer == 3
    uned = load_hub("csv", split="train", mapper="uned", mapper_kwargs={"language": "es"},
                    data_files=str(FIX / "uned" / "uned_es.csv"), cache_dir=str(tmp_path / "cache"))
    assert [it.n_options for it in uned] == [3, 4, 4]  # the empty D arrives as "" (keep_default_na=False)


def test_hub_callable_mapper():
    from datasets import Dataset

    from mcqa_toolkit.items import Item

    def mapper(rec, n, path):
        return Item(item_id=f"x{n}", source="custom", exam="x", stem=rec["q"], options=rec["opts"], answer=rec["k"])

    items = load_hub("mine", dataset=Dataset.from_list([{"q": "Is ice cold?", "opts": ["yes", "no"], "k": 0}]),
                     mapper=mapper)
    assert items[0].options == ("yes", "no")
    with pytest.raises(ValueError, match="unknown mapper"):
        load_hub("mine", dataset=Dataset.from_list([{"q": "?"}]), mapper="nope")


def test_every_registered_name_imports_its_loader_and_mapper():
    """The registries name functions, imported when asked for: each name gives the function it is named after, and
    an unknown name is one ValueError listing the known ones."""
    from mcqa_toolkit.datasets import REGISTRY, loader
    from mcqa_toolkit.datasets.hub import MAPPERS, record_parser

    for name in REGISTRY:
        func = loader(name)
        assert callable(func) and func.__name__.startswith("load_"), name
    assert loader("enem_params").__module__ == "mcqa_toolkit.enem.itens_prova"
    with pytest.raises(ValueError, match=r"unknown dataset 'nope'; known: \['agieval', "):
        loader("nope")
    for name in MAPPERS:
        parser = record_parser(name).func
        assert parser.__name__ == "parse_record" and parser.__module__.startswith(f"mcqa_toolkit.datasets.{name}"), name


# ---- the real-format samples (read-only, beside the repo) -------------------------------------------------------

@needs_shared
def test_shared_samples_load():
    F = SHARED / "formats"
    assert len(load("medicina", path=F / "medicina_sample.jsonl")) == 3
    mmlu = load("mmlu", path=F / "high_school_biology_test_sample.csv")
    assert len(mmlu) == 3 and mmlu[0].subject == "high_school_biology" and mmlu[2].answer_letter == "C"
    ce = load("course_exam", path=F / "course_exam_sample")
    assert [it.answer_type for it in ce] == ["single", "multi", "short", "truefalse"]
    assert ce[1].answer == (0, 1, 3) and ce[3].answer == (True, True, False, True) and ce[0].n_options == 4
    pt = load("enem", path=F / "pt_ENEM_2022_CN_CO_PROVA_1092_sample.csv")
    assert [it.answer_letter for it in pt] == ["D", "D", "E"] and pt[0].meta["co_prova"] == 1092
    assert [it.has_image for it in pt] == [False, True, True] and pt[0].language == "pt"
    en = load("enem", path=F / "en_ENEM_2021_CN_CO_PROVA_916_sample.csv")
    assert en[1].options == ("1", "2", "3", "4", "5") and en[0].language == "en" and en[1].has_image
    bluex = load("enem", path=F / "enem_bluex_style_sample.json")
    assert bluex[0].options[0].startswith("evidenciar") and bluex[0].answer == 0 and bluex[0].meta["area"] == "LC"
    j24 = load("enem", path=F / "enem_2024_style_sample.jsonl")
    assert j24[1].has_image and "[[placeholder]]" not in j24[1].stem and j24[0].year == 2024


# ---- option texts that look like missing values ----------------------------------------------------------------
# "None", "NA", "N/A", "null", "nan" are answers in real exams; only an empty cell (or, in UNED's D field only,
# that format's documented "no fourth option" markers) is missing.

def _options(items):
    return {it.item_id: it.options for it in items}


NA_TEXT_CASES = [
    ("medicina", {"path": FIX / "medicina" / "medicina_na_texts.jsonl"},
     {"medicina-201": ("Na", "NaN", "N", "So", "Sd"), "medicina-202": ("Tutte", "Due", "Una", "None", "null"),
      "medicina-203": ("N/A", "NA", "nan", "none", "NULL")}),
    ("uned", {"path": FIX / "uned" / "uned_na_texts_es.csv"},
     {"uned-es-INF_2022_JUN_1_1": ("N/A", "None", "null"),          # D empty: 3 options
      "uned-es-INF_2022_JUN_1_2": ("0", "None", "False"),           # D "NaN": UNED's own marker, in D only
      "uned-es-INF_2022_JUN_1_3": ("NA", "OK", "SI", "None"),       # D "None" is a fourth option
      "uned-es-MAT_2023_SEP_2_1": ("0", "1", "nan", "inf")}),
    ("uned", {"path": FIX / "uned" / "uned_na_texts_en.json"},
     {"uned-en-INF_2022_JUN_1_1": ("N/A", "None", "null"), "uned-en-INF_2022_JUN_1_2": ("0", "None", "False"),
      "uned-en-INF_2022_JUN_1_3": ("NA", "OK", "YES", "None"), "uned-en-MAT_2023_SEP_2_1": ("0", "1", "nan", "inf")}),
    ("enade", {"path": FIX / "enade" / "enade_na_texts.csv"},
     {"enade-n1": ("NA", "OK", "SIM", "None", "N/A"), "enade-n2": ("null", "zero", "None", "nenhum"),
      "enade-n3": ("Na", "NaN", "N", "So")}),
    ("course_exam", {"path": FIX / "course_exam_na_texts"},
     {"course-31": ("0", "None", "null", "NaN"), "course-32": ("NA", "nan", "42", "N/A"), "course-33": (),
      "course-34": ()}),
    ("enem", {"path": FIX / "enem" / "na_texts" / "pt_ENEM_2022_MT_CO_PROVA_9301.csv"},
     {"ENEM_2022_MT_9301_q136-pt": ("NA", "OK", "SIM", "None", "N/A"),
      "ENEM_2022_MT_9301_q137-pt": ("0", "1", "nan", "inf", "null")}),
    ("enem", {"path": FIX / "enem" / "na_texts" / "bluex_na_texts.json"},
     {"ENEM_2022_140-pt": ("zero", "NULL", "None", "NaN", "N/A")}),
    ("enem", {"path": FIX / "enem" / "na_texts" / "enem2023_na_texts.jsonl"},
     {"ENEM_2023_questao_141-pt": ("NaCl", "NaN", "KCl", "NaOH", "None")}),
    ("demo", {"path": FIX / "demo_na_texts", "language": "en"}, {"na-1-en": ("0", "None", "null", "NaN")}),
]


@pytest.mark.parametrize("name,kwargs,expected", NA_TEXT_CASES,
                         ids=[f"{c[0]}-{c[1]['path'].name}" for c in NA_TEXT_CASES])
def test_missing_value_lookalikes_are_option_texts(name, kwargs, expected):
    items = load(name, **kwargs)
    assert _options(items) == expected
    for it in items:
        _assert_rendered_verbatim(it)
    if name == "course_exam":
        assert items["course-34"].answer == "None" and items["course-31"].answer == 1


def _assert_rendered_verbatim(item):
    """Every option reaches the prompt byte for byte: in the option list and as a scored continuation."""
    from mcqa_toolkit.prompts import load_template, render

    if not item.options or item.answer_type == "truefalse":
        return
    template = load_template(item.language if item.language in ("pt", "es", "it", "en") else "en", "default")
    shown, cloze = render(item, template), render(item, template, with_options=False)
    for letter, option in zip(item.letters, item.options, strict=True):
        assert f"{letter}. {option}\n".encode() in shown.text.encode()
    assert [c.encode() for c in cloze.continuations] == [f" {o}".encode() for o in item.options]


def test_mmlu_release_layout_with_missing_value_lookalikes():
    """A release-shaped data/ folder (dev, val, test, auxiliary_train) whose options read None, NA, null, nan."""
    data = FIX / "mmlu_release" / "data"
    test = load("mmlu", path=data, split="test")
    assert len(test) == 7 and {it.meta["split"] for it in test} == {"test"}
    texts = {o for it in test for o in it.options}
    assert {"None", "NA", "N/A", "null", "nan", "NaN", "none", "NULL"} <= texts
    assert test["mmlu-computer_basics-test-5"].options[test["mmlu-computer_basics-test-5"].answer] == "None"
    assert test["mmlu-chemistry_basics-test-2"].options[3] == "Not applicable\n(see the note below)"
    for it in test:
        _assert_rendered_verbatim(it)
    aux = load("mmlu", path=data, split="auxiliary_train")   # story_test.csv is training data, not the test split
    assert sorted(it.subject for it in aux) == ["reading_quiz", "story_test"] and aux[0].options[3] == "NA"
    assert len(load("mmlu", path=data)) == 11


def test_hub_csv_keeps_missing_value_lookalikes(tmp_path):
    """The HF csv builder parses with pandas; "None"/"NA"/"null" cells must arrive as text, an empty cell as ""."""
    uned = load_hub("csv", split="train", mapper="uned", mapper_kwargs={"language": "es"},
                    data_files=str(FIX / "uned" / "uned_na_texts_es.csv"), cache_dir=str(tmp_path / "cache"))
    assert _options(uned) == NA_TEXT_CASES[1][2]
    med = load_hub("json", split="train", mapper="medicina", cache_dir=str(tmp_path / "cache"),
                   data_files=str(FIX / "medicina" / "medicina_na_texts.jsonl"))
    assert _options(med) == NA_TEXT_CASES[0][2]
