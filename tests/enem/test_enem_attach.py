"""enem.attach.ItemParams on items whose metadata lacks a field the attachment needs."""
import pytest
from paths import FIXTURES

from mcqa_toolkit.enem.attach import ItemParams
from mcqa_toolkit.items import DatasetError, Item

GOLDEN = FIXTURES / "enem" / "ITENS_PROVA_golden.csv"


def _item(**meta):
    return Item("x", "enem", "ENEM", "stem", ("a", "b", "c", "d", "e"), 0, year=2023, meta=meta)


def test_an_item_without_its_area_is_a_dataset_error_naming_the_field():
    with pytest.raises(DatasetError, match="area") as e:
        ItemParams(GOLDEN).attach_all([(1, _item(co_prova=1201, number=1))], "f.jsonl")
    assert e.value.field == "area"


def test_an_item_without_its_number_is_a_dataset_error_in_a_within_area_numbered_file():
    with pytest.raises(DatasetError, match="position None"):
        ItemParams(FIXTURES / "enem" / "ITENS_PROVA_2017.csv").attach_all(
            [(1, _item(co_prova=_first_booklet(FIXTURES / "enem" / "ITENS_PROVA_2017.csv"), area="MT"))], "f.jsonl")


def _first_booklet(path):
    p = ItemParams(path)
    return min(co for co in p.booklets if (p.df.loc[p.df["CO_PROVA"] == co, "SG_AREA"] == "MT").any())
