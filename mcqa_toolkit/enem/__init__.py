"""Everything ENEM-specific: INEP's item files (ITENS_PROVA: booklets, positions, keys, 3PL parameters, booklet codes
with two item sets), official scoring that reproduces INEP's NU_NOTA, microdata streaming, validation against INEP.

    from mcqa_toolkit import enem
    enem.score_answers("CEAEA...", booklet_items, "MT")            # one candidate's official score
    enem.score_microdata("MICRODADOS_ENEM_2023.csv", "ITENS_PROVA_2023.csv", "MT")   # every candidate, streamed

    itens_prova  INEP's item file: read, check, split booklets with two item sets, attach (a, b, c) to Items
    booklet      one booklet's items in answer-string order and the vectorised scoring kernel
    scoring      score_answers, score_microdata, iter_microdata, EnemScore
    agreement    running agreement counts of our scores against NU_NOTA (pure pandas)
    validate     `mcqa validate-enem`: a microdata file -> agreement tables + figure
    simulate     synthetic INEP-format microdata (tests, benchmarks)
The psychometrics underneath (3PL, EAP) are the generic mcqa_toolkit.irt; the exam-file loader (questions, from
ENEM CSVs or BLUEX-style JSON) is mcqa_toolkit.datasets.enem.
"""
from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS
from mcqa_toolkit.enem.scoring import EnemScore, iter_microdata, score_answers, score_microdata

__all__ = ["ENEM_CONSTANTS", "EnemScore", "score_answers", "score_microdata", "iter_microdata"]
