"""measure.compare: language gap and correlations (UNED-ACCESS 2024 numbers), McNemar, chi2 attribute tests."""
import math

import numpy as np
import pandas as pd
import pytest
from builders import UNED_T3, records, uned_scores
from scipy import stats as sps

from mcqa_toolkit import measure as S
from mcqa_toolkit.items import Item, ItemSet

# Table 4: MMLU-10 EN kappa for the same models (order as above)
MMLU10 = [0.78, 0.78, 0.75, 0.67, 0.69, 0.52, 0.54, 0.49, 0.39, 0.23, 0.13, 0.06]
# Appendix C.3 (Table 7): published MMLU accuracy vs the paper's zero-shot MMLU-10 accuracy; Leniachat has "-"
C3 = {"GPT-4o": (88.7, 83.40), "Claude-3-Opus": (86.8, 83.71), "GPT-4-Turbo": (86.5, 81.61),
      "Llama-3-70B-Instruct": (82.0, 75.47), "Gemma-2-27B-Instruct": (75.2, 76.61),
      "Mixtral-8x7B-Instruct": (70.6, 65.34), "GPT-3.5-Turbo": (70.0, 63.74), "Llama-3-8B-Instruct": (68.4, 61.54),
      "Mistral-7B-Instruct": (58.4, 54.24), "Gemma-7B-It": (53.3, 42.50), "Llama-2-7B-Chat": (45.3, 35.08),
      "Leniachat-Gemma-2B": (np.nan, 29.81)}




def test_language_gap_formula_and_uned_signs():
    gaps = S.language_gap(uned_scores()).set_index("model")
    published = {m: g for m, *_, g in UNED_T3}
    assert (gaps["language"] == "es").all() and (gaps["reference"] == "en").all()
    assert gaps.loc["Claude-3-Opus", "gap_pct"] == pytest.approx((0.79 - 0.81) / 0.79 * 100)
    assert gaps.loc["Claude-3-Opus", "gap_pct"] == pytest.approx(-2.51, abs=0.05)
    # Table 3's gaps come from unrounded kappas; from the 2-decimal kappas only the signs must agree
    assert all(np.sign(gaps.loc[m, "gap_pct"]) == np.sign(g) for m, g in published.items())


def test_uned_quality_gap_correlations():
    gaps = pd.DataFrame([{"model": m, "language": "es", "score_ref": en, "score_other": es, "gap_pct": g}
                         for m, en, es, g in UNED_T3])
    en = S.quality_gap_correlation(gaps, quality="score_ref")
    assert en.pearson_r == pytest.approx(-0.87, abs=0.005) and en.pearson_p == pytest.approx(0.0002, abs=5e-5)
    es = S.quality_gap_correlation(gaps, quality="score_other")
    assert es.pearson_r == pytest.approx(-0.89, abs=0.005) and es.pearson_p == pytest.approx(9.83e-05, abs=1e-7)
    assert en.n == 12 and en.spearman_p < 0.01 and "Pearson r = -0.871" in en.summary()
    assert list(en.to_frame().columns) == ["n", "pearson_r", "pearson_p", "spearman_rho", "spearman_p", "note"]
    with pytest.raises(ValueError, match="several languages"):
        S.quality_gap_correlation(pd.concat([gaps, gaps.assign(language="pt")]))


def test_dataset_correlations_uned_vs_mmlu():
    uned = pd.DataFrame({"model": [m for m, *_ in UNED_T3], "kappa": [en for _, en, _, _ in UNED_T3]})
    mmlu = pd.DataFrame({"model": [m for m, *_ in UNED_T3], "kappa": MMLU10}).iloc[::-1]  # order must not matter
    r = S.dataset_correlation(uned, mmlu)
    assert r.pearson_r == pytest.approx(0.98, abs=0.005) and r.pearson_p == pytest.approx(5.04e-08, abs=5e-10)
    pub = pd.DataFrame({"model": list(C3), "acc": [v[0] for v in C3.values()]})
    ours = pd.DataFrame({"model": list(C3), "acc": [v[1] for v in C3.values()]})
    c3 = S.dataset_correlation(pub, ours, score="acc")
    assert c3.n == 11  # Leniachat has no published MMLU
    assert c3.pearson_r == pytest.approx(0.9863, abs=1e-4) and c3.pearson_p == pytest.approx(2.31e-08, abs=5e-11)
    with pytest.raises(ValueError, match="several rows"):
        S.dataset_correlation(pd.concat([uned, uned]), mmlu)


