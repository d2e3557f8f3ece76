"""Pool: a run's blocks of items scored by a Ray cluster's actors; the process that writes the run folder (the
driver) writes every record.

    driver     RayPool (connect, which models go to the workers, close), ClusterOptions / cluster_options (a
               params file's `cluster` block and --ray / --workers), worker_resources, require_ray
    joining    how a driver joins an existing cluster: the node address it registers at, this machine's Ray token
    remote     WorkerGroup (the actors of one model and the run they are on) and RemoteBackend, the driver's view
               of a model loaded on them: a backends.base.PooledBackend (items_per_call, score_blocks, pool_info)
    worker     PoolWorker, what one actor holds and does on its node (a plain class, made an actor by driver)
    scheduler  dispatch(): blocks handed to workers as they free up, given back in block order, each once, through
               lost workers

Ray itself is imported only when a pool connects (`import mcqa_toolkit.run.pool` does not); docs/cluster.md.
"""
from mcqa_toolkit.run.pool.driver import (INSTALL_HINT, SERVED, ClusterOptions, RayPool, check_address,
                                          cluster_options, require_ray, worker_resources)
from mcqa_toolkit.run.pool.scheduler import PoolError

__all__ = ["RayPool", "PoolError", "ClusterOptions", "cluster_options", "check_address", "worker_resources",
           "require_ray", "INSTALL_HINT", "SERVED"]
