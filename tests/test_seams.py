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


def test_no_private_name_crosses_a_module_of_run_records_or_the_feature_subpackages():
    """In run/ (pool/ included), records/, measure/dif/, enem/errata/ and irt/ability/ a module uses another's public
    names only (run/pool_worker.py imported runner._usage_delta); what two modules share is public in one of them."""
    crossings = []
    for pkg in ("run", "records", "measure/dif", "enem/errata", "irt/ability"):
        for path in sorted((PKG / pkg).rglob("*.py")):
            for module, names in _imports(path):
                private = [n for n in names if n.startswith("_") and not n.startswith("__")]
                if private:
                    crossings.append(f"{path.relative_to(PKG)}: {module} {private}")
    assert not crossings, "\n".join(crossings)


def test_irt_is_generic_psychometrics_without_file_io():
    for path in sorted((PKG / "irt").rglob("*.py")):
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
    """ENEM-specific modules sit in mcqa_toolkit/enem/, except the exam-question loader (datasets/enem/) and its
    figures (report/plots/enem.py)."""
    allowed = (Path("enem"), Path("datasets/enem"), Path("report/plots/enem.py"))
    outside = [rel for p in PKG.rglob("*.py") if "enem" in str(rel := p.relative_to(PKG)).lower()
               and not any(rel == a or a in rel.parents for a in allowed)]
    assert not outside, f"ENEM-specific modules outside mcqa_toolkit/enem: {outside}"


def test_psychometrics_and_numbers_import_no_torch():
    code = ("import sys, mcqa_toolkit.irt, mcqa_toolkit.measure, mcqa_toolkit.enem, mcqa_toolkit.scoring.methods, "
            "mcqa_toolkit.contamination; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_registries_import_a_heavy_library_only_when_its_entry_is_asked_for():
    """backends, datasets and interop name their implementations in registries of functions that import them: the
    packages and an API backend, a file loader or an lm-eval reader load no torch, transformers, HF datasets or
    inspect_ai."""
    code = ("import sys; from mcqa_toolkit import backends, datasets, interop; backends.REGISTRY['openai'](); "
            "datasets.loader('medicina'); interop.IMPORTERS['lm-eval'](); "
            "print(sorted(m for m in ('torch', 'transformers', 'datasets', 'inspect_ai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_runs_import_no_ray_unless_a_ray_run_is_asked_for():
    """Ray is an optional extra: the run package, its pool modules and the CLI import it only when a pool connects."""
    code = ("import sys, mcqa_toolkit.run, mcqa_toolkit.run.recipe, mcqa_toolkit.run.grid, mcqa_toolkit.run.pool, "
            "mcqa_toolkit.run.pool.remote, mcqa_toolkit.run.pool.worker, mcqa_toolkit.run.pool.scheduler, "
            "mcqa_toolkit.run.kernel, "
            "mcqa_toolkit.cli; print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def _package_graph() -> dict[str, dict[str, list[str]]]:
    """package -> {imported package -> [files importing it]} for every import between first-level packages and
    top-level modules of mcqa_toolkit (the package's own __init__ counts as the top level, '')."""
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).with_suffix("").parts
        here = rel[0] if (PKG / rel[0]).is_dir() else ("" if rel[0] == "__init__" else rel[0])
        for module, names in _imports(path):
            parts = module.split(".")[1:]
            targets = [parts[0]] if parts else [n for n in names if (PKG / n).is_dir() or (PKG / f"{n}.py").exists()]
            for there in targets:
                if there != here and ((PKG / there).is_dir() or (PKG / f"{there}.py").exists()):
                    graph.setdefault(here, {}).setdefault(there, []).append(str(path.relative_to(PKG)))
    return graph


def test_no_import_cycle_between_packages():
    """The packages form a DAG (arrows point down only: items <- records <- run; the README's Layout)."""
    graph = _package_graph()

    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), {}):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    cycles = [f"{a} -> {b} ({graph[a][b][0]}) -> ... -> {a}" for a in graph for b in graph[a] if a in reachable(b)]
    assert not cycles, "\n".join(cycles)


def test_readers_of_run_folders_go_through_records():
    """measure/, report/ and interop/ read run folders through records/, never through run/; records/ imports only
    items.py (the record format sits below everything that writes or reads runs)."""
    graph = _package_graph()
    for reader in ("measure", "report", "interop"):
        assert "run" not in graph.get(reader, {}), f"{reader}/ imports run/: {graph[reader]['run']}"
    assert set(graph.get("records", {})) <= {"items"}, f"records/ imports {graph['records']}"


# The contamination wing's floor: it runs runs (its audit) and reads the numbers below; only the report and the CLI
# read it. run/ writes every run's Min-K% table through scoring.min_k, below both, so no arrow runs back up.
CONTAMINATION_IMPORTS = {"items", "prompts", "backends", "scoring", "measure", "irt", "records", "run"}
CONTAMINATION_READERS = {"report", "cli"}