def test_correlation_and_gap_degenerate_inputs():
    with pytest.raises(ValueError, match="at least 3"):
        S.correlation([1, 2, np.nan], [1, 2, 3])
    with pytest.raises(ValueError, match="same length"):
        S.correlation([1, 2, 3], [1, 2])
    flat = S.correlation([1, 1, 1, 1], [1, 2, 3, 4])
    assert math.isnan(flat.pearson_r) and "constant" in flat.note
    with pytest.raises(ValueError, match="at least one other"):
        S.language_gap(uned_scores().query("language == 'en'"))
    with pytest.raises(ValueError, match="several rows"):
        S.language_gap(pd.concat([uned_scores(), uned_scores()]))
    zero = pd.DataFrame({"model": ["m", "m", "n", "n"], "language": ["en", "pt", "en", "pt"],
                         "kappa": [0.0, 0.2, -0.1, 0.1]})
    z = S.language_gap(zero).set_index("model")
    assert math.isnan(z.loc["m", "gap_pct"]) and "is 0" in z.loc["m", "note"]
    assert "not interpretable" in z.loc["n", "note"]


def test_paired_mcnemar_languages_exact_and_chi2():
    # 8 items right only in EN, 2 right only in ES, 5 right in both, 3 wrong in both; one EN item unpaired
    pattern = [(1, 0)] * 8 + [(0, 1)] * 2 + [(1, 1)] * 5 + [(0, 0)] * 3
    rows = []
    for i, (en, es) in enumerate(pattern):
        rows += [{"item_id": f"q{i}-en", "parallel_id": f"q{i}", "language": "en", "choice": 0 if en else 1},
                 {"item_id": f"q{i}-es", "parallel_id": f"q{i}", "language": "es", "choice": 0 if es else 1}]
    rows.append({"item_id": "lonely-en", "parallel_id": "lonely", "language": "en", "choice": 0})
    out = S.paired_mcnemar(records(rows), a="en", b="es").iloc[0]
    assert (out["n_pairs"], out["n_unpaired"], out["only_a"], out["only_b"]) == (18, 1, 8, 2)
    assert out["exact"] and out["p_value"] == pytest.approx(2 * (1 + 10 + 45) / 1024)  # two-sided binomial
    assert out["acc_a"] == pytest.approx(13 / 18) and out["acc_b"] == pytest.approx(7 / 18)
    big = [(1, 0)] * 30 + [(0, 1)] * 10
    rows = [{"item_id": f"q{i}", "model": m, "choice": 0 if ok else 1}
            for i, pair in enumerate(big) for m, ok in zip(("m1", "m2"), pair, strict=True)]
    chi = S.paired_mcnemar(records(rows), between="model", a="m1", b="m2", pair_on="item_id",
                           by=("strategy", "language")).iloc[0]
    assert not chi["exact"] and chi["statistic"] == pytest.approx((abs(30 - 10) - 1) ** 2 / 40)
    assert chi["p_value"] == pytest.approx(sps.chi2.sf((20 - 1) ** 2 / 40, 1))


