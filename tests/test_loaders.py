"""Every loader on its fixture (our own questions in each real format), the hub path, and the read-only
real-format samples in ../shared/formats when that directory is present."""
import csv
import json
from pathlib import Path

import pytest

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.course_exam import exam_statistics, parse_options
from mcqa_toolkit.datasets.enem import area_of, load_item_params, read_itens_prova
from mcqa_toolkit.datasets.hub import load_hub
from mcqa_toolkit.datasets.uned import guess_language
from mcqa_toolkit.items import DatasetError

FIX = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[2] / "shared"
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


# ---- enem ------------------------------------------------------------------------------------------------------

def test_enem_directory_with_item_params():
    items = load("enem", path=FIX / "enem" / "exams", item_params=FIX / "enem" / "ITENS_PROVA_2022.csv")
    assert len(items) == 14
    q91 = items["ENEM_2022_CN_9102_q91-pt"]
    assert q91.irt == (1.8, 0.5, 0.15) and q91.meta["co_item"] == 500091 and q91.meta["co_habilidade"] == "17"
    assert q91.subject == "natural sciences" and q91.meta["area"] == "CN" and q91.exam == "ENEM_2022_CN_9102"
    assert items["ENEM_2022_CN_9102_q92-pt"].has_image and not q91.has_image
    assert items["ENEM_2022_CN_9102_q92-en"].has_image  # "Image description:" marker
    # annulled by INEP only: the exam key is kept in meta, answer and irt cleared
    q93 = items["ENEM_2022_CN_9102_q93-pt"]
    assert q93.answer is None and q93.irt is None and q93.meta["annulled"]
    assert q93.meta["answer_before_annulment"] == "C" and q93.meta["tx_motivo_aban"] == "Exclusão pedagógica"
    q94 = items["ENEM_2022_CN_9102_q94-en"]  # "ANULADA" in the exam and IN_ITEM_ABAN = 1
    assert q94.answer is None and q94.meta["tx_gabarito"] == "X"
    # the translations pair up
    assert set(items.by_parallel_id()["ENEM_2022_CN_9102_q91"]) == {"pt", "en"}


def test_enem_lc_foreign_language_items_match_tp_lingua():
    items = load("enem", path=FIX / "enem" / "exams" / "pt_ENEM_2022_LC_CO_PROVA_9101.csv",
                 item_params=FIX / "enem" / "ITENS_PROVA_2022.csv")
    en1, es1 = items["ENEM_2022_LC_9101_q1_en-pt"], items["ENEM_2022_LC_9101_q1_es-pt"]
    assert en1.meta["foreign_language"] == "en" and en1.meta["tp_lingua"] == 0 and en1.meta["co_item"] == 600001
    assert es1.meta["foreign_language"] == "es" and es1.meta["tp_lingua"] == 1 and es1.irt == (0.9, 0.3, 0.22)
    assert items["ENEM_2022_LC_9101_q2_en-pt"].irt == (1.5, 0.8, 0.12)  # comma decimals in the params file
    assert "foreign_language" not in items["ENEM_2022_LC_9101_q6-pt"].meta
    assert "às segundas-feiras" in es1.options[es1.answer]  # latin-1 exam file decoded


def test_enem_filters_and_foreign_language_argument(tmp_path):
    d = FIX / "enem" / "exams"
    assert {it.language for it in load("enem", path=d, language="en")} == {"en"}
    assert len(load("enem", path=d, area="LC")) == 6
    with pytest.raises(DatasetError) as e:
        load("enem", path=d, area="MT")
    assert e.value.field == "area"
    # a booklet CSV with only the Spanish items: the argument says which
    src = (d / "pt_ENEM_2022_LC_CO_PROVA_9101.csv").read_bytes().decode("latin-1").splitlines()
    p = tmp_path / "ENEM_2022_LC_CO_PROVA_9101.csv"
    p.write_text("\n".join([src[0], src[3], src[4]]) + "\n", encoding="utf-8")
    items = load("enem", path=p, item_params=FIX / "enem" / "ITENS_PROVA_2022.csv", foreign_language="es")
    assert [it.meta["co_item"] for it in items] == [600101, 600102] and items[0].language == "pt"


