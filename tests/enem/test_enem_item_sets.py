"""Booklet codes with two item sets (INEP 2013 booklets 187-190, 2020 LC 691-694), on constructed booklets:
set 1 = a golden booklet (INEP's real parameters, so its golden cases are an independent reference), set 2 =
the same positions with other keys and parameters. Both sets must be resolved and recorded."""
import numpy as np
import pandas as pd
import pytest
from test_enem_official import CASES, ITEMS, ITEMS_CSV, write_microdata

from mcqa_toolkit import enem
from mcqa_toolkit.datasets import load
from mcqa_toolkit.enem.itens_prova import read_itens_prova, split_item_sets
from mcqa_toolkit.enem.simulate import itens_prova_layout
from mcqa_toolkit.items import DatasetError

# constructed booklets in files without a year: "not validated against INEP" is expected (see
# test_enem_reproducibility.py)
pytestmark = pytest.mark.filterwarnings("ignore::mcqa_toolkit.enem.reproducibility.EnemNotValidatedWarning")

ROTATE = str.maketrans("ABCDE", "CDEAB")
MT = CASES[0]                       # 2023 MT booklet 1211: INEP's score 363.2, theta -1.05507
LC = CASES[6]                       # 2023 LC booklet 1201, Spanish: 452.8


def other_set(rows, same_keys=False):
    """Set 2: the same positions, new items (keys rotated unless same_keys, b + 0.4, a * 0.9, one more annulled)."""
    s2 = rows.assign(CO_ITEM=rows["CO_ITEM"] + 900_000, NU_PARAM_A=rows["NU_PARAM_A"] * 0.9,
                     NU_PARAM_B=rows["NU_PARAM_B"] + 0.4)
    if not same_keys:
        s2["TX_GABARITO"] = s2["TX_GABARITO"].str.translate(ROTATE)
    first = s2.index[s2["IN_ITEM_ABAN"] == 0][0]
    s2.loc[first, ["IN_ITEM_ABAN", "NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]] = [1, np.nan, np.nan, np.nan]
    return s2


def two_sets(co_src, co_new, interleave=False, shared=(), same_keys=False):
    """(whole booklet as ITENS_PROVA rows in file order, set 1, set 2); positions in `shared` are listed once."""
    s1 = ITEMS[ITEMS["CO_PROVA"] == co_src].assign(CO_PROVA=co_new)
    s2 = other_set(s1, same_keys)
    s2 = pd.concat([s2[~s2["CO_POSICAO"].isin(shared)], s1[s1["CO_POSICAO"].isin(shared)]]).loc[s1.index]
    listed = pd.concat([s1, s2[~s2["CO_POSICAO"].isin(shared)]])
    if interleave:
        listed = listed.sort_values(["CO_POSICAO"], kind="stable")
    return listed.reset_index(drop=True), s1, s2


def key_string(rows):
    df = rows.assign(_L=rows["TP_LINGUA"].fillna(9)).sort_values(["_L", "CO_POSICAO"], kind="stable")
    return "".join(df["TX_GABARITO"])


def write_itens_prova(path, rows):
    itens_prova_layout(rows).to_csv(path, sep=";", index=False, encoding="latin-1")


# ---- splitting ITENS_PROVA rows into item sets -----------------------------------------------------------------

@pytest.mark.parametrize("interleave", [False, True])
def test_split_item_sets_by_file_order_with_shared_positions(interleave):
    rows, s1, s2 = two_sets(1211, 9187, interleave=interleave, shared=(136, 137))
    assert len(rows) == 45 + 43
    got = split_item_sets(rows)
    assert len(got) == 2
    for mine, want in zip(got, (s1, s2), strict=True):
        mine = mine.sort_values("CO_POSICAO")
        assert mine["CO_ITEM"].tolist() == want.sort_values("CO_POSICAO")["CO_ITEM"].tolist()
    assert split_item_sets(s1)[0] is s1                         # one set: the rows themselves
    with pytest.raises(ValueError, match=r"booklet 9187: position CO_POSICAO \d+ is listed 2 times where other "
                                         "positions are listed once or 3 times"):
        split_item_sets(pd.concat([rows, rows[rows["CO_POSICAO"] == 140].iloc[:1]]))


# ---- one answer string -----------------------------------------------------------------------------------------

def test_score_answers_resolves_each_set_by_key_or_choice():
    rows, s1, s2 = two_sets(1211, 9187)
    k1, k2 = key_string(s1), key_string(s2)
    by_key = enem.score_answers(MT["answers"], rows, "MT", key=k1)
    assert by_key.item_set == 1 and by_key.score == pytest.approx(MT["score"], abs=0.05)   # INEP's own score
    assert by_key.theta == pytest.approx(MT["theta"], abs=1e-4)
    alone = enem.score_answers(MT["answers"], s2, "MT")          # set 2 scored as an ordinary booklet
    for how in ({"key": k2}, {"item_set": 2}, {"item_set": 2, "key": k2.lower()}):
        got = enem.score_answers(MT["answers"], rows, "MT", **how)
        assert got.item_set == 2 and (got.theta, got.score, got.n_scored) == (alone.theta, alone.score, 42)
    given = enem.score_answers(MT["answers"], rows, "MT", item_set=1)
    assert (given.theta, given.score, given.item_set, given.item_set_rule) == (by_key.theta, by_key.score, 1, "given")
    assert by_key.item_set_rule == "key" and alone.item_set_rule == "single" and alone.score != by_key.score
    assert by_key.alternatives == () == given.alternatives


@pytest.mark.parametrize("kwargs,match", [
    ({"key": "A" * 45}, "TX_GABARITO|agrees with none of its 2 item sets"),
    ({"key": "A" * 44}, "key: answer string has 44 characters"),
    ({"item_set": 3}, "item_set = 3: booklet 9187 has 2 item set"),
    ({"item_set": 2, "key": "KEY1"}, "booklet 9187: the key says"),
])
def test_score_answers_refuses_what_it_cannot_tell(kwargs, match):
    rows, s1, _ = two_sets(1211, 9187)
    if kwargs.get("key") == "KEY1":
        kwargs = {**kwargs, "key": key_string(s1)}
    with pytest.raises(ValueError, match=match):
        enem.score_answers(MT["answers"], rows, "MT", **kwargs)


def test_without_a_key_set_1_is_returned_and_set_2_is_its_alternative():
    """Nothing tells the sets apart: never a raise (a batch over many candidates must not stop); set 1's score,
    item_set_rule "undetermined", and set 2's full score in `alternatives`."""
    rows, s1, s2 = two_sets(1211, 9187)
    got = enem.score_answers(MT["answers"], rows, "MT")
    assert (got.item_set, got.item_set_rule) == (1, "undetermined")
    assert got.score == pytest.approx(MT["score"], abs=0.05) and got.theta == pytest.approx(MT["theta"], abs=1e-4)
    (other,) = got.alternatives
    alone = enem.score_answers(MT["answers"], s2, "MT")
    assert (other.item_set, other.item_set_rule, other.alternatives) == (2, "undetermined", ())
    assert (other.theta, other.score, other.n_scored) == (alone.theta, alone.score, 42)
    assert got.to_frame()[["item_set", "score"]].values.tolist() == [[1, got.score], [2, other.score]]


def test_identical_keys_cannot_tell_the_sets_apart():
    rows, s1, _ = two_sets(1211, 9187, same_keys=True)
    got = enem.score_answers(MT["answers"], rows, "MT", key=key_string(s1))
    assert got.item_set_rule == "undetermined" and [a.item_set for a in got.alternatives] == [2]
    assert enem.score_answers(MT["answers"], rows, "MT", key=key_string(s1), item_set=1).score == MT["score"]


def test_a_batch_over_two_set_booklets_never_stops():
    """Many candidates of the two-set code, some with a key, some without: every one gets a score."""
    rows, s1, s2 = two_sets(1211, 9187)
    keys = [key_string(s1), None, key_string(s2), None]
    got = [enem.score_answers(MT["answers"], rows, "MT", key=k) for k in keys]
    assert [(g.item_set, g.item_set_rule) for g in got] == [(1, "key"), (1, "undetermined"), (2, "key"),
                                                           (1, "undetermined")]


# ---- microdata -------------------------------------------------------------------------------------------------

def _microdata(tmp_path, rows, s1, s2, area, answers, extra=()):
    """Candidates of set 1 (NU_NOTA from INEP's golden case), set 2 and `extra` (dicts)."""
    write_itens_prova(tmp_path / "ITENS_PROVA.csv", rows)
    co = int(rows["CO_PROVA"].iloc[0])
    lang = {"TP_LINGUA": LC["tp_lingua"]} if area == "LC" else {}
    s2_score = enem.score_answers(answers, s2, area, lang.get("TP_LINGUA")).score
    base = {f"TP_PRESENCA_{area}": 1, f"CO_PROVA_{area}": co, f"TX_RESPOSTAS_{area}": answers, **lang}
    cands = [base | {f"NU_NOTA_{area}": CASES[0 if area == "MT" else 6]["score"],
                     f"TX_GABARITO_{area}": key_string(s1)},
             base | {f"NU_NOTA_{area}": s2_score, f"TX_GABARITO_{area}": key_string(s2)}, *extra]
    cands = [c | {"NU_INSCRICAO": i} for i, c in enumerate(cands * 2)]
    path = tmp_path / "MICRODADOS.csv"
    write_microdata(path, cands, area)
    return path, tmp_path / "ITENS_PROVA.csv", co


@pytest.mark.parametrize("area,co_src,answers", [("MT", 1211, MT["answers"]), ("LC", 1201, LC["answers"])])
def test_score_microdata_resolves_both_sets_by_tx_gabarito(tmp_path, area, co_src, answers):
    rows, s1, s2 = two_sets(co_src, 9190 if area == "MT" else 9691, interleave=area == "LC")
    undetermined = {f"TP_PRESENCA_{area}": 1, f"CO_PROVA_{area}": int(rows["CO_PROVA"].iloc[0]),
                    f"TX_RESPOSTAS_{area}": answers, f"TX_GABARITO_{area}": "",
                    **({"TP_LINGUA": LC["tp_lingua"]} if area == "LC" else {})}
    path, items, co = _microdata(tmp_path, rows, s1, s2, area, answers, extra=[undetermined])
    out = enem.score_microdata(path, items, area, chunksize=2)
    resolved = out[out["item_set_rule"] == "key"]
    assert resolved.index.tolist() == [0, 1, 3, 4] and resolved["item_set"].tolist() == [1, 2, 1, 2]
    np.testing.assert_allclose(resolved["score"], resolved["NU_NOTA"], atol=0.05)
    assert resolved["theta"].iloc[0] == pytest.approx(CASES[0 if area == "MT" else 6]["theta"], abs=1e-4)
    both = out[out["item_set_rule"] == "undetermined"]          # no key: scored under each set, and said so
    assert both.index.tolist() == [2, 2, 5, 5] and both["item_set"].tolist() == [1, 2, 1, 2]
    assert both["score"].tolist() == [resolved["score"].iloc[0], resolved["score"].iloc[1]] * 2
    with pytest.raises(ValueError, match=f"booklet {co}: TX_GABARITO_{area} says"):   # rows 1, 4: set 2's key
        enem.score_microdata(path, items, area, item_set={co: 1}, chunksize=1)
    chunks = list(enem.iter_microdata(path, items, [area], chunksize=6, item_set=1, strict=False))
    assert [c.n_rows for c in chunks] == [6]
    forced, problems = chunks[0].scores, chunks[0].problems
    assert set(forced["item_set_rule"]) == {"given"} and sorted(forced.index) == [0, 2, 3, 5]
    assert problems[["problem", "n_rows", "first_row"]].values.tolist() == [["key mismatch", 2, 1]]


def test_single_set_booklets_say_so(tmp_path):
    rows = ITEMS[ITEMS["CO_PROVA"] == 1211]
    write_microdata(tmp_path / "m.csv", [{"NU_INSCRICAO": 0, "TP_PRESENCA_MT": 1, "CO_PROVA_MT": 1211,
                                          "NU_NOTA_MT": MT["score"], "TX_RESPOSTAS_MT": MT["answers"],
                                          "TX_GABARITO_MT": key_string(rows)}], "MT")
    out = enem.score_microdata(tmp_path / "m.csv", ITEMS_CSV, "MT")
    assert out[["item_set", "item_set_rule"]].values.tolist() == [[1, "single"]]
    assert enem.score_answers(MT["answers"], rows, "MT").item_set == 1


# ---- the loader picks the set whose keys match the exam file's answers -----------------------------------------

def _exam_csv(path, rows, year, area):
    head = "question,body,A,B,C,D,E,year,question_number,test,answer,language\n"
    lines = [f"Q{r.CO_POSICAO},Item de teste {r.CO_POSICAO},a,b,c,d,e,{year},{r.CO_POSICAO},{area},"
             f"{'anulada' if r.TX_GABARITO not in 'ABCDE' else r.TX_GABARITO},portuguese\n"
             for r in rows.sort_values("CO_POSICAO").itertuples()]
    path.write_text(head + "".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("which", [1, 2])
def test_loader_attaches_the_set_whose_keys_match(tmp_path, which):
    rows, s1, s2 = two_sets(1211, 9188, shared=(136,))
    write_itens_prova(tmp_path / "IP.csv", rows)
    want = (s1, s2)[which - 1]
    exam = _exam_csv(tmp_path / "pt_ENEM_2013_MT_CO_PROVA_9188.csv", want, 2013, "MT")
    items = load("enem", path=exam, item_params=tmp_path / "IP.csv")
    params = read_itens_prova(tmp_path / "IP.csv")
    assert {it.meta["item_set"] for it in items} == {which} and {it.meta["n_item_sets"] for it in items} == {2}
    for it in items:
        r = want[want["CO_POSICAO"] == it.meta["number"]].iloc[0]
        assert it.meta["co_item"] == r["CO_ITEM"] == params.iloc[it.meta["params_row"] - 1]["CO_ITEM"]
        assert it.irt is None if r["IN_ITEM_ABAN"] == 1 else it.irt == pytest.approx(
            (r["NU_PARAM_A"], r["NU_PARAM_B"], r["NU_PARAM_C"]))
    with pytest.raises(DatasetError) as e:                        # forcing the other set: its keys disagree
        load("enem", path=exam, item_params=tmp_path / "IP.csv", item_set=3 - which)
    assert e.value.field == "answer"
    assert {it.meta["item_set"] for it in load("enem", path=exam, item_params=tmp_path / "IP.csv",
                                                 item_set={9188: which})} == {which}
