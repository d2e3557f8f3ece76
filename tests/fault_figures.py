"""The fault suite's table: every fault it injects, what is guaranteed, the test that shows it (FAULTS), and the
figures the tests measure (Figures). scripts/reliability_table.py runs the suite with MCQA_RELIABILITY set to a
temporary file, keeps the figures as results/tests/reliability.json and renders docs/reliability.md from these rows
and that JSON; no number in either file is typed by hand."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV = "MCQA_RELIABILITY"  # where the suite writes its figures (JSON); unset: they are only checked, not kept
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Fault:
    fault: str
    guarantee: str
    test: str  # tests/<folder>/<module>.py::<test>


FAULTS: dict[str, Fault] = {
    "two_writers": Fault(
        "two `mcqa run` started at once on one params file",
        "one writer per run folder: the second reports the combination as running elsewhere (pid, host, start "
        "time) and goes on with the others; every record exactly once, equal to an undisturbed run",
        "tests/faults/test_one_writer.py::test_two_mcqa_run_at_once_write_every_record_once"),
    "second_run": Fault(
        "a second run() / run_job() on a folder another process is writing",
        "stops at once (before loading a model) with one sentence naming the holder's pid, host and start time",
        "tests/faults/test_one_writer.py::test_a_second_writer_stops_at_once_naming_the_holder"),
    "stale_lock": Fault(
        "the lock holder killed with SIGKILL",
        "the lock is taken over (the dead holder is reported) and the run resumes",
        "tests/faults/test_one_writer.py::test_a_stale_lock_from_a_killed_process_is_taken_over"),
    "duplicates": Fault(
        "a records.jsonl holding two records of one (item, shuffle) (two writers before the lock)",
        "finalising keeps one record per (item, shuffle), the first written; the drop is logged",
        "tests/faults/test_one_writer.py::test_finalising_keeps_one_record_per_item_and_shuffle"),
    "kill_points": Fault(
        "SIGKILL at seeded random points of a run (every Python call of the package is a candidate), then a "
        "resume in a new process",
        "nothing lost, nothing duplicated: records, summary and Min-K% table equal to an uninterrupted run",
        "tests/faults/test_kill_points.py::test_sigkill_at_random_points_then_resume"),
    "cache_kill": Fault(
        "SIGKILL while the request cache is being written",
        "an entry is there whole or not at all (atomic writes): no damaged entry afterwards",
        "tests/faults/test_kill_points.py::test_request_cache_writes_are_atomic_under_sigkill"),
    "server_killed": Fault(
        "the llama-cpp-python server killed (SIGKILL) mid-run, then restarted",
        "the run stops with one clear line; the re-run sends only the requests never answered and ends with "
        "zero missing and zero duplicated records, equal to an undisturbed run (one whose server was restarted at the "
        "same point: `server history max delta` is how far a run without the restart is, docs/backends.md)",
        "tests/faults/test_server_killed.py::test_server_killed_mid_run_then_restarted"),
    "retry_storm": Fault(
        "429 / 503 for a while, with Retry-After in seconds, as an HTTP date, in milliseconds, or none",
        "the run finishes; every wait is the documented one (Retry-After, else backoff x 2^n with jitter "
        "[1, 1.1)) on an injected clock; records equal to an undisturbed run",
        "tests/faults/test_retry_storms.py::test_a_storm_is_waited_out_within_the_documented_bounds"),
    "retry_budget": Fault(
        "a storm longer than max_retry_seconds",
        "the run stops cleanly with one line naming the budget, keeps its records, and resumes afterwards",
        "tests/faults/test_retry_storms.py::test_the_retry_budget_stops_a_run_cleanly"),
    "disk_full_append": Fault(
        "the disk fills up while records are appended (RLIMIT_FSIZE in a child process)",
        "one RunWriteError naming records.jsonl; the JSONL stays readable (the partial line is taken back); "
        "resume completes",
        "tests/faults/test_full_disk.py::test_disk_full_while_appending_records"),
    "disk_full_parquet": Fault(
        "the disk fills up while records.parquet is written",
        "one RunWriteError naming records.parquet; no half-written file; the JSONL intact; resume completes",
        "tests/faults/test_full_disk.py::test_disk_full_while_writing_parquet"),
    "cache_corrupt": Fault(
        "request cache entries cut short, altered, or holding another request's answer",
        "reported with their path (and counted in usage), never used: the request is sent again",
        "tests/faults/test_corruption.py::test_damaged_cache_entries_are_reported_and_never_used"),
    "records_corrupt": Fault(
        "a damaged records.jsonl line (garbage, NUL bytes, cut short, not a record)",
        "an error naming the file and line; the file is left as it was; nothing is computed from it",
        "tests/faults/test_corruption.py::test_a_damaged_records_line_is_reported_with_its_path"),
    "fuzz_loaders": Fault(
        "mutated copies of our fixtures of every loader format (truncation, wrong types, wrong encodings, "
        "duplicated ids, huge fields, NUL bytes)",
        "every input loads or raises DatasetError naming file, record and field; never another exception, "
        "never a hang",
        "tests/faults/test_fuzz_inputs.py::test_fuzzed_loader_inputs"),
    "fuzz_hub": Fault(
        "mutated rows of an in-memory dataset given to load_hub (Hugging Face `datasets` rows)",
        "every row set loads or raises DatasetError naming the dataset, row and field",
        "tests/faults/test_fuzz_inputs.py::test_fuzzed_hub_rows"),
    "fuzz_params": Fault(
        "mutated params files",
        "`mcqa run --dry-run` exits 0; or 1 with one `cannot start` line per refused combination; or 2 with "
        "exactly one `mcqa: error:` line; never a traceback",
        "tests/faults/test_fuzz_inputs.py::test_fuzzed_params_files"),
    "fuzz_microdata": Fault(
        "mutated ENEM microdata files",
        "scored, or DatasetError naming file, row and field (strict), or counted as problems (lenient)",
        "tests/faults/test_fuzz_inputs.py::test_fuzzed_enem_microdata"),
    "ray_worker_killed": Fault(
        "a Ray pool's worker process killed (SIGKILL inside its 4th backend call) mid-run",
        "its blocks are computed by the other worker (sent again once Ray reports the loss, or copied first by "
        "the idle one); Ray restarts the worker; every record written once, in order, equal to an in-process run",
        "tests/run/pool/test_driver.py::test_a_worker_killed_mid_run_ends_with_every_record_once"),
    "ray_node_lost": Fault(
        "a Ray worker node (its raylet and the worker on it) killed mid-run",
        "the lost worker's blocks are computed on the other node; every record written once, equal to an "
        "in-process run",
        "tests/run/pool/test_driver.py::test_a_worker_node_removed_mid_run_ends_with_every_record_once"),
    "ray_driver_killed": Fault(
        "the Ray run's driver killed (SIGKILL) mid-run; its workers die with it",
        "the records written are kept as they were; a new driver resumes and writes the others, each once, equal "
        "to an in-process run",
        "tests/run/pool/test_driver.py::test_the_driver_killed_mid_run_resumes_from_its_records"),
    "memory": Fault(
        "an MMLU-sized run: 14,042 items (MMLU's test split) x 4 options, loglik, Min-K%, lookup-table backend",
        "peak RSS under 1.5 GB (records stream to disk)",
        "tests/faults/test_memory.py::test_mmlu_sized_run_stays_under_the_memory_bound"),
}


class Figures:
    """What the fault tests measured, by fault id; written to $MCQA_RELIABILITY (JSON) at the end of the
    session when that variable is set. Never into the checkout: a test run does not modify tracked files, and
    results/tests/reliability.json is written by scripts/reliability_table.py only after the whole suite passed."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {}

    def add(self, fault: str, **numbers: Any) -> None:
        if fault not in FAULTS:
            raise KeyError(f"unknown fault {fault!r}; add it to FAULTS")
        self.rows.setdefault(fault, []).append(numbers)

    def write(self) -> Path | None:
        target = os.environ.get(ENV)
        if not target:
            return None
        path = Path(target)
        if path.resolve().is_relative_to(REPO):
            raise ValueError(f"{ENV}={target} is inside the checkout: the fault suite writes its figures to a "
                             "temporary file (scripts/reliability_table.py copies them into docs/ after a passing run)")
        path.write_text(json.dumps(self.rows, indent=1, sort_keys=True))
        return path


def merged(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """One fault's figures: counts summed over its test cases, `peak_*` and `max_*` maximised."""
    out: dict[str, Any] = {}
    for entry in entries:
        for key, value in entry.items():
            if key not in out:
                out[key] = value
            elif key.startswith(("peak_", "max_")):
                out[key] = max(out[key], value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] += value
    return out


def leaves(node: Any, path: tuple = ()) -> Any:
    """(path, value) of every number and string inside a JSON value (the figures files' tests change each)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from leaves(value, path + (i,))
    else:
        yield path, node
