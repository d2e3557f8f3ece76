"""Imported by the fault suite's forkserver only (faults_children.start_child), before any child is forked: one
run warms every lazy import and cache up, and records.jsonl is fsynced at every append in the children (the
strictest setting; normally at most once a second), so the events of a run do not depend on how fast it runs and
a kill point is the same point in every child."""
from faults_children import warm_up

import mcqa_toolkit.records.store as store

store.SYNC_SECONDS = 0.0
warm_up()
