"""ENEM question files as researchers find them: BLUEX-style records whose text sits in `context` only, and local
copies of the three Hugging Face releases (maritaca-ai/enem, eduagarcia/enem_challenge,
portuguese-benchmark-datasets/BLUEX) in their published layouts, with INEP parameters where they can attach.

Fixture records (tests/fixtures/enem/hub) follow each release's schema with our own wording; the tests write
them into the published file layout (JSONL per edition, Parquet under data/ or <config>/train/)."""
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from paths import FIXTURES

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.common import UnusableRecordsWarning
from mcqa_toolkit.datasets.enem import HUB_LAYOUTS
from mcqa_toolkit.items import DatasetError

HUB = FIXTURES / "enem" / "hub"
PARAMS_2022 = FIXTURES / "enem" / "ITENS_PROVA_2022.csv"


def write_parquet(rows, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


# ---- BLUEX-style JSON (the real ENEM 2022 file's shape) ----------------------------------------------------------

def test_bluex_style_questions_whose_text_is_in_context_load():
    items = load("enem", path=HUB / "bluex_style_2022.json")
    assert [it.meta["number"] for it in items] == [108, 109, 140]
    both, context_only, question_inside = items
    assert both.stem.startswith("Na semana passada") and both.stem.endswith("teve como objetivo")
    assert "\n\n" in both.stem                                            # context, then the question
    assert context_only.stem.startswith("Uma turma mediu") and context_only.answer_letter == "E"
    assert question_inside.stem == "Três amigos dividiram igualmente uma conta de 45 reais. O valor pago pela " \
                                   "conta, em reais, foi"                  # not repeated
    assert context_only.meta["area"] == "CN" and question_inside.meta["area"] == "MT"


def test_an_option_empty_in_options_is_taken_from_alternatives(tmp_path):
    records = json.loads((HUB / "bluex_style_2022.json").read_text(encoding="utf-8"))
    records[0]["options"][3] = ""
    (tmp_path / "x.json").write_text(json.dumps(records), encoding="utf-8")
    assert load("enem", path=tmp_path / "x.json")[0].options[3] == "reunir famílias."
    records[0]["alternatives"][3] = ""
    (tmp_path / "x.json").write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(DatasetError) as e:                                # no text in either: unusable
        load("enem", path=tmp_path / "x.json", strict=True)
    assert (e.value.record, e.value.field) == (1, "options[3]")
    with pytest.warns(UnusableRecordsWarning, match=r"record 1 .*field 'options\[3\]'"):
        assert len(load("enem", path=tmp_path / "x.json")) == len(records) - 1


@pytest.mark.parametrize("context", ["", "   ", None])
def test_a_question_with_no_text_anywhere_is_left_out(tmp_path, context):
    """No text in `question` nor in `context`: the record cannot be administered; it is left out with one warning
    naming it (record, id, field), counted on the ItemSet, and refused with strict=True."""
    records = json.loads((HUB / "bluex_style_2022.json").read_text(encoding="utf-8"))
    records[2]["question"] = ""
    if context is None:
        del records[2]["context"]
    else:
        records[2]["context"] = context
    (tmp_path / "x.json").write_text(json.dumps(records), encoding="utf-8")
    with pytest.warns(UnusableRecordsWarning, match=r"1 record\(s\) left out .*record 3 \(ENEM_2022_\d+\): field "
                                                    r"'question': no question text") as caught:
        items = load("enem", path=tmp_path / "x.json")
    assert len(caught) == 1 and len(items) == len(records) - 1
    assert [(r.record, r.field) for r in items.skipped] == [(3, "question")]
    with pytest.raises(DatasetError) as e:
        load("enem", path=tmp_path / "x.json", strict=True)
    assert (e.value.record, e.value.field) == (3, "question") and "no question text" in e.value.message


# ---- maritaca-ai/enem ---------------------------------------------------------------------------------------------

def _maritaca(root):
    root.mkdir()
    for year in (2022, 2024):
        shutil.copy(HUB / f"maritaca_{year}.jsonl", root / f"{year}.jsonl")
    (root / "README.md").write_text("card", encoding="utf-8")
    return root


def test_maritaca_jsonl_per_edition(tmp_path):
    items = load("enem", path=_maritaca(tmp_path / "maritaca-ai--enem"))
    assert items.ids == ["ENEM_2022_questao_91-pt", "ENEM_2022_questao_92-pt", "ENEM_2022_questao_93-pt",
                         "ENEM_2024_questao_136-pt", "ENEM_2024_questao_137-pt"]
    fig = items["ENEM_2022_questao_92-pt"]
    assert fig.stem.startswith("Descrição do gráfico") and fig.has_image and fig.meta["IU"] is True
    assert items["ENEM_2024_questao_137-pt"].answer is None and items["ENEM_2024_questao_136-pt"].meta["area"] == "MT"


def test_maritaca_parquet_conversion(tmp_path):
    rows = [json.loads(line) for line in (HUB / "maritaca_2024.jsonl").read_text(encoding="utf-8").splitlines()]
    write_parquet(rows, tmp_path / "conv" / "2024" / "train" / "0000.parquet")
    items = load("enem", path=tmp_path / "conv")
    assert [it.answer_letter for it in items] == ["B", None] and items[0].year == 2024


def test_maritaca_gets_inep_parameters_for_the_booklet_it_follows(tmp_path):
    root = _maritaca(tmp_path / "m")
    (root / "2024.jsonl").unlink()
    items = load("enem", path=root, item_params=PARAMS_2022, co_prova={"CN": 9102})
    q91, q92, q93 = items
    assert q91.irt == (1.8, 0.5, 0.15) and q91.meta["co_item"] == 500091 and q92.irt == (2.2, 1.1, 0.2)
    assert q93.irt is None and q93.meta["annulled"] and q93.meta["answer_before_annulment"] == "C"
    with pytest.raises(DatasetError, match="item_params need the booklet code"):        # which booklet? say so
        load("enem", path=root, item_params=PARAMS_2022)
    with pytest.raises(DatasetError, match="no rows .* for booklet 9101, area CN"):      # another booklet
        load("enem", path=root, item_params=PARAMS_2022, co_prova=9101)


# ---- eduagarcia/enem_challenge --------------------------------------------------------------------------------------

def test_enem_challenge_parquet(tmp_path):
    rows = json.loads((HUB / "enem_challenge_rows.json").read_text(encoding="utf-8"))
    write_parquet(rows, tmp_path / "enem_challenge" / "data" / "train-00000-of-00001.parquet")
    items = load("enem", path=tmp_path / "enem_challenge")
    assert items.ids == ["ENEM_2016_12-pt", "ENEM_2016_140-pt", "ENEM_2016_141-pt", "ENEM_2022_91-pt"]
    assert [it.meta["area"] for it in items] == ["CH", "MT", "MT", "CN"]
    assert items[0].options[1] == "Inglaterra" and items[0].answer_letter == "B"
    assert items[2].answer is None and items[2].meta["annulled"]
    got = load("enem", path=tmp_path / "enem_challenge", item_params=PARAMS_2022, co_prova={"CN": 9102},
               area="CN")
    assert len(got) == 1 and got[0].irt == (1.8, 0.5, 0.15)


# ---- portuguese-benchmark-datasets/BLUEX ---------------------------------------------------------------------------

def test_bluex_parquet_is_unicamp_and_usp_not_enem(tmp_path):
    rows = json.loads((HUB / "bluex_rows.json").read_text(encoding="utf-8"))
    write_parquet(rows, tmp_path / "BLUEX" / "data" / "questions-00000-of-00001.parquet")
    items = load("enem", path=tmp_path / "BLUEX")
    assert items.ids == ["UNICAMP_2018_1-pt", "USP_2019_5-pt"] and {it.source for it in items} == {"bluex"}
    first, second = items
    assert first.options[2] == "São Paulo" and first.answer_letter == "C" and first.meta["area"] is None
    assert first.exam == "UNICAMP_2018" and first.subject == "geografia"
    assert second.has_image and second.meta["n_associated_images"] == 1 and "associated_images" not in second.meta
    with_params = load("enem", path=tmp_path / "BLUEX", item_params=PARAMS_2022, co_prova=9102)
    assert [it.irt for it in with_params] == [None, None]                # no INEP row exists for these exams


def test_the_layouts_are_documented():
    assert set(HUB_LAYOUTS) == {"maritaca-ai/enem", "eduagarcia/enem_challenge", "portuguese-benchmark-datasets/BLUEX"}
