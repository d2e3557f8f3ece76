"""Render every generated part of the docs and the README from the committed raw results, and write the pages.

    python scripts/render_docs.py           # rewrite the pages whose generated parts changed
    python scripts/render_docs.py --check   # exit 1, naming them, when a committed page is not its data rendered

Each page is hand-written prose around generated blocks (scripts/pages/blocks.py: `<!-- begin NAME ... -->` ...
`<!-- end NAME -->`); a block is a pure function of raw files (results/, see results/README.md; the package's ENEM
tables), so no figure in a block is typed by hand. docs/reliability.md is wholly generated from
results/tests/reliability.json (scripts/reliability_table.py). Nothing here reads ../shared, runs a benchmark or
loads a model: the benchmarks, studies and scripts that measure write the raw files, this one only renders them.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for path in (HERE, REPO):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from pages import blocks, cluster, contamination, dif, enem, invariance, performance, readme, support  # noqa: E402


def _reliability() -> str:
    spec = importlib.util.spec_from_file_location("reliability_table", HERE / "reliability_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.render(json.loads((REPO / "results" / "tests" / "reliability.json").read_text()))


# page -> its blocks (name -> markdown), with the markers of blocks written before this script (name -> (start, end))
PAGES: dict[str, tuple[Callable[[], dict[str, str]], dict[str, tuple[str, str]]]] = {
    "docs/performance.md": (performance.blocks, {}),
    "docs/cluster.md": (cluster.blocks, {}),
    "docs/enem.md": (enem.blocks, enem.LEGACY),
    "docs/dif.md": (dif.blocks, {}),
    "docs/invariance.md": (invariance.blocks, {}),
    "docs/contamination.md": (contamination.blocks, {}),
    "docs/backends.md": (invariance.backends_blocks, {}),
    "docs/support.md": (support.blocks, {}),
    "README.md": (readme.blocks, {}),
}


def render_page(page: str, text: str) -> str:
    """`text` (page `page` of PAGES as written) with its generated blocks rendered from the data."""
    make, legacy = PAGES[page]
    return blocks.replace(text, make(), legacy, page)


def rendered() -> dict[str, str]:
    """Every generated page as it should read: {repository path: text}."""
    out = {page: render_page(page, (REPO / page).read_text(encoding="utf-8")) for page in PAGES}
    out["docs/reliability.md"] = _reliability()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only say which pages differ from their data (exit 1)")
    args = ap.parse_args(argv)
    stale = []
    for page, text in rendered().items():
        if (REPO / page).read_text(encoding="utf-8") != text:
            stale.append(page)
            if not args.check:
                (REPO / page).write_text(text, encoding="utf-8")
    if args.check:
        print("stale: " + ", ".join(stale) if stale else "every page is its data rendered")
        return 1 if stale else 0
    print("rendered: " + (", ".join(stale) if stale else "nothing changed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
