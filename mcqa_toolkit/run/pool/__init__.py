"""Pool: a run's blocks of items scored by a Ray cluster's actors; the process that writes the run folder (the
driver) writes every record.

    driver     RayPool (connect, which models go to the workers, close), ClusterOptions / cluster_options (a
               params file's `cluster` block and --ray / --workers), require_ray
    sizing     worker_resources: what a worker asks of its node (a CPU worker asks the in-process run's torch
               threads: in_process_threads, capped at the largest node by fitting_threads)
    joining    how a driver joins an existing cluster: the node address it registers at, this machine's Ray token
    remote     WorkerGroup (the actors of one model and the run they are on) and RemoteBackend, the driver's view
               of a model loaded on them: a backends.base.PooledBackend (items_per_call, score_blocks, pool_info)
    worker     PoolWorker, what one actor holds and does on its node (a plain class, made an actor by driver)
    scheduler  dispatch(): blocks handed to workers as they free up, given back in block order, each once, through
               lost workers

Ray itself is imported only when a pool connects (`import mcqa_toolkit.run.pool` does not); docs/cluster.md.
"""
from mcqa_toolkit.run.pool.driver import (
    INSTALL_HINT,
    SERVED,
    ClusterOptions,
    RayPool,
    check_address,
    cluster_options,
    require_ray,
)
from mcqa_toolkit.run.pool.scheduler import PoolError
from mcqa_toolkit.run.pool.sizing import in_process_threads, worker_resources

__all__ = ["RayPool", "PoolError", "ClusterOptions", "cluster_options", "check_address", "worker_resources",
           "in_process_threads", "require_ray", "INSTALL_HINT", "SERVED"]
