"""An MMLU-sized run in a fresh process, for tests/faults/test_memory.py: 14,042 items (MMLU's test split) x 4
options in 57 subject files of MMLU's CSV format, synthetic text of MMLU-like length, administered under
log-likelihood scoring through the lookup-table backend by run_job (records, Min-K%, summary). Prints one JSON
line: peak RSS (MB, this process's own high-water mark), seconds, records written.
Usage: python memory_run.py OUT_DIR [N_ITEMS]"""
from __future__ import annotations

import csv
import json
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: lookup_backend

from lookup_backend import LookupBackend  # noqa: E402

from mcqa_toolkit.datasets import load  # noqa: E402
from mcqa_toolkit.run.jobs import Job  # noqa: E402
from mcqa_toolkit.run.recipe import BackendCache, run_job  # noqa: E402

SUBJECTS = 57
WORDS = ("the of a to in is that for it as with was on be by this are which from at or an have not were energy "
         "cell force mass light atom acid gene market law state river price court cause effect theory").split()


def write_mmlu(folder: Path, n_items: int, seed: int = 0) -> None:
    """MMLU-format CSVs (question, A, B, C, D, answer; no header) named <subject>_test.csv."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(SUBJECTS):
        count = n_items // SUBJECTS + (s < n_items % SUBJECTS)
        with open(folder / f"subject_{s:02d}_test.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            for _ in range(count):  # MMLU: about 60 words a question, 6 an option
                writer.writerow([" ".join(rng.choices(WORDS, k=rng.randint(20, 100))) + "?"]
                                + [" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) for _ in range(4)]
                                + [rng.choice("ABCD")])


def peak_rss_mb() -> float:
    """This process's peak RSS: VmHWM of /proc/self/status. Not getrusage's ru_maxrss, which on Linux keeps the
    high-water mark of the memory the process had before exec: a child of a pytest run that holds models reports
    the parent's peak (2.5 GB in a full suite for a run that itself peaks near 0.4 GB)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):  # not Linux: ru_maxrss is KiB on Linux/BSD, bytes on macOS
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 1024 ** (2 if sys.platform == "darwin" else 1)


def main(out: Path, n_items: int) -> None:
    t0 = time.perf_counter()
    write_mmlu(out / "mmlu", n_items)
    rng = random.Random(1)
    table = {it.item_id: [rng.uniform(-6, -0.1) for _ in range(4)] for it in load("mmlu", path=out / "mmlu")}
    cache = BackendCache()
    cache.put("lookup", LookupBackend(table))
    strategy = {"name": "loglik", "method": "loglik", "normalization": "token"}
    job = Job("lookup", "mmlu", {"path": str(out / "mmlu")}, "en", strategy, out / "run", shuffles=1)
    result = run_job(job, cache, progress=False)
    lines = sum(1 for _ in open(job.run_dir.jsonl, "rb"))
    print(json.dumps({"peak_rss_mb": peak_rss_mb(),
                      "seconds": time.perf_counter() - t0, "records": len(result.records), "jsonl_lines": lines,
                      "items": len(table)}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 14_042)
