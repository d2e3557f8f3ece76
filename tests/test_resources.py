"""What `pip install .` ships: pyproject's package list covers the source tree, and the notebooks, params files
and demo exam that an installed `mcqa demo` needs resolve (mcqa_toolkit/resources.py)."""
from __future__ import annotations

import pytest
import tomllib
from paths import REPO

from mcqa_toolkit.resources import demo_dir, notebooks_dir, params_file, resource_dir

ROOT = REPO


def test_every_package_is_listed_in_pyproject():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "mcqa_toolkit").rglob("__init__.py")}
    assert found <= listed, f"add to pyproject [tool.setuptools] packages: {sorted(found - listed)}"
    mapped = cfg["package-dir"]
    assert {k: (ROOT / v).is_dir() for k, v in mapped.items()} == {k: True for k in mapped}


def test_resources_resolve_and_errors_are_clear():
    assert (notebooks_dir() / "run_model.ipynb").exists() and params_file("demo").name == "demo.yaml"
    assert (demo_dir() / "human_population.npz").exists()
    with pytest.raises(FileNotFoundError, match="no shipped params file nope.yaml; available: .*'demo'"):
        params_file("nope")
    with pytest.raises(KeyError):
        resource_dir("secrets")
