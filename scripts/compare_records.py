"""Do two versions of the toolkit give the same records? The equality rule's verdict per run and overall.

A and B are two commits, or two run folders, or two folders of run folders (matched by folder name):

    python scripts/compare_records.py 526075e 76adf93          # every predefined strategy on the demo exam at each
    python scripts/compare_records.py outputs/before outputs/after
    python scripts/compare_records.py main HEAD --json results/benchmarks/compare_records/x.json

For a commit, its tree is exported (`git archive`, nothing in this checkout changes) into a temporary folder and
`mcqa run` runs there (PYTHONPATH set to that tree, this interpreter; the script checks that the tree's package is
the one imported) on a params file holding every predefined strategy of run.strategy.STRATEGIES plus the demo's
CAT (enem_4shot adaptive), on the demo exam in --languages (first --per-subject questions of each subject,
--shuffles option orders, the embedded model unless --model), generation capped at --max-new-tokens (the same cap
on both sides: cot's 1,024 tokens would take hours on a CPU). A strategy a commit does not know is refused there
and shows as a run on one side only. Both sides then compare with THIS checkout's records.compare_runs: the
equality rule (records.equality: same keys and columns, floats within 1e-6, timing aside; n_forwarded_tokens
compared) plus the run's identity (strategy hash, dataset fingerprint, items). Exit 0 when every run is the same,
1 otherwise, 2 for bad input. `--json` writes the verdicts (commits by hash, folders by name: no machine paths),
each run's with its sizes: the largest |delta| of each float column and the records whose choice, response or
forwarded tokens changed (records.compare_runs.record_changes).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere: this checkout's package
    sys.path.insert(0, str(REPO))

from mcqa_toolkit.records.compare_runs import RunVerdict, verdicts  # noqa: E402
from mcqa_toolkit.run.strategy import STRATEGIES  # noqa: E402

GENERATING = ("generate", "cot")  # methods whose max_new_tokens is capped (the same cap on both sides)
CAT = {"base": "enem_4shot", "name": "enem_4shot_cat", "adaptive": {"se_target": 0.3, "max_items": 4}}


def commit_of(ref: str) -> str | None:
    """The full hash `ref` names in this repository, None when it names no commit."""
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=REPO,
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def strategies(max_new_tokens: int, only: list[str] | None = None) -> list[Any]:
    """Every predefined strategy by name (generation capped), then the demo's CAT; `only`: those names."""
    out: list[Any] = []
    for name, s in STRATEGIES.items():
        out.append({"base": name, "name": name, "max_new_tokens": max_new_tokens} if s.method in GENERATING
                   else name)
    out.append(dict(CAT))
    if only is None:
        return out
    unknown = sorted(set(only) - {s if isinstance(s, str) else s["name"] for s in out})
    if unknown:
        raise ValueError(f"unknown strategies {unknown}; known: {sorted(STRATEGIES)} and {CAT['name']}")
    return [s for s in out if (s if isinstance(s, str) else s["name"]) in only]