def test_paired_mcnemar_shuffles_and_degenerate():
    # 3 shuffles: item correct when > half correct; shuffle=0 uses only the first shuffle
    rows = [{"item_id": "q", "model": m, "shuffle": s, "choice": c}
            for m, cs in (("a", (0, 0, 1)), ("b", (1, 1, 0))) for s, c in enumerate(cs)]
    rows += [{"item_id": "r", "model": m, "shuffle": s, "choice": 0} for m in "ab" for s in range(3)]
    base = dict(between="model", a="a", b="b", pair_on="item_id", by=())
    maj = S.paired_mcnemar(records(rows), **base).iloc[0]
    assert (maj["only_a"], maj["only_b"], maj["both_correct"]) == (1, 0, 1) and maj["p_value"] == 1.0
    first = S.paired_mcnemar(records(rows), shuffle=2, **base).iloc[0]
    assert (first["only_a"], first["only_b"]) == (0, 1)
    with pytest.raises(ValueError, match="not in the frame"):
        S.paired_mcnemar(records(rows), **{**base, "b": "zzz"})
    with pytest.raises(ValueError, match="cannot also be in"):
        S.paired_mcnemar(records(rows), **{**base, "by": ("model",)})
    none = [{"item_id": "x", "model": "a", "choice": 0, "strategy": "S1"},
            {"item_id": "y", "model": "b", "choice": 0, "strategy": "S1"}]
    out = S.paired_mcnemar(records(none), **base).iloc[0]
    assert out["n_pairs"] == 0 and out["note"] == "no paired items" and math.isnan(out["p_value"])


def test_number_helpers_and_item_attributes():
    assert S.has_number("massa de 12 kg") and S.has_number("H2O") and not S.has_number("two apples")
    assert not S.has_number(None) and S.options_have_number(["a", "b 3"]) and not S.options_have_number(["a"])
    mk = dict(source="t", exam="e", answer=0)
    items = ItemSet([Item(item_id="a", stem="Quanto é 2+2?", options=("quatro", "cinco"), **mk),
                     Item(item_id="b", stem="Qual cor?", options=("1", "azul"), has_image=True, **mk)])
    att = S.item_attributes(items).set_index("item_id")
    assert att.loc["a"].tolist() == [False, True, False] and att.loc["b"].tolist() == [True, False, True]


def _attribute_frame(counts):
    """counts = (attr & nondisc, attr & disc, noattr & nondisc, noattr & disc) -> one row per item."""
    rows = []
    for (attr, di), n in zip(((True, 0.1), (True, 0.5), (False, 0.0), (False, 0.3)), counts, strict=True):
        rows += [{"has_image": attr, "numbers_in_stem": attr, "numbers_in_options": not attr, "di": di}] * n
    return pd.DataFrame(rows)


def test_attribute_chi2_hand_computed_table():
    f = _attribute_frame((10, 5, 3, 12))
    f.loc[len(f)] = {"has_image": True, "numbers_in_stem": True, "numbers_in_options": False, "di": np.nan}
    out = S.attribute_chi2(f).set_index("attribute")
    assert list(out.index) == ["has_image", "numbers_in_stem", "numbers_in_options"]  # ENEM Table 2 rows
    n, ad_bc, margins = 30, 10 * 12 - 5 * 3, 15 * 15 * 13 * 17
    yates = n * (abs(ad_bc) - n / 2) ** 2 / margins
    assert out.loc["has_image", "chi2"] == pytest.approx(yates) and out.loc["has_image", "n_items"] == 30
    assert out.loc["has_image", "p_value"] == pytest.approx(sps.chi2.sf(yates, 1))
    # numbers_in_options is the complement: same table with rows swapped, same statistic
    assert out.loc["numbers_in_options", "chi2"] == pytest.approx(yates)
    plain = S.attribute_chi2(f, attributes=["has_image"], correction=False).iloc[0]
    assert plain["chi2"] == pytest.approx(n * ad_bc ** 2 / margins)
    assert plain["p_value"] == pytest.approx(sps.chi2_contingency([[10, 5], [3, 12]], correction=False).pvalue)


def test_attribute_chi2_degenerate():
    const = _attribute_frame((10, 5, 0, 0))
    assert "same value" in S.attribute_chi2(const, attributes=["has_image"])["note"].iloc[0]
    one_side = _attribute_frame((0, 5, 0, 6))
    row = S.attribute_chi2(one_side, attributes=["has_image"]).iloc[0]
    assert math.isnan(row["chi2"]) and "one side" in row["note"]
    with pytest.raises(ValueError, match="lacks column"):
        S.attribute_chi2(const.drop(columns="di"))
