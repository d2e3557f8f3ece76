"""Statistics across models, languages and items: language gap, correlations with p-values, paired McNemar
tests, chi2 tests of item attributes against discrimination (the ENEM paper's Table 2).

Pure functions on frames/arrays (no I/O, no printing). Per-group functions return one row per group with a
`note` column that says why a value is NaN; scalar functions raise ValueError on unusable input.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar

from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.frames import finish, groups, per_item, prepare, two_conditions

MCNEMAR_EXACT_BELOW = 25  # discordant pairs under this use the exact binomial test (statsmodels' advice)
DI_THRESHOLD = 0.2        # discrimination index below this = non-discriminating item (ENEM paper, A.2)
ATTRIBUTES = ("has_image", "numbers_in_stem", "numbers_in_options")


@dataclass(frozen=True)
class Correlation:
    """Pearson and Spearman correlation of two paired samples (NaN pairs dropped), with two-sided p-values."""
    n: int
    pearson_r: float
    pearson_p: float
    spearman_rho: float
    spearman_p: float
    note: str = ""

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(self)])

    def summary(self) -> str:
        text = (f"Pearson r = {self.pearson_r:.3f} (p = {self.pearson_p:.3g}), Spearman rho = "
                f"{self.spearman_rho:.3f} (p = {self.spearman_p:.3g}), n = {self.n}")
        return f"{text} [{self.note}]" if self.note else text


def correlation(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Pearson and Spearman correlation with p-values over the pairs where both values are finite.
    Fewer than 3 pairs raises ValueError; a constant sample gives NaN with the reason in `note`."""
    xa, ya = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    keep = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[keep], ya[keep]
    if xa.size < 3:
        raise ValueError(f"correlation needs at least 3 complete pairs, got {xa.size}")
    if np.ptp(xa) == 0 or np.ptp(ya) == 0:
        which = "x" if np.ptp(xa) == 0 else "y"
        return Correlation(int(xa.size), *(np.nan,) * 4, note=f"{which} is constant: correlation undefined")
    p, s = sps.pearsonr(xa, ya), sps.spearmanr(xa, ya)
    return Correlation(int(xa.size), float(p.statistic), float(p.pvalue), float(s.statistic), float(s.pvalue))


def correlation_row(x: pd.Series, y: pd.Series) -> dict:
    """`correlation` of the complete pairs as a dict (a table's row); fewer than 3 complete pairs: NaN and a note."""
    keep = np.isfinite(x.to_numpy(float)) & np.isfinite(y.to_numpy(float))
    if keep.sum() < 3:
        return {**asdict(Correlation(int(keep.sum()), *(np.nan,) * 4)), "note": "fewer than 3 complete pairs"}
    return asdict(correlation(x, y))


def language_gap(scores: pd.DataFrame, reference: str = "en", score: str = "kappa",
                 by: str | Sequence[str] = ("model",), language: str = "language") -> pd.DataFrame:
    """Gap % = (score_ref - score_other) / score_ref x 100 per group and other language (UNED sign: negative
    means better in the other language). `scores` is tidy: one row per group x language (e.g. `kappa()`).
    Columns: by..., reference, language, score_ref, score_other, gap_pct, note."""
    f, by = prepare(scores, by, (language, score))
    if language in by:
        raise ValueError(f"{language!r} cannot be a grouping column of the gap")
    if f.duplicated([*by, language]).any():
        raise ValueError(f"several rows per {by} x {language}; aggregate first or add the column that "
                         "tells them apart (e.g. strategy) to `by`")
    wide = f.set_index([*by, language])[score].unstack(language)
    others = [c for c in wide.columns if c != reference]
    if reference not in wide.columns or not others:
        raise ValueError(f"the gap needs reference language {reference!r} and at least one other; "
                         f"found {list(wide.columns)}")
    out = wide[others].stack().rename("score_other").reset_index()
    out = out.merge(wide[reference].rename("score_ref").reset_index(), on=by)
    ref = out["score_ref"].where(out["score_ref"] != 0)
    out["gap_pct"] = (out["score_ref"] - out["score_other"]) / ref * 100
    out["note"] = np.select(
        [out["score_ref"].isna() | out["score_other"].isna(), out["score_ref"] == 0, out["score_ref"] < 0],
        ["score missing for a language", "reference score is 0: gap undefined",
         "reference score < 0: the sign of the gap is not interpretable"], "")
    out.insert(len(by), "reference", reference)
    return finish(out[[*by, "reference", language, "score_ref", "score_other", "gap_pct", "note"]])