def test_the_contamination_wing_sits_above_run_and_below_the_report():
    graph = _package_graph()
    assert set(graph.get("contamination", {})) <= CONTAMINATION_IMPORTS, graph["contamination"]
    readers = {pkg for pkg, arrows in graph.items() if "contamination" in arrows}
    assert readers <= CONTAMINATION_READERS, {r: graph[r]["contamination"] for r in readers - CONTAMINATION_READERS}


def test_torch_and_transformers_are_imported_only_under_backends_hf():
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if (PKG / "backends" / "hf") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(PKG)}: {n}" for n in names if n.split(".")[0] in ("torch", "transformers")]
    assert not found, found


def test_package_modules_stay_under_300_lines():
    long = {str(p.relative_to(PKG)): n for p in sorted(PKG.rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > 300}
    assert not long, f"modules over 300 lines: {long}"


def test_test_files_have_one_basename_each():
    """Test folders have no __init__.py, so pytest imports every test file by its basename: two files of one name
    stop the whole collection ("import file mismatch"), which a run of one folder never shows."""
    names: dict[str, list[str]] = {}
    for p in sorted((REPO / "tests").rglob("test_*.py")):
        names.setdefault(p.name, []).append(str(p.relative_to(REPO)))
    clashes = {n: ps for n, ps in names.items() if len(ps) > 1}
    assert not clashes, f"test files sharing a basename: {clashes}"


# Modules of the mirrored packages tested through their user instead of a test file of their own:
# "<pkg>/<module>" -> the test file that tests them. Only a module of constants only belongs here; today every
# mirrored module holds behaviour of its own and has its test file, so the list is empty.
TESTED_THROUGH_THEIR_USER: dict[str, str] = {}
MIRRORED = ("run", "run/pool", "records", "measure/dif", "contamination")   # tests mirror them module by module


def test_tests_mirror_run_records_dif_and_contamination_module_by_module():
    """tests/<package>/ mirrors the package (the README's Layout): every module of run/ (and run/pool/), records/,
    measure/dif/ and contamination/ has its own test_<module>.py, and every test file there is named after a
    module."""
    missing, orphans = [], []
    for pkg in MIRRORED:
        modules = {p.stem for p in (PKG / pkg).glob("*.py")} - {"__init__"}
        for module in sorted(modules):
            name = f"{pkg}/{module}"
            if name in TESTED_THROUGH_THEIR_USER:
                assert (REPO / TESTED_THROUGH_THEIR_USER[name]).exists(), name
            elif not (REPO / "tests" / pkg / f"test_{module}.py").exists():
                missing.append(f"tests/{pkg}/test_{module}.py")
        orphans += [f"tests/{pkg}/{p.name}" for p in sorted((REPO / "tests" / pkg).glob("test_*.py"))
                    if p.stem.removeprefix("test_") not in modules]
    assert not missing, f"modules without their test file: {missing}"
    assert not orphans, f"test files named after no module: {orphans}"
    assert all((PKG / f"{m}.py").exists() for m in TESTED_THROUGH_THEIR_USER), \
        "the allow-list names a module that is not there"


def _module_file(module: str) -> Path | None:
    """The file of a module path of the package (its .py, or its package's __init__.py), None outside it."""
    parts = module.split(".")[1:]
    base = PKG.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if parts and path.exists():
            return path
    return PKG / "__init__.py" if not parts else None


def _file_graph() -> dict[Path, set[Path]]:
    """file -> the files of the package it imports at module level or inside functions (`from pkg.mod import x`:
    pkg/mod.py, or pkg/mod/x.py when x is a submodule). Imports under `if TYPE_CHECKING:` count too: a cycle in
    the types is a cycle in the design."""
    graph: dict[Path, set[Path]] = {}
    for path in sorted(PKG.rglob("*.py")):
        edges = graph.setdefault(path, set())
        for module, names in _imports(path):
            target = _module_file(module)
            if target is None:
                continue
            subs = [sub for n in names if (sub := _module_file(f"{module}.{n}")) is not None]
            edges.update(subs if subs and len(subs) == len(names) else [target])
        edges.discard(path)
    return graph


def test_no_import_cycle_between_files():
    """No module imports, directly or through others, a module that imports it (records/state.py and
    records/store.py did). A package's __init__ re-exporting its modules is an edge like any other, so a module
    imports its siblings, never its own package."""
    graph = _file_graph()
    index = {p: i for i, p in enumerate(graph)}
    low, stack, on_stack, cycles, counter = {}, [], set(), [], [0]

    def connect(v: Path) -> None:   # Tarjan's strongly connected components
        index_v = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in low:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], low[w])
        if low[v] == index_v:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(str(c.relative_to(PKG)) for c in component))

    for v in sorted(graph, key=index.get):
        if v not in low:
            connect(v)
    assert not cycles, "files importing each other: " + "; ".join(" <-> ".join(c) for c in cycles)
