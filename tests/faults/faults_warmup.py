"""Imported by the fault suite's forkserver only (faults_children.start_child): one run warms every lazy import
and cache up before any child is forked."""
from faults_children import warm_up

warm_up()
