"""ENEM loader: exam CSVs with INEP item parameters, foreign-language items, BLUEX/2024-style JSON, ITENS_PROVA
reading, and the golden booklets of ../shared/reference when that directory is present."""
import csv

import pytest
from paths import FIXTURES, SHARED

from mcqa_toolkit.datasets import load
from mcqa_toolkit.enem.itens_prova import load_item_params, read_itens_prova
from mcqa_toolkit.enem.positions import area_of
from mcqa_toolkit.items import DatasetError

FIX = FIXTURES
needs_shared = pytest.mark.skipif(not (SHARED / "reference").is_dir(),
                                  reason="real-format samples live in ../shared (beside the repo in CI)")

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


@needs_shared
@pytest.mark.parametrize("co_prova,area,year", [(1211, "MT", 2023), (1201, "LC", 2023), (1055, "CH", 2022)])
def test_shared_golden_item_params_attach(tmp_path, co_prova, area, year):
    """A synthetic exam CSV for a real booklet (placeholder texts, INEP's keys) picks up INEP's parameters."""
    params = read_itens_prova(SHARED / "reference" / "enem_golden_items.csv")
    rows = params[params["CO_PROVA"] == co_prova].sort_values(["CO_POSICAO", "TP_LINGUA"])
    p = tmp_path / f"pt_ENEM_{year}_{area}_CO_PROVA_{co_prova}.csv"
    with p.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["question", "body", "A", "B", "C", "D", "E", "year", "question_number", "test", "answer",
                    "language"])
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
