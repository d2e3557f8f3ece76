"""The ENEM+IRT paper's released response patterns. The fixture (tests/fixtures/irt_llms/) is synthetic: ten rows in
the release's layout with our own letters, two invented booklets (9016 CN, 9096 LC), an annulled question (key V) whose
pattern bit varies as in the real file, unread answers (X) and a pattern starting with zeros. The real 2021 file is
read only when ../shared is present."""
import numpy as np
import pandas as pd
import pytest
from paths import FIXTURES, SHARED

from mcqa_toolkit.interop.irt_llms import read_response_patterns
from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.measure.dif import dif_persons

SAMPLE = FIXTURES / "irt_llms" / "response_patterns_sample.csv"
REAL = SHARED / "formats" / "irt_llms_response_patterns_2021.csv"


def test_patterns_keep_leading_zeros_and_records_follow_the_letters():
    res = read_response_patterns(SAMPLE)
    p, r = res.patterns, res.records
    assert len(p) == 10 and len(r) == 10 * 45 and res.to_frame().equals(r)
    assert p["pattern"].iloc[0].startswith("000") and p["pattern"].str.len().eq(45).all()
    assert sorted(p["model"].unique()) == ["apimodel", "tinylm-1b"] and set(p["language"]) == {"pt", "en"}
    assert list(p["shuffle"].iloc[:4]) == [0, 1, 0, 1] and list(p["line"].iloc[:2]) == [2, 3]
    first = r.iloc[0]
    assert (first["item_id"], first["parallel_id"], first["position"]) == ("ENEM_2021_CN_9016_q91-pt",
                                                                          "ENEM_2021_CN_9016_q91", 1)
    lc = r[r["exam"] == "ENEM_2021_LC_9096"]
    assert lc["parallel_id"].iloc[0] == "ENEM_2021_LC_9096_q1_es" and lc["item_id"].iloc[0].endswith("_es-es")
    assert lc["parallel_id"].iloc[5] == "ENEM_2021_LC_9096_q6"
    # every bit of a keyed question is the letters' verdict; the annulled one (key V) is left out with answer -1
    annulled = r["parallel_id"] == "ENEM_2021_CN_9016_q100"
    assert (r.loc[annulled, "answer"] == -1).all() and not r.loc[annulled, "correct"].any()
    bits = np.array([list(s) for s in p["pattern"]]).ravel() == "1"
    np.testing.assert_array_equal(r["correct"].to_numpy()[~annulled.to_numpy()], bits[~annulled.to_numpy()])
    assert set(r.loc[r["choice"] < 0, "status"]) == {"unanswered"}
    assert (r["correct"] == (r["status"] == "correct")).all()


def test_persons_across_languages_from_the_release():
    rec = read_response_patterns(SAMPLE).records
    persons = dif_persons(rec[rec["exam"] == "ENEM_2021_CN_9016"], focal="en", reference="pt")
    assert persons.responses.shape == (6, 44)          # 3 patterns per language, 45 questions less the annulled one
    assert list(persons.group) == ["en", "pt", "en", "en", "pt", "pt"]
    assert set(persons.block) == {"apimodel / few-shot", "tinylm-1b / few-shot"}


def _write(tmp_path, edit):
    df = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False)
    edit(df)
    path = tmp_path / "patterns.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("row, field, value, text", [
    (3, "RESPONSE_PATTERN", "2" * 45, "0s and 1s"),
    (1, "RESPONSE_PATTERN", "1" * 45, "disagrees"),
    (0, "TX_RESPOSTAS", "A" * 44, "one letter per item"),
    (2, "EXAM_YEAR", "20x1", "whole number"),
    (6, "EXAM_SUBJECT", "XX", "ENEM area"),
    (9, "LANGUAGE", "klingon", "not one of ENEM's languages"),
    (None, "SEED", None, "missing column"),
])
def test_errors_name_file_line_and_field(tmp_path, row, field, value, text):
    def edit(df):
        if row is None:
            df.pop(field)
        else:
            df.loc[row, field] = value
    path = _write(tmp_path, edit)
    with pytest.raises(DatasetError, match=text) as err:
        read_response_patterns(path)
    line = 1 if row is None else row + 2           # the header is line 1
    assert (err.value.path, err.value.record, err.value.field) == (str(path), line, field)


def test_a_pattern_longer_than_the_area_is_refused(tmp_path):
    def longer(d):
        for col in ("RESPONSE_PATTERN", "TX_RESPOSTAS", "TX_GABARITO"):
            d.loc[4, col] = d.loc[4, col] + d.loc[4, col][:5]
    with pytest.raises(DatasetError, match="more items than the area"):
        read_response_patterns(_write(tmp_path, longer))


@pytest.mark.skipif(not REAL.exists(), reason="../shared (the real 2021 release) is not beside the checkout")
def test_real_2021_release_reads_whole():
    res = read_response_patterns(REAL)
    p, r = res.patterns, res.records
    assert len(p) == 1200 and len(r) == 1200 * 45
    assert (p["ctt_score"] == p["pattern"].str.count("1")).all()
    assert p.groupby(["model", "area", "language"]).size().to_dict()[("gpt-3.5-turbo-0613", "MT", "en")] == 30
    annulled = p.loc[p["area"] == "MT", "pattern"].str[42]
    assert (annulled == "1").sum() == 80 and (r.loc[r["parallel_id"] == "ENEM_2021_MT_906_q178", "answer"] == -1).all()
