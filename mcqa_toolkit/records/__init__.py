"""Records: the record format and the run folder, below everything that writes or reads runs.

    columns    the column contract of a record (COLUMNS, STATUSES, KEY) and frames conformed to it
    grading    the exam rule that grades one response against its item's key (every question type)
    factory    make_record(): one record per (item, shuffle), every column derived, graded by the exam rule
    equality   the equality rule of two runs' records (timing aside, scores within 1e-6)
    files      atomic writes (temporary name, fsync, rename) and JSON side files
    lock       RunLock: one writer per run folder (flock, re-entrant, held only by the process that writes)
    identity   RunIdentity: what determines a run's records, one shape for every maker of run folders, hashed;
               the identity older folders recorded, read into it
    state      run_state(): what a folder holds (complete: RunDir.is_complete); open_for_write(): the one way in
               for a writer (check, lock, check again); OpenRun.complete(): summary.json, the last step
    store      RunDir: every file of one run folder (records, run.json, items.jsonl, ...), appended, compacted and
               read back
    audit_dir  AuditDir: a contamination audit's folder, a run folder of its own kind (run.json, lock, a letters run
               and two tables; complete: every step asked of it done)
    dataset    RunDataset: the dataset a folder says its run was given (name, loader arguments, exam version)
    results    run_dirs / complete_runs / load_results / load_min_k over many run folders

Imports items.py and nothing else of the package: run/ writes run folders through it; measure/, report/,
interop/ and the notebooks read them through it.
"""
from mcqa_toolkit.records.audit_dir import AuditDir
from mcqa_toolkit.records.columns import COLUMNS, KEY, STATUSES, records_frame
from mcqa_toolkit.records.dataset import RunDataset, run_dataset
from mcqa_toolkit.records.equality import assert_same_records, record_differences
from mcqa_toolkit.records.factory import decode_response, make_record, run_fields
from mcqa_toolkit.records.identity import RunIdentity, recorded_identity
from mcqa_toolkit.records.lock import RunLocked
from mcqa_toolkit.records.results import complete_runs, load_min_k, load_results, run_dirs
from mcqa_toolkit.records.state import OpenRun, RunRefused, RunState, check_writable, open_for_write, run_state
from mcqa_toolkit.records.store import RunDir

__all__ = ["COLUMNS", "KEY", "STATUSES", "records_frame", "assert_same_records", "record_differences",
           "decode_response", "make_record", "run_fields", "RunLocked", "load_min_k", "load_results", "run_dirs",
           "complete_runs", "OpenRun", "RunRefused", "RunState", "run_state", "check_writable", "open_for_write",
           "RunDir", "AuditDir", "RunIdentity", "recorded_identity", "RunDataset", "run_dataset"]
