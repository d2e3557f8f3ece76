"""The realistic scoring workload: ENEM prompts at real length (~1,200-1,500 tokens with 4 shots).

The ENEM paper's 4-shot prompt (Listing 8) shows one item per area in a fixed order: natural sciences,
languages, humanities, mathematics. Here those shots are real ENEM records read at run time from
`--formats-dir` (../shared/formats: the 2022 natural-science booklet 1092 and a 2022 languages item, see
README there) where present, completed by passages we wrote ourselves in ENEM style
(benchmarks/data/enem_long_pt.jsonl, loaded with the same `enem` loader; their ids say `autoria_mcqa`).
The evaluated items are the remaining real 2022 natural-science items, then our natural-science passages.
No question text of the real records is stored in this repository. Shots use rule `ids` (the paper's fixed
block) since the real sample records carry no IRT parameters for the `easiest` rule.
"""
from __future__ import annotations

from pathlib import Path

from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import ItemSet

HERE = Path(__file__).resolve().parent
OURS = HERE / "data" / "enem_long_pt.jsonl"
DEFAULT_FORMATS = HERE.parent.parent / "shared" / "formats"  # ../shared/formats next to the checkout
REAL_FILES = ("pt_ENEM_2022_CN_CO_PROVA_1092_sample.csv", "enem_bluex_style_sample.json")
AREA_ORDER = ("natural sciences", "languages", "humanities", "mathematics")  # ENEM paper, Listing 8
# preferred shot per area: a real record when the formats directory has it, else our passage
REAL_SHOTS = {"natural sciences": "ENEM_2022_CN_1092_q91-pt", "languages": "ENEM_2022_1-pt"}
OUR_SHOTS = {"natural sciences": "ENEM_2025_autoria_mcqa_095-pt", "languages": "ENEM_2025_autoria_mcqa_012-pt",
             "humanities": "ENEM_2025_autoria_mcqa_061-pt", "mathematics": "ENEM_2025_autoria_mcqa_140-pt"}


def enem_long(formats_dir: str | Path | None, shots: int) -> tuple[ItemSet, ItemSet, list[str], list[str]]:
    """(shot pool, evaluated items, shot ids in prompt order, names of the real files used)."""
    items = list(load("enem", path=OURS))
    used = []
    formats = Path(formats_dir) if formats_dir else DEFAULT_FORMATS
    for name in REAL_FILES:
        if (formats / name).exists():
            items = list(load("enem", path=formats / name, language="pt")) + items
            used.append(name)
    by_id = {it.item_id: it for it in items}
    shot_ids = [REAL_SHOTS[a] if REAL_SHOTS.get(a) in by_id else OUR_SHOTS[a] for a in AREA_ORDER][:shots]
    pool = [by_id[i] for i in shot_ids]
    evaluated = [it for it in items if it.subject == "natural sciences" and it.item_id not in shot_ids
                 and it.answer is not None]
    return ItemSet(pool, "enem-long"), ItemSet(evaluated, "enem-long"), shot_ids, used
