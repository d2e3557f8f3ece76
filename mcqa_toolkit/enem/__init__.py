"""Everything ENEM-specific: INEP's item files (ITENS_PROVA: booklets, positions, keys, 3PL parameters, booklet codes
with two item sets, INEP's errata), official scoring that reproduces INEP's NU_NOTA, microdata streaming, case
lists, validation against INEP and the measured reproducibility of each exam.

    from mcqa_toolkit import enem
    enem.score_answers("CEAEA...", booklet_items, "MT")            # one candidate's official score
    enem.score_microdata("MICRODADOS_ENEM_2023.csv", "ITENS_PROVA_2023.csv", "MT")   # every candidate, streamed
    enem.score_cases("inep_cases_dev.json", "enem_inep/")          # real candidates with INEP's score
    enem.agreement(2019, "MT")                                     # is INEP's score reproduced for this exam?

    itens_prova      INEP's item file: read (errata applied), check, split booklets with two item sets
    attach           ItemParams: INEP's (a, b, c) on exam questions (positions: where each area sits, by year)
    errata/          INEP's errata (errata.json, or a user's file): items scored with other parameters or keys than
                     published, the blank-sheet rule; the file format; and errata discovered from data (discover:
                     discover_errata(items, microdata or cases) -> entries with their evidence; search, greedy,
                     estimate, sample), imported on demand (it needs scipy.optimize)
    booklet          one booklet's items in answer-string order and the vectorised scoring kernel
    official         score_answers, EnemScore: one answer string scored as INEP does
    microdata        score_microdata, iter_microdata: every candidate of a microdata file, streamed
    cases            case lists (candidates with their official score): read and score
    agreement        running agreement counts of our scores against NU_NOTA (pure pandas)
    reproducibility  the measured agreement per exam (reproducibility.csv), its warnings and results columns
    validate         `mcqa validate-enem`: microdata or a case list -> agreement tables (+ figure)
    candidates       a score among the real candidates of its exam: percentile, score distribution (streamed)
    simulate         synthetic INEP-format microdata, with INEP's errors planted if asked (tests, benchmarks)
The psychometrics underneath (3PL, EAP) are the generic mcqa_toolkit.irt; the exam-file loader (questions, from
ENEM CSVs, BLUEX-style JSON or the Hugging Face releases) is mcqa_toolkit.datasets.enem.
"""
from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS
from mcqa_toolkit.enem.candidates import (
    CandidateScores,
    candidate_scores,
    items_area,
    official_scale,
    percentile,
    place_among_candidates,
)
from mcqa_toolkit.enem.cases import read_cases, score_cases
from mcqa_toolkit.enem.errata import ErrataWarning, errata_table
from mcqa_toolkit.enem.microdata import iter_microdata, score_microdata
from mcqa_toolkit.enem.official import EnemScore, score_answers
from mcqa_toolkit.enem.reproducibility import (
    EnemEstimatedParamsWarning,
    EnemNotValidatedWarning,
    EnemReproducibilityWarning,
    agreement,
    reproducibility_table,
)

__all__ = ["ENEM_CONSTANTS", "EnemScore", "score_answers", "score_microdata", "iter_microdata", "read_cases",
           "score_cases", "agreement", "reproducibility_table", "errata_table", "ErrataWarning",
           "EnemReproducibilityWarning", "EnemNotValidatedWarning", "EnemEstimatedParamsWarning",
           "CandidateScores", "candidate_scores", "items_area", "official_scale", "percentile",
           "place_among_candidates"]
