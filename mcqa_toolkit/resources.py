"""Where the shipped files are: notebooks, params files and the demo exam.

In a source checkout they are the repository's `notebooks/`, `params/` and `data/demo/`; in an installed
package (`pip install .`) the same files are package data under `mcqa_toolkit/_notebooks`, `_params` and
`_demo` (see pyproject.toml). Either way one function per resource, and one clear error if neither exists.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent

# resource -> (folder in a source checkout, folder inside the installed package)
_LOCATIONS = {
    "notebooks": ("notebooks", "_notebooks"),
    "params": ("params", "_params"),
    "demo": ("data/demo", "_demo"),
}


def resource_dir(name: str) -> Path:
    """The folder of a shipped resource ('notebooks', 'params' or 'demo')."""
    checkout, installed = _LOCATIONS[name]
    for candidate in (_CHECKOUT / checkout, _PACKAGE / installed):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"mcqa_toolkit's {name} folder is missing (looked in {_CHECKOUT / checkout} and "
                            f"{_PACKAGE / installed}); reinstall the package")


def notebooks_dir() -> Path:
    return resource_dir("notebooks")


def params_file(name: str) -> Path:
    """A shipped params file by name ('demo' -> params/demo.yaml)."""
    path = resource_dir("params") / f"{name.removesuffix('.yaml')}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"no shipped params file {path.name}; available: "
                                f"{sorted(p.stem for p in resource_dir('params').glob('*.yaml'))}")
    return path


def demo_dir() -> Path:
    return resource_dir("demo")
