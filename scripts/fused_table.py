"""results/tests/fused_sweep.json: the engine's fused body (backends/hf/fused.py) on every family the support sweep
keeps on tree attention (tests/fused_sweep.py), run here and kept as data; docs/support.md renders its summary
(scripts/render_docs.py). tests/backends/hf/test_fused.py runs a few of its families in `make test`.

    python scripts/fused_table.py                  # every tree family (about 8 minutes on 2 cores)
    python scripts/fused_table.py llama gemma3     # those families only
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

import fused_sweep  # noqa: E402
import support_sweep  # noqa: E402
import tiny_models  # noqa: E402

SWEEP = REPO / "results" / "tests" / "support_sweep.json"
DATA = REPO / "results" / "tests" / "fused_sweep.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("families", nargs="*", help="model types (default: every family the sweep keeps on tree)")
    ap.add_argument("--out", default=str(DATA))
    args = ap.parse_args(argv)
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(support_sweep.THREADS)
    tokenizer = tiny_models.tiny_tokenizer()
    families = args.families or fused_sweep.tree_families(json.loads(SWEEP.read_text()))
    rows = {f: fused_sweep.fused_row(f, tokenizer) for f in tqdm(families, desc="fused sweep", unit="family")}
    raw = support_sweep.raw_file(rows)
    raw["exact"] = sum(fused_sweep.exact(r) for r in rows.values() if r["built"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(raw, indent=1) + "\n")
    print(f"{raw['exact']} of {len(rows)} families exact through compiled layers -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
