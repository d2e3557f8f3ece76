"""docs/dif.md's check on the ENEM paper's 2021 response patterns, from docs/dif_2021.json
(scripts/dif_real_patterns.py, run on the release with INEP's 2021 item file)."""
from __future__ import annotations

from pages.blocks import REPO, read_json, table


def real_patterns() -> str:
    raw = read_json(REPO / "docs" / "dif_2021.json")
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
    return (f"From `docs/dif_2021.json` ({raw['command']}, {raw['date']}; input `{raw['input']}`, sha256 "
            f"{raw['input_sha256'][:12]}): focal {raw['focal']}, reference {raw['reference']}, alpha "
            f"{raw['alpha']:g}.\n\n" + per_model + "\n\nThe five models pooled per area (strata = model x score, "
            "`within=p.block`):\n\n" + pooled + ("\n\n" + note if note else ""))


def blocks() -> dict[str, str]:
    return {"dif-real-patterns": real_patterns()}
