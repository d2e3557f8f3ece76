"""INEP's item files as published (enem.itens_prova.read_itens_prova): the 2009 shape, whose file has no TP_LINGUA
column and lists an item annulled before it got a code with an empty CO_ITEM (key X, reason "Pedagógico").

Fixture: ITENS_PROVA_2009.csv, one MT booklet in INEP's 2009 columns (latin-1, CRLF), numbers of our own; the row
at position 150 is the annulled one. The code before this test refused it: "field 'CO_ITEM': not an integer: ''"."""
import numpy as np
import pytest
from paths import FIXTURES

from mcqa_toolkit import enem
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.items import DatasetError

Y2009 = FIXTURES / "enem" / "ITENS_PROVA_2009.csv"
pytestmark = pytest.mark.filterwarnings("ignore::mcqa_toolkit.enem.reproducibility.EnemNotValidatedWarning")


def test_the_2009_shape_reads_with_the_uncoded_row_annulled():
    rows = read_itens_prova(Y2009)
    assert len(rows) == 45 and rows["NU_ANO"].unique().tolist() == [2009]
    assert str(rows["CO_ITEM"].dtype) == "Int64" and rows["TP_LINGUA"].isna().all()
    uncoded = rows[rows["CO_ITEM"].isna()]
    assert uncoded["CO_POSICAO"].tolist() == [150] and uncoded["IN_ITEM_ABAN"].tolist() == [1]
    assert uncoded["TX_GABARITO"].tolist() == ["X"] and uncoded["TX_MOTIVO_ABAN"].tolist() == ["Pedagógico"]
    assert np.isnan(uncoded[["NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]].to_numpy()).all()
    assert rows["CO_ITEM"].dropna().is_unique and (rows["ERRATUM"] == "").all()
    got = enem.score_answers("A" * 45, rows, "MT")           # the annulled item leaves the likelihood
    assert got.n_scored == 44 and 0 < got.score < 1000
    assert read_itens_prova(Y2009, errata=False)["CO_ITEM"].isna().sum() == 1


def test_an_uncoded_row_is_annulled_whatever_its_flag_but_a_scored_one_needs_its_code(tmp_path):
    text = Y2009.read_text(encoding="latin-1")
    unflagged = tmp_path / "ITENS_PROVA_2009.csv"               # flag 0, key X, no parameters: annulled all the same
    unflagged.write_text(text.replace("150;MT;;X;;1;", "150;MT;;X;;0;"), encoding="latin-1")
    assert read_itens_prova(unflagged).set_index("CO_POSICAO").loc[150, "IN_ITEM_ABAN"] == 1
    scored = tmp_path / "scored.csv"                             # a complete scored row without its code
    row_151 = next(line for line in text.splitlines() if line.startswith("151;"))
    scored.write_text(text.replace(row_151, row_151.replace(f";{row_151.split(';')[2]};", ";;", 1)), encoding="latin-1")
    with pytest.raises(DatasetError, match="empty item code on a row that is not annulled") as e:
        read_itens_prova(scored)
    assert (e.value.record, e.value.field) == (16, "CO_ITEM")
    letters = tmp_path / "letters.csv"
    letters.write_text(text.replace(row_151, row_151.replace(f";{row_151.split(';')[2]};", ";9x;", 1)),
                       encoding="latin-1")
    with pytest.raises(DatasetError, match="not an integer: '9x'"):
        read_itens_prova(letters)
