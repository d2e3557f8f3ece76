"""tables.py: pivots in the seed papers' shapes and their LaTeX (booktabs, bold best, ±, escaping)."""
import pandas as pd
import pytest
from builders import UNED_T5, records, uned_scores

from mcqa_toolkit import measure as M
from mcqa_toolkit import measure as S
from mcqa_toolkit.report import tables as T


def body(latex):
    """Data rows of a LaTeX table: the lines between \\midrule and \\bottomrule, split into cells."""
    lines = latex.splitlines()
    start, end = lines.index(r"\midrule"), lines.index(r"\bottomrule")
    return [[c.strip() for c in line.removesuffix(r" \\").split(" & ")] for line in lines[start + 1:end]]


def test_escape_latex_once():
    assert T.escape_latex(r"50% & $x_1$ #{a}~^\ ") == (r"50\% \& \$x\_1\$ \#\{a\}\textasciitilde{}"
                                                       r"\textasciicircum{}\textbackslash{} ")


def test_strategy_table_bold_ci_and_rules():
    rows = []
    for m, right in (("big_model", {"S1": 4, "S5": 3}), ("small", {"S1": 2, "S5": 4})):
        for s, k in right.items():  # k of 4 items correct
            rows += [{"item_id": f"q{i}", "model": m, "strategy": s, "choice": 0 if i < k else 1} for i in range(4)]
    acc = M.accuracy(records(rows), n_boot=200)
    latex = T.strategy_table(acc, caption="Accuracy by strategy", label="tab:acc").to_latex()
    lines = latex.splitlines()
    assert lines[:4] == [r"\begin{table}[ht]", r"\centering", r"\caption{Accuracy by strategy}", r"\label{tab:acc}"]
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert lines.count(rule) == 1
    assert r"\begin{tabular}{lrr}" in latex and "model & S1 & S5 \\\\" in latex
    (big, small) = body(latex)
    assert big[0] == r"big\_model" and big[1].startswith(r"\textbf{1.00") and r"$\pm$" in big[2]
    assert not big[2].startswith(r"\textbf") and small[2].startswith(r"\textbf{1.00")
    assert small[1].startswith(r"0.50 $\pm$ 0.")
    plain = T.strategy_table(acc, ci=False).to_frame()
    assert plain.loc["small", "S1"] == "0.50"


def test_subject_table_uned_table5_shape():
    subj = pd.DataFrame([{"language": lang, "model": m, "subject": f"S{j:02d}", "kappa": v}
                         for (lang, m), vals in UNED_T5.items() for j, v in enumerate(vals)])
    t = T.subject_table(subj, group_order=["es", "en"])
    assert list(t.values.columns)[-1] == "Average" and t.values.shape == (6, 12)
    assert t.values.loc[("es", "Claude-3-Opus"), "Average"] == pytest.approx(8.86 / 11)
    latex = t.to_latex()
    rows = body(latex)
    assert rows[0] == [r"\multicolumn{13}{l}{\textit{es}}"] and rows[4] == [r"\midrule"]
    assert rows[5] == [r"\multicolumn{13}{l}{\textit{en}}"]
    es, en = rows[1:4], rows[6:9]
    assert [r[0] for r in es] == ["Claude-3-Opus", "Llama-3-8B-Instruct", "Leniachat-Gemma-2B"]  # by average
    # best per column within each language block: Claude's average bold in both blocks
    assert es[0][-1] == r"\textbf{0.81}" and en[0][-1] == r"\textbf{0.79}"
    # subject 8 (index 8 = 'S08'): ES best is Claude 0.63; EN best Claude 0.66
    assert es[0][9] == r"\textbf{0.63}" and en[0][9] == r"\textbf{0.66}" and es[2][8] == "-0.03"


def test_gap_table_uned_table3_shape():
    gaps = S.language_gap(uned_scores())
    t = T.gap_table(gaps)
    assert list(t.values.columns) == ["EN", "ES", "Gap %"]
    rows = body(t.to_latex())
    assert rows[0][:3] == ["Claude-3-Opus", r"\textbf{0.79}", r"\textbf{0.81}"] and rows[0][3] == "-2.53"
    assert not any(r[3].startswith(r"\textbf") for r in rows) and rows[-1][0] == "Leniachat-Gemma-2B"
    with pytest.raises(ValueError, match="one language pair"):
        T.gap_table(pd.concat([gaps, gaps.assign(language="pt")]))