def params(out_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The params file run at each commit."""
    return {"output_dir": str(out_dir), "models": [args.model],
            "datasets": [{"name": "demo", "args": {"per_subject": args.per_subject}}],
            "languages": list(args.languages), "strategies": strategies(args.max_new_tokens, args.strategies),
            "shuffles": args.shuffles, "seed": 0, "min_k": False}


def export(commit: str, dest: Path) -> None:
    """The commit's tree into `dest` (git archive: this checkout, its index and its worktrees are untouched)."""
    dest.mkdir(parents=True)
    archive = dest.parent / f"{dest.name}.tar"
    with archive.open("wb") as f:
        subprocess.run(["git", "archive", "--format=tar", commit], cwd=REPO, stdout=f, check=True)
    with tarfile.open(archive) as tar:
        try:
            tar.extractall(dest, filter="data")
        except TypeError:  # Python without extraction filters (< 3.10.12): our own repository's archive
            tar.extractall(dest)
    archive.unlink()


def run_at(commit: str, work: Path, args: argparse.Namespace) -> Path:
    """Run the params at `commit` (exported under `work`); the folder holding its run folders."""
    tree, out = work / "tree", work / "outputs"
    export(commit, tree)
    env = {**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    where = subprocess.run([sys.executable, "-c", "import mcqa_toolkit; print(mcqa_toolkit.__file__)"], cwd=work,
                           env=env, capture_output=True, text=True)
    if where.returncode != 0 or not Path(where.stdout.strip()).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"at {commit[:10]}, `import mcqa_toolkit` does not load the exported tree: "
                         f"{where.stdout.strip() or where.stderr.strip()[-300:]}")
    spec = work / "params.yaml"
    spec.write_text(yaml.safe_dump(params(out, args), sort_keys=False))
    print(f"[{commit[:10]}] mcqa run ({len(strategies(args.max_new_tokens, args.strategies))} strategies x "
          f"{len(args.languages)} languages)", flush=True)
    done = subprocess.run([sys.executable, "-m", "mcqa_toolkit.cli", "run", str(spec)], cwd=work, env=env)
    if done.returncode:
        print(f"[{commit[:10]}] mcqa run exited {done.returncode}: runs that failed or were refused are missing "
              "on this side", flush=True)
    if not out.is_dir():
        raise SystemExit(f"at {commit[:10]}, mcqa run wrote no run folder (exit {done.returncode})")
    return out


def _number(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def line(v: RunVerdict) -> str:
    """One run's verdict on one line."""
    a, b = ("-" if n is None else str(n) for n in v.records)
    delta = v.delta
    shown = (f"{a} / {b} records" + (f", max |delta| {_number(delta.max_abs_delta)}, same choice "
                                     f"{_number(delta.same_choice)}" if delta and delta.records else ""))
    head = f"{'same' if v.same else 'DIFFERENT':9} {v.name}: {shown}"
    if v.same:
        return head
    sizes = []
    if v.changes:
        moved = ", ".join(f"{c} {_number(d)}" for c, d in v.changes.max_abs_delta.items() if d > 0) or "none"
        counts = ", ".join(f"{c} {n}" for c, n in v.changes.changed.items())
        sizes = [f"max |delta| by column: {moved}; records changed: {counts}"]
    return head + "\n" + "\n".join(f"            {r}" for r in sizes + list(v.reasons[:8]))


def side(ref: str) -> tuple[str, Any]:
    """('folder', path) for an existing folder, ('commit', hash) for a commit; ValueError otherwise."""
    if Path(ref).is_dir():
        return "folder", Path(ref)
    commit = commit_of(ref)
    if commit is None:
        raise ValueError(f"{ref!r} is neither a folder nor a commit of this repository")
    return "commit", commit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="a commit, a run folder or a folder of run folders")
    ap.add_argument("b", help="the same kind of thing as A")
    ap.add_argument("--languages", nargs="+", default=["pt", "en"])
    ap.add_argument("--per-subject", type=int, default=2, help="questions of each demo subject (default 2)")
    ap.add_argument("--shuffles", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--strategies", nargs="+", help="only these of the predefined strategies (default: all)")
    ap.add_argument("--keep", type=Path, help="keep the commits' run folders here (default: a temporary folder)")
    ap.add_argument("--json", type=Path, help="write the verdicts here")
    args = ap.parse_args(argv)
    try:
        (kind_a, a), (kind_b, b) = side(args.a), side(args.b)
        if kind_a != kind_b:
            raise ValueError("A and B must both be commits or both be folders")
        strategies(args.max_new_tokens, args.strategies)
    except ValueError as e:
        print(f"compare_records: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mcqa_compare_") as tmp:
        root = args.keep or Path(tmp)
        if kind_a == "commit":
            root.mkdir(parents=True, exist_ok=True)
            folders = [run_at(commit, root / f"{label}_{commit[:10]}", args) for label, commit in (("a", a), ("b", b))]
        else:
            folders = [a, b]
        try:
            found = verdicts(*folders)
        except (FileNotFoundError, ValueError) as e:
            print(f"compare_records: {e}", file=sys.stderr)
            return 2
    for v in found:
        print(line(v))
    different = [v for v in found if not v.same]
    print(f"overall: {'same' if not different else 'DIFFERENT'} ({len(found) - len(different)} of {len(found)} runs "
          f"the same by the equality rule)")
    if args.json:
        named = {"commit": lambda x: x, "folder": lambda x: Path(x).name}[kind_a]
        settings = ({k: getattr(args, k) for k in ("languages", "per_subject", "shuffles", "max_new_tokens", "model",
                                                   "strategies")}
                    if kind_a == "commit" else None)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "kind": kind_a, "a": named(a), "b": named(b), "date": datetime.date.today().isoformat(),
            "settings": settings, "same": not different, "runs": [v.as_dict() for v in found]}, indent=1) + "\n")
    return 0 if not different else 1


if __name__ == "__main__":
    sys.exit(main())
