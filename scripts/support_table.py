"""results/tests/support_sweep.json: the engine's support sweep (tests/support_sweep.py) over every causal-LM family
of the installed transformers, run here and kept as data; docs/support.md is rendered from it by
scripts/render_docs.py. tests/backends/hf/test_support_sweep.py runs the same sweep in `make test` and fails when a
family's status differs from this file's (run this script again, then `python scripts/render_docs.py`).

    python scripts/support_table.py                  # every family (about 5 minutes on 2 cores)
    python scripts/support_table.py llama falcon     # those families only, merged into the committed file
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from pathlib import Path

from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

import support_sweep  # noqa: E402
import tiny_models  # noqa: E402

DATA = REPO / "results" / "tests" / "support_sweep.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("families", nargs="*", help="model types (default: every causal-LM family)")
    ap.add_argument("--out", default=str(DATA))
    args = ap.parse_args(argv)
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from mcqa_toolkit.backends.hf import selfcheck

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    verdicts = Path(tempfile.mkdtemp(prefix="selfcheck_"))  # every family checked afresh, the user's cache untouched
    selfcheck.cache_dir = lambda: verdicts
    out = Path(args.out)
    rows = {r["family"]: r for r in json.loads(out.read_text())["rows"]} if args.families and out.exists() else {}
    tokenizer = tiny_models.tiny_tokenizer()
    for family in tqdm(args.families or sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), desc="support sweep",
                       unit="family"):
        rows[family] = support_sweep.sweep(family, tokenizer)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(support_sweep.raw_file(rows), indent=1) + "\n")
    print(f"{len(rows)} families -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
