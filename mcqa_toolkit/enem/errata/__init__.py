"""INEP's errata: where a published ITENS_PROVA file disagrees with the scores INEP itself gave, as data, and how
they are found from data.

    format     the errata file format: Erratum, load / check / write, a table of entries (errata.json beside it is
               the shipped file)
    apply      the shipped errata (errata(), rules()) and applying errata to an item file's rows (apply_errata)
    discover   errata from data: discover_errata(items, microdata or cases) -> entries with their evidence;
               cross_validate (held-out agreement of what is discovered)
    search     the search space of one exam-area: its rows as arrays, its candidates, corrections and their effect
    greedy     the search: corrections accepted round by round, bounded
    estimate   an item's (a, b, c) estimated from candidates' official scores (unpublished parameters)
    sample     a bounded sample of a microdata file as a case list

The package imports only `format` and `apply` (what reading an item file needs); discovery is imported on demand
(it needs scipy.optimize and the scoring kernel of enem.booklet, which itself applies the blank-sheet rule).
"""
from mcqa_toolkit.enem.errata.apply import (
    ERRATUM_STATUSES,
    ErrataWarning,
    apply_errata,
    blank_all_wrong,
    errata,
    errata_markdown,
    errata_table,
    rules,
    zip_correction,
)
from mcqa_toolkit.enem.errata.format import (
    KINDS,
    PARAMS,
    Erratum,
    ErratumResult,
    booklet_signature,
    load_errata,
    parse_errata,
)

__all__ = ["ERRATUM_STATUSES", "ErrataWarning", "Erratum", "ErratumResult", "apply_errata", "blank_all_wrong",
           "booklet_signature", "errata", "errata_markdown", "errata_table", "load_errata", "parse_errata", "rules",
           "zip_correction", "KINDS", "PARAMS"]
