"""The package's seams, checked on the source: no private name crosses a package boundary, irt/ is generic
psychometrics (no file I/O, nothing exam-specific), ENEM code lives in one package, and light packages stay light."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from paths import REPO

PKG = REPO / "mcqa_toolkit"


def _imports(path: Path):
    """(module, imported names) of every `from mcqa_toolkit... import ...` and `import mcqa_toolkit...` in a file."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mcqa_toolkit"):
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("mcqa_toolkit"):
                    yield a.name, []


def _package(module: str) -> str:
    """The first-level package of a module path ('mcqa_toolkit.run.jobs' -> 'run'; top-level modules -> '')."""
    parts = module.split(".")[1:]
    return parts[0] if parts and (PKG / parts[0]).is_dir() else ""


def test_no_private_name_crosses_a_package_boundary():
    crossings = []
    for path in sorted(PKG.rglob("*.py")):
        here = _package(".".join(("mcqa_toolkit", *path.relative_to(PKG).with_suffix("").parts)))
        for module, names in _imports(path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            private += [m for m in module.split(".")[1:] if m.startswith("_")]
            if private and _package(module) != here:
                crossings.append(f"{path.relative_to(PKG)}: {module} {private}")
    assert not crossings, "\n".join(crossings)


def test_irt_is_generic_psychometrics_without_file_io():
    for path in sorted((PKG / "irt").glob("*.py")):
        text = path.read_text()
        for module, _ in _imports(path):
            assert _package(module) in ("irt", ""), f"irt/{path.name} imports {module}"
        tree = ast.parse(text)
        calls = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                 for n in ast.walk(tree) if isinstance(n, ast.Call)}
        io = calls & {"open", "read_csv", "read_parquet", "to_csv", "to_parquet", "load", "save", "read_text",
                      "write_text", "Path"}
        assert not io, f"irt/{path.name} does file I/O: {sorted(io)}"
        assert "enem" not in path.name.lower(), f"irt/{path.name}: ENEM code belongs in mcqa_toolkit/enem"


def test_enem_code_lives_in_one_package():
    outside = [p.relative_to(PKG) for p in PKG.rglob("*enem*.py")
               if p.parent.name != "enem" and p.relative_to(PKG) not in (Path("datasets/enem.py"),
                                                                      Path("report/plots/enem.py"))]
    assert not outside, f"ENEM-specific modules outside mcqa_toolkit/enem: {outside}"


def test_psychometrics_and_numbers_import_no_torch():
    code = ("import sys, mcqa_toolkit.irt, mcqa_toolkit.measure, mcqa_toolkit.enem, mcqa_toolkit.scoring.methods; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
