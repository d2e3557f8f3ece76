"""Run: administer items to a backend under a strategy and keep the records.

    strategy   Strategy (how the exam is administered), STRATEGIES (the seeds' named strategies), strategy()
    runner     run(): items (every question type) x strategy -> one record per (item, shuffle), resumable
    administer how each question type is asked (letters, generation, yes/no log-probs) and judged
    records    the record factory: every column derived, every record graded by the exam rule
    store      RunDir: every file name of a run folder; load_results / load_min_k over many run folders
    columns    the record column contract
    jobs       params file -> jobs (run folders), resume contract, papermill execution
"""
from mcqa_toolkit.run.runner import plan_shots, run
from mcqa_toolkit.run.store import RunDir, load_min_k, load_results
from mcqa_toolkit.run.strategy import STRATEGIES, Strategy, build_strategy, strategy

__all__ = ["run", "plan_shots", "RunDir", "load_results", "load_min_k", "Strategy", "STRATEGIES", "strategy",
           "build_strategy"]
