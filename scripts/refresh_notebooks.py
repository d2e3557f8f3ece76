"""Re-execute the committed notebooks in place on their default parameters (the sample results in
data/demo/results) and keep only the outputs that `pytest --nbval-lax` checks (cells marked
`# NBVAL_CHECK_OUTPUT`: the headline numbers), so the committed files stay small and diffable.

    python scripts/refresh_notebooks.py            # all notebooks
    python scripts/refresh_notebooks.py 11_irt     # one
Run it after changing code that moves a headline number, review the diff, commit.
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import papermill as pm

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHECK = "# NBVAL_CHECK_OUTPUT"


def refresh(path: Path) -> None:
    pm.execute_notebook(str(path), str(path), kernel_name="python3", cwd=str(NOTEBOOKS), progress_bar=False)
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            if not cell.source.lstrip().startswith(CHECK):
                cell.outputs = []
                cell.execution_count = None
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("widgets", None)  # saved widget state: large and regenerated on every run
    nbformat.write(nb, path)
    print("refreshed", path.name)


def main(names: list[str]) -> None:
    paths = [NOTEBOOKS / f"{n.removesuffix('.ipynb')}.ipynb" for n in names] or sorted(NOTEBOOKS.glob("*.ipynb"))
    for p in paths:
        refresh(p)


if __name__ == "__main__":
    main(sys.argv[1:])
