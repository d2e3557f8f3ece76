"""docs/dif.md's check on the ENEM paper's 2021 response patterns, from results/studies/dif_2021.json
(studies/dif_real_patterns.py, run on the release with INEP's 2021 item file), and the classes the DIF report found
on the demo's simulated persons, from the headline notebooks/17_dif.ipynb printed (its committed output, which the
notebook tests check with nbval)."""
from __future__ import annotations

import json
from pathlib import Path

from pages.blocks import REPO, read_json, rel, table

DIF_NOTEBOOK = REPO / "notebooks" / "17_dif.ipynb"


def real_patterns() -> str:
    raw = read_json(REPO / "results" / "studies" / "dif_2021.json")
    rows = [[r["model"], r["area"], r["items"], r["no_information"], r["A"], r["B"], r["C"], r["flagged_bh"],
             f"{r['irt_flagged_bh']} of {r['irt_items']}",
             f"{r['total_score_range']['pt'][0]}-{r['total_score_range']['pt'][1]} / "
             f"{r['total_score_range']['en'][0]}-{r['total_score_range']['en'][1]}"] for r in raw["per_model"]]
    per_model = table(["model", "area", "items", "no information", "A", "B", "C", "flagged after BH",
                       "IRT test, flagged after BH", "total score pt / en"], rows, "llrrrrrrrl")
    pooled = table(["area", "models", "persons", "items", "C", "flagged after BH",
                    "permutation within model, flagged after BH"],
                   [[p["area"], p["models"], p["persons"], p["items"], p["C"], p["flagged_bh"],
                     p["permutation_flagged_bh"]] for p in raw["pooled"]], "lrrrrrr")
    apart = [r for r in raw["per_model"] if r["total_score_range"]["pt"][1] < r["total_score_range"]["en"][0]
             or r["total_score_range"]["en"][1] < r["total_score_range"]["pt"][0]]
    note = ("Where the two languages' total scores do not overlap (" +
            "; ".join(f"{r['model']} {r['area']}" for r in apart) + "), Mantel-Haenszel has no stratum holding both "
            "groups and classes every item A with a note, while the IRT test, matching through the human curve, "
            "still flags items." if apart else "")
    return (f"From `results/studies/dif_2021.json` ({raw['command']}, {raw['date']}; input `{raw['input']}`, sha256 "
            f"{raw['input_sha256'][:12]}): focal {raw['focal']}, reference {raw['reference']}, alpha "
            f"{raw['alpha']:g}.\n\n" + per_model + "\n\nThe five models pooled per area (strata = model x score, "
            "`within=p.block`):\n\n" + pooled + ("\n\n" + note if note else ""))


def notebook_headline(path: Path) -> dict:
    """The headline a committed notebook printed (the output of its `write_headline` cell)."""
    for cell in read_json(path)["cells"]:
        if cell["cell_type"] == "code" and "write_headline(" in "".join(cell["source"]):
            text = "".join("".join(out.get("text", "")) for out in cell.get("outputs", []))
            if text:
                return json.loads(text)
    raise ValueError(f"{rel(path)}: no printed headline: execute the notebook (scripts/refresh_notebooks.py)")


def simulated() -> str:
    """Per focal language: persons, questions per ETS class and flagged after BH, as the committed run found."""
    h = notebook_headline(DIF_NOTEBOOK)
    if h["source"] != "simulated":
        return f"The committed run of `{rel(DIF_NOTEBOOK)}` used the runs' response patterns: nothing simulated."
    focal = sorted(h["flagged_bh"])
    reference = ", ".join(f"{lang} ({n:.0f} persons)" for lang, n in h["n_persons"].items() if lang not in focal)
    rows = [[lang, f"{h['n_persons'][lang]:.0f}"] + [f"{h['classes'].get(f'{lang} / {c}', 0):.0f}" for c in "ABC"]
            + [f"{h['flagged_bh'][lang]:.0f}"] for lang in focal]
    return (f"From the headline of `{rel(DIF_NOTEBOOK)}` as committed (the demo's runs, simulated persons; "
            f"reference {reference}):\n\n"
            + table(["focal language", "simulated persons", "A", "B", "C", "flagged after BH"], rows, "lrrrrr"))


def blocks() -> dict[str, str]:
    return {"dif-real-patterns": real_patterns(), "dif-simulated": simulated()}