def quality_gap_correlation(gaps: pd.DataFrame, quality: str = "score_ref", gap: str = "gap_pct") -> Correlation:
    """Correlation between model quality (a score column of `language_gap`'s output, e.g. score_ref for EN or
    score_other for the other language) and the gap, across the rows (models) of one language pair."""
    prepare(gaps, (), (quality, gap))
    if "language" in gaps.columns and gaps["language"].nunique() > 1:
        raise ValueError("gaps hold several languages; select one language pair first")
    return correlation(gaps[quality], gaps[gap])


def dataset_correlation(a: pd.DataFrame, b: pd.DataFrame, on: str | Sequence[str] = "model",
                        score: str = "kappa") -> Correlation:
    """Correlation of the same models' scores on two datasets (rows matched on `on`; unmatched rows dropped)."""
    on = [on] if isinstance(on, str) else list(on)
    prepare(a, on, (score,))
    prepare(b, on, (score,))
    for name, f in (("a", a), ("b", b)):
        if f.duplicated(on).any():
            raise ValueError(f"frame {name} has several rows per {on}")
    m = a[[*on, score]].merge(b[[*on, score]], on=on, suffixes=("_a", "_b"))
    return correlation(m[f"{score}_a"], m[f"{score}_b"])


def paired_mcnemar(frame: pd.DataFrame, between: str = "language", a: str = "en", b: str = "es",
                   pair_on: str = "parallel_id", by: str | Sequence[str] = ("model", "strategy"),
                   shuffle: int | None = None) -> pd.DataFrame:
    """McNemar test per group on items answered under two conditions: two languages (between="language",
    pair_on="parallel_id") or two models (between="model", pair_on="item_id").

    Each item is one pair. With several shuffles an item counts as correct when strictly more than half of
    its shuffles are correct (`shuffle=s` uses only shuffle s instead), because shuffles are not independent
    pairs. Fewer than 25 discordant pairs use the exact binomial test, otherwise chi2 with continuity
    correction. Columns: by..., a, b, n_pairs, n_unpaired, both_correct, only_a, only_b, both_wrong, acc_a,
    acc_b, statistic, p_value, exact, note.
    """
    needed = (between, pair_on, "item_id", "correct", "status") + (("shuffle",) if shuffle is not None else ())
    f, by = two_conditions(frame, by, needed, between, a, b)
    if shuffle is not None:
        f = f[f["shuffle"] == shuffle]
        if f.empty:
            raise ValueError(f"no record with shuffle == {shuffle}")
    keys = [*by, between, pair_on]
    if (f.groupby(keys, dropna=False)["item_id"].nunique() > 1).any():
        raise ValueError(f"several items share one {pair_on} within a {between}: pairs are ambiguous")
    ids = f[list(dict.fromkeys([*by, between, "item_id", pair_on]))].drop_duplicates()
    items = per_item(f, [*by, between]).merge(ids, on=[*by, between, "item_id"])
    wide = (items.assign(ok=items["accuracy"] > 0.5).set_index(keys)["ok"].unstack(between)
            .reindex(columns=[a, b]))
    rows = []
    for key, g in groups(wide.reset_index(), by):
        paired = g[[a, b]].notna().all(axis=1)
        x, y = g.loc[paired, a].astype(bool).to_numpy(), g.loc[paired, b].astype(bool).to_numpy()
        n11, n10, n01, n00 = (int(v) for v in ((x & y).sum(), (x & ~y).sum(), (~x & y).sum(), (~x & ~y).sum()))
        row = {**key, "a": a, "b": b, "n_pairs": int(paired.sum()), "n_unpaired": int((~paired).sum()),
               "both_correct": n11, "only_a": n10, "only_b": n01, "both_wrong": n00,
               "acc_a": x.mean() if x.size else np.nan, "acc_b": y.mean() if y.size else np.nan,
               "statistic": np.nan, "p_value": np.nan, "exact": n10 + n01 < MCNEMAR_EXACT_BELOW, "note": ""}
        if not x.size:
            row["note"] = "no paired items"
        else:
            res = mcnemar([[n11, n10], [n01, n00]], exact=row["exact"], correction=True)
            row.update(statistic=float(res.statistic), p_value=float(res.pvalue))
        rows.append(row)
    return finish(pd.DataFrame(rows))


# ---- item attributes and discrimination -----------------------------------------------------------------
_DIGIT = re.compile(r"\d")


def has_number(text: str | None) -> bool:
    """True when the text contains a digit (any Unicode decimal digit; 'H2O' and '1990' count, 'two' does not)."""
    return bool(text) and _DIGIT.search(str(text)) is not None


def options_have_number(options: Sequence[str]) -> bool:
    """True when any option contains a digit."""
    return any(has_number(o) for o in options)