def test_irt_table_mean_sd_over_shuffles():
    f = pd.DataFrame({"model": ["a", "a", "a", "b"], "shuffle": [0, 1, 2, 0], "theta": [1.0, 1.2, 1.4, 0.5],
                      "psd": [0.30, 0.32, 0.34, 0.25], "lz": [-0.5, -0.7, -0.6, 0.1]})
    t = T.irt_table(f)
    assert list(t.values.columns) == ["theta", "SE", "l_z"] and t.values.loc["a", "theta"] == pytest.approx(1.2)
    a, b = body(t.to_latex())
    assert a[1] == r"\textbf{1.20 $\pm$ 0.20}" and b[2] == r"\textbf{0.25}"  # one shuffle: no ±
    assert not a[3].startswith(r"\textbf") and r"$\pm$" in a[3]
    assert r"l\_z" in t.to_latex()
    with pytest.raises(ValueError, match="missing"):
        T.irt_table(f.drop(columns="lz"))


def test_position_bias_table():
    same = [{"item_id": f"q{i}", "choice": 1, "model": "biased"} for i in range(8)]
    flat = [{"item_id": f"q{i}", "choice": i % 4, "model": "fair"} for i in range(8)]
    df = records(same + flat)
    bias = M.position_bias(df)
    t = T.position_bias_table(bias, consistency=M.shuffle_consistency(df))
    assert list(t.values.columns) == ["TVD k=4", "p k=4", "consistency"]
    rows = {r[0]: r for r in body(t.to_latex())}
    assert rows["fair"][2] == r"\textbf{0.00}" and rows["biased"][2] == "0.75"
    assert rows["biased"][3] == format(bias.set_index("model").loc["biased", "p_value"], ".2g")
    assert rows["biased"][4] == "--"  # one shuffle per item: consistency undefined


def test_table_degenerate_inputs():
    with pytest.raises(ValueError, match="empty"):
        T.strategy_table(pd.DataFrame(columns=["model", "strategy", "accuracy"]))
    dup = pd.DataFrame({"model": ["a", "a"], "strategy": ["S1", "S1"], "accuracy": [0.1, 0.2]})
    with pytest.raises(ValueError, match="several rows"):
        T.strategy_table(dup)
    with pytest.raises(ValueError, match="lacks column"):
        T.strategy_table(dup, value="kappa")
    bad = T.Table(pd.DataFrame({"x": [1.0]}), best="biggest")
    with pytest.raises(ValueError, match="'max', 'min' or None"):
        bad.to_latex()
    ties = T.Table(pd.DataFrame({"x": [0.501, 0.499, 0.3]}, index=["a", "b", "c"]))
    assert [r[1] for r in body(ties.to_latex())] == [r"\textbf{0.50}", r"\textbf{0.50}", "0.30"]  # printed tie


def test_unescape_latex_inverts_escape_latex():
    for text in [r"50% & $x_1$ #{a}~^\ ", r"\{ \textbackslash{} <a> \\}", "plain"]:
        assert T.unescape_latex(T.escape_latex(text)) == text
    assert T.unescape_latex(r"DI \textless{} 0.2, \{x\}") == "DI < 0.2, {x}"


def test_escape_latex_angle_brackets():
    """< and > would print as inverted ! and ? in LaTeX's default OT1 encoding (e.g. 'DI < 0.2' captions)."""
    assert T.escape_latex("DI < 0.2 > x") == r"DI \textless{} 0.2 \textgreater{} x"


def test_cat_length_table_columns_and_cells():
    curve = pd.DataFrame({"se_target": [0.3, 0.3, 0.5, 0.5], "order": ["adaptive", "random"] * 2,
                          "mean_length": [36.49, 39.99, 11.48, 19.76], "median_length": [40.0, 40.0, 11.0, 18.0],
                          "share_reached": [0.3915, 0.004, 1.0, 0.9885]})
    t = T.cat_length_table(curve)
    assert list(t.values.columns) == ["CAT mean", "CAT median", "CAT reached", "random mean", "random median",
                                      "random reached"]
    rows = body(t.to_latex())
    assert rows[0] == ["0.3", "36.5", "40.0", "0.39", "40.0", "40.0", "0.00"]
    assert rows[1] == ["0.5", "11.5", "11.0", "1.00", "19.8", "18.0", "0.99"]   # nothing bold: not a ranking


def test_adaptive_runs_table():
    sav = pd.DataFrame({"model": ["m"], "language": ["en"], "strategy": ["enem_4shot_cat"], "shuffles": [2],
                        "items_cat": [40.0], "items_full": [120.0], "items_saved_pct": [66.667],
                        "tokens_cat": [12000.0], "tokens_full": [15500.0], "tokens_saved_pct": [22.58],
                        "theta_correlation": [float("nan")], "theta_bias": [-0.05], "theta_rmse": [0.21],
                        "theta_mae": [0.2]})
    (row,) = body(T.adaptive_runs_table(sav).to_latex())
    assert row == ["m", "en", r"enem\_4shot\_cat", "2", "40", "120", "66.7", "12000", "15500", "22.6", "0.21",
                   "-0.05"]
    with pytest.raises(ValueError, match="missing"):
        T.adaptive_runs_table(sav.drop(columns="tokens_cat"))
