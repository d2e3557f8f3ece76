"""measure.within: requested sizes against what the runs hold (kept in the order asked, the rest named)."""
from __future__ import annotations

from mcqa_toolkit.measure import within


def test_sizes_above_what_the_runs_hold_are_left_out_with_one_line():
    sizes = within([5, 10, 20, 30], 12, "anchor sizes k", "questions with IRT parameters")
    assert sizes.kept == (5, 10) and sizes.left_out == (20, 30) and bool(sizes)
    assert sizes.note == ("anchor sizes k 20, 30 left out: the runs hold 12 questions with IRT parameters; "
                          "kept 5, 10")


def test_nothing_left_means_the_part_is_skipped_and_falsy():
    sizes = within([5, 10], 1, "anchor sizes k")
    assert sizes.kept == () and not sizes
    assert sizes.note.endswith("none is left, so this part is skipped")


def test_every_size_fits_no_note_and_order_kept():
    sizes = within([10, 5, 12], 12, "k")
    assert sizes.kept == (10, 5, 12) and sizes.left_out == () and sizes.note == ""


def test_below_the_minimum_is_left_out_and_said():
    sizes = within([0, 1, 2], 5, "persons", "persons", minimum=2)
    assert sizes.kept == (2,) and sizes.left_out == (0, 1) and "at least 2 needed" in sizes.note
