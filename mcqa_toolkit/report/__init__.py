"""Report: LaTeX tables (tables), paper figures (plots), the question inspector widget (inspector), the DIF
report's persons, tables and classes (dif), and what the analysis notebooks share (headline: load the runs,
record headline numbers).

    from mcqa_toolkit.report import plots, tables, load_runs, writable_dir, as_headline, write_headline
"""
from mcqa_toolkit.report.headline import Runs, as_headline, load_runs, writable_dir, write_headline

__all__ = ["Runs", "load_runs", "writable_dir", "as_headline", "write_headline"]