def test_enem_bluex_json():
    items = load("enem", path=FIX / "enem" / "bluex_small.json")
    assert [it.answer_letter for it in items] == ["C", "C", "D"]  # lowercase labels
    assert items[0].options == ("15", "20", "30", "40", "50")  # clean `options` preferred to `alternatives`
    assert items[2].options == ("18", "20", "24", "32", "64")  # "A) 18" prefixes dropped
    assert items[1].has_image and items[1].stem.startswith("Um terreno") and items[1].meta["IU"] is True
    assert items[0].subject == "mathematics" and items[0].meta["area"] == "MT" and items[0].meta["MR"] is True
    assert items[0].exam == "ENEM_2022_MT" and items[0].year == 2022


def test_enem_2024_style_jsonl():
    items = load("enem", path=FIX / "enem" / "enem2023_small.jsonl")
    assert items.ids == ["ENEM_2023_questao_91-pt", "ENEM_2023_questao_92-pt", "ENEM_2023_questao_93-pt"]
    fig = items[1]
    assert fig.has_image and fig.stem.startswith("Descrição do gráfico:") and "[[placeholder]]" not in fig.stem
    assert fig.meta["ledor"] is True and fig.subject == "natural sciences"
    assert items[2].answer is None and items[2].meta["annulled"]


def test_enem_area_layout():
    assert [area_of(2022, n) for n in (1, 46, 91, 136)] == ["LC", "CH", "CN", "MT"]
    assert [area_of(2015, n) for n in (1, 46, 91, 136)] == ["CH", "CN", "LC", "MT"]
    assert area_of(2005, 10) is None


def test_itens_prova_latin1_and_no_tp_lingua(tmp_path):
    df = read_itens_prova(FIX / "enem" / "ITENS_PROVA_2022.csv")
    assert len(df) == 10 and df["TX_MOTIVO_ABAN"].iloc[2] == "Exclusão pedagógica"
    assert len(load_item_params(FIX / "enem" / "ITENS_PROVA_2022.csv", co_prova=9101)) == 6
    assert len(load("enem_params", path=FIX / "enem" / "ITENS_PROVA_2022.csv", co_prova=9102)) == 4
    p = tmp_path / "ITENS_PROVA_2009.csv"  # the 2009 layout: no TP_LINGUA
    p.write_text("CO_POSICAO;SG_AREA;CO_ITEM;TX_GABARITO;IN_ITEM_ABAN;NU_PARAM_A;NU_PARAM_B;NU_PARAM_C;CO_PROVA\n"
                 "91;CN;1;A;0;1.0;0.0;0.2;51\n")
    assert read_itens_prova(p)["TP_LINGUA"].isna().all()


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
    assert [it.n_options for it in uned] == [3, 4, 4]  # the empty D arrives as None


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


@needs_shared
@pytest.mark.parametrize("co_prova,area,year", [(1211, "MT", 2023), (1201, "LC", 2023), (1055, "CH", 2022)])
def test_shared_golden_item_params_attach(tmp_path, co_prova, area, year):
    """A synthetic exam CSV for a real booklet (placeholder texts, INEP's keys) picks up INEP's parameters."""
    params = read_itens_prova(SHARED / "reference" / "enem_golden_items.csv")
    rows = params[params["CO_PROVA"] == co_prova].sort_values(["CO_POSICAO", "TP_LINGUA"])
    p = tmp_path / f"pt_ENEM_{year}_{area}_CO_PROVA_{co_prova}.csv"
    with p.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["question", "body", "A", "B", "C", "D", "E", "year", "question_number", "test", "answer", "language"])
        # English items first, then Spanish (booklet order), then the common ones
        for _, r in rows.sort_values(["TP_LINGUA", "CO_POSICAO"], na_position="last").iterrows():
            key = "anulada" if r["TX_GABARITO"] not in "ABCDE" else r["TX_GABARITO"]
            w.writerow([f"Q{r['CO_POSICAO']}", f"Item de teste {r['CO_POSICAO']}", "a", "b", "c", "d", "e", year,
                        r["CO_POSICAO"], area, key, "portuguese"])
    items = load("enem", path=p, item_params=SHARED / "reference" / "enem_golden_items.csv")
    assert len(items) == len(rows)
    by_item = {it.meta["co_item"]: it for it in items}
    for _, r in rows.iterrows():
        it = by_item[r["CO_ITEM"]]
        if r["IN_ITEM_ABAN"] == 1:
            assert it.irt is None and it.answer is None and it.meta["annulled"]
        else:
            assert it.irt == pytest.approx((r["NU_PARAM_A"], r["NU_PARAM_B"], r["NU_PARAM_C"]))