def item_attributes(items: ItemSet | pd.DataFrame) -> pd.DataFrame:
    """item_id, has_image, numbers_in_stem, numbers_in_options for an ItemSet or its `to_frame()`."""
    df = items.to_frame() if isinstance(items, ItemSet) else items
    prepare(df, (), ("item_id", "stem", "options", "has_image"))
    opts = df["options"].explode()
    in_opts = opts.astype("string").str.contains(_DIGIT, na=False).groupby(level=0).any()
    return pd.DataFrame({"item_id": df["item_id"], "has_image": df["has_image"].astype(bool),
                         "numbers_in_stem": df["stem"].astype("string").str.contains(_DIGIT, na=False).astype(bool),
                         "numbers_in_options": in_opts.reindex(df.index, fill_value=False).astype(bool)})


def attribute_chi2(frame: pd.DataFrame, di: str = "di", attributes: Sequence[str] = ATTRIBUTES,
                   threshold: float = DI_THRESHOLD, correction: bool = True) -> pd.DataFrame:
    """chi2 independence test between each boolean item attribute and non-discriminating items (DI < threshold),
    one row per attribute as in the ENEM paper's Table 2. `frame` has one row per item with the DI column and
    the attribute columns (see `item_attributes`); items with NaN DI are left out. `correction` is Yates'
    continuity correction (scipy's default for 2x2 tables). An attribute or a DI split with an empty side
    gives NaN with a note. Columns: attribute, n_items, attr_nondisc, attr_disc, noattr_nondisc, noattr_disc,
    chi2, dof, p_value, note."""
    prepare(frame, (), (di, *attributes))
    f = frame[np.isfinite(frame[di].to_numpy(float))]
    nondisc = f[di].to_numpy(float) < threshold
    rows = []
    for attr in attributes:
        x = f[attr].astype(bool).to_numpy()
        t = np.array([[(x & nondisc).sum(), (x & ~nondisc).sum()], [(~x & nondisc).sum(), (~x & ~nondisc).sum()]])
        row = {"attribute": attr, "n_items": int(t.sum()), "attr_nondisc": int(t[0, 0]), "attr_disc": int(t[0, 1]),
               "noattr_nondisc": int(t[1, 0]), "noattr_disc": int(t[1, 1]), "chi2": np.nan, "dof": 1,
               "p_value": np.nan, "note": ""}
        if (t.sum(axis=1) == 0).any():
            row["note"] = f"every item has the same value of {attr}: test undefined"
        elif (t.sum(axis=0) == 0).any():
            row["note"] = f"every item is on one side of DI = {threshold}: test undefined"
        else:
            res = sps.chi2_contingency(t, correction=correction)
            row.update(chi2=float(res.statistic), p_value=float(res.pvalue),
                       note="expected count < 5: chi2 approximate" if res.expected_freq.min() < 5 else "")
        rows.append(row)
    return pd.DataFrame(rows)


def gap_correlations(gaps: pd.DataFrame, by: Sequence[str] = ("language",), quality: str = "score_ref",
                     gap: str = "gap_pct") -> pd.DataFrame:
    """`quality_gap_correlation` per group of `language_gap` rows (points = the other rows,
    e.g. model x strategy): by..., n, pearson_r, pearson_p, spearman_rho, spearman_p, note. Fewer than 3
    points give NaN with the reason instead of an error, so one- and two-model runs still report."""
    prepare(gaps, (), [*by, quality, gap])
    rows = []
    for key, g in gaps.groupby(list(by), sort=True, dropna=False):
        key = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        try:
            rows.append({**key, **quality_gap_correlation(g, quality, gap).to_frame().iloc[0].to_dict()})
        except ValueError as e:
            rows.append({**key, "n": int(g[[quality, gap]].notna().all(axis=1).sum()), "pearson_r": np.nan,
                         "pearson_p": np.nan, "spearman_rho": np.nan, "spearman_p": np.nan, "note": str(e)})
    return pd.DataFrame(rows)


def di_attribute_tests(di: pd.DataFrame, items: ItemSet, split: str = "strategy",
                       item_key: str = "parallel_id") -> pd.DataFrame:
    """The ENEM paper's Table 2 per `split` value: chi2 tests of item attributes (image, numbers in stem /
    options) against poorly discriminating items (model DI < 0.2). Attributes are read from the first item of
    each `item_key` (translations share them). Columns: split, then `attribute_chi2`'s columns."""
    attrs = item_attributes(items).assign(**{item_key: [getattr(it, item_key) for it in items]})
    attrs = attrs.drop_duplicates(item_key).drop(columns="item_id")
    models = di[di["group"] == "models"]
    out = [attribute_chi2(part.merge(attrs, on=item_key)).assign(**{split: value})
           for value, part in models.groupby(split, sort=True)]
    if not out:
        raise ValueError("no model discrimination indices (each strategy needs >= 2 persons)")
    res = pd.concat(out, ignore_index=True)
    return res[[split, *[c for c in res.columns if c != split]]]
