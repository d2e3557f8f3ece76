"""The ENEM development set the enem_* studies work on: `--shared` (default ../shared beside the checkout), INEP's
folder in it and its real candidates (inep_cases_dev.json), read once."""
from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def development_set(description: str) -> tuple[Path, Any]:
    """(INEP's folder, the development cases) from the command line; the scripts' own warnings (estimated
    parameters, cases left out) silenced, as their reports say what was scored."""
    from mcqa_toolkit.enem.cases import read_cases

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    inep = ap.parse_args().shared / "reference" / "enem_inep"
    warnings.simplefilter("ignore")
    return inep, read_cases(inep / "inep_cases_dev.json")
