"""Run: administer items to a backend under a strategy and write the records (through records/).

    recipe     run_job(): every step of one run (items, backends, strategy, judges, records, Min-K%, summary);
               BackendCache (each model loaded once per session); called by the notebook, the CLI, batch mode
    jobs       Job (what one run is) and a params file expanded into jobs (run folders)
    strategy   Strategy (how the exam is administered), STRATEGIES (the seeds' named strategies), strategy()
    runner     run(): items (every question type) x strategy -> one record per (item, shuffle), resumable
    dispatch   the one dispatcher: how each item is asked (letters by the method table, generation per question
               type, yes/no log-probs) and judged
    adaptive   the CAT loop (run_adaptive): one item at a time, the most informative at the current theta
    preflight  every combination of a params file checked without a model, before a kernel or a run folder
    grid       `mcqa run`: every incomplete job's run notebook, cheapest first, in one kernel (session); a run
               reaches the kernel only as the notebook's papermill parameters, what it did is read from its folder
    batch      API batch mode: collect a job's requests, submit them, fetch the results into the request cache
    session    KernelSession: one Jupyter kernel that executes many papermill notebooks in turn, and the JSON
               control requests (Jupyter comms) served between them; no source is built for the kernel
    kernel     the run notebook's kernel: notebook_run (the notebook's one call) and KernelRuns (BackendCache, Ray
               pool, the open run folder): it opens, locks, writes and closes each run folder
    pool/      a Ray cluster's actors scoring a run's blocks (RayPool; the driver writes the records)

The record format and the run folder (columns, record factory, grading, equality, RunDir, lock, state) are
the records/ package below this one.
"""
from mcqa_toolkit.run.runner import plan_shots, run
from mcqa_toolkit.run.strategy import STRATEGIES, Strategy, build_strategy, strategy

__all__ = ["run", "plan_shots", "Strategy", "STRATEGIES", "strategy", "build_strategy"]
