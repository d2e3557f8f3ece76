"""measure.dif.persons: persons of language models built from records, matched on parallel_id."""
import pytest
from builders import records

from mcqa_toolkit.measure import dif_persons, mantel_haenszel


def _language_records():
    """Two models x two languages x 3 shuffles on items q1-q4 (parallel ids p1-p4); q5 exists in English only."""
    rows = []
    for model in ("m1", "m2"):
        for lang in ("en", "pt"):
            for s in range(3):
                for k in range(1, 5 + (lang == "en")):
                    right = (k + s + (model == "m2") + (lang == "pt")) % 3 != 0
                    rows.append({"item_id": f"q{k}-{lang}", "parallel_id": f"p{k}", "model": model, "language": lang,
                                 "shuffle": s, "choice": 0 if right else 1})
    return records(rows)


def test_persons_are_shuffles_matched_on_parallel_id():
    p = dif_persons(_language_records(), focal="pt", reference="en")
    assert p.responses.shape == (12, 4) and list(p.responses.columns) == ["p1", "p2", "p3", "p4"]
    assert p.dropped == ("p5",)                                  # asked in English only
    assert list(p.persons.columns) == ["model", "strategy", "language", "shuffle"]
    assert (p.group == p.persons["language"]).all() and set(p.block) == {"m1 / S1", "m2 / S1"}
    assert p.to_frame().shape == (12, 8)
    row = p.to_frame().query("model == 'm1' and language == 'pt' and shuffle == 0").iloc[0]
    assert [row[f"p{k}"] for k in range(1, 5)] == [1, 0, 1, 1]   # right when (k + 0 + 0 + 1) % 3 != 0


def test_persons_by_majority_and_errors():
    rec = _language_records()
    p = dif_persons(rec, focal="pt", reference="en", rule="majority")
    assert p.responses.shape == (4, 4) and "shuffle" not in p.persons
    with pytest.raises(ValueError, match="no record with language"):
        dif_persons(rec, focal="es", reference="en")
    with pytest.raises(ValueError, match="empty parallel_id"):
        dif_persons(rec.assign(parallel_id=""), focal="pt", reference="en")
    with pytest.raises(ValueError, match="rule"):
        dif_persons(rec, focal="pt", reference="en", rule="mean")
    with pytest.raises(ValueError, match="at least 20 persons per group"):
        mantel_haenszel(p.responses, p.group, "pt", "en", within=p.block)
