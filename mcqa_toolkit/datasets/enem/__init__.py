"""The ENEM loader: exam CSVs, BLUEX-style JSON lists, 2024-style JSONL, and INEP item parameters (ITENS_PROVA).

Sources and their quirks:
- Exam CSV, one per area and booklet, named `[pt_|en_|es_]ENEM_<year>_<area>_CO_PROVA_<code>.csv` (the code is
  INEP's CO_PROVA -> meta["co_prova"]); columns question, body, A..E, year, question_number, test (area),
  answer (letter or "anulada"), language (portuguese/english/spanish). UTF-8 or latin-1.
- BLUEX-style JSON list (gpt-4-enem's ENEM 2022): id, number, question and context, clean `options` or
  letter-prefixed `alternatives` (we prefer `options`), label as a letter of either case,
  has_associated_images, tags IU/ML/BK/CE/DS/MR/TU. The stem is `context` then `question`: real files keep
  some questions wholly in `context` with `question` empty (or the reverse), so an empty field is missing only
  when the question has no text in either (then DatasetError names the record and field `question`); a
  `question` already inside `context` is not repeated.
- 2024-style JSONL (maritaca-ai/enem, one file per edition): id ("questao_01"), exam (year), IU, ledor,
  question with "[[placeholder]]" where a figure was, alternatives, label ("Anulado" possible), figures,
  description. Each placeholder is replaced, in order, by the matching image description so text-only models
  see what blind candidates hear.
- eduagarcia/enem_challenge rows (Parquet): id, exam_id, exam_year, question_number, question, choices
  {label, text}, answerKey ("ANULADO"); portuguese-benchmark-datasets/BLUEX rows (Parquet): UNICAMP and USP
  entrance-exam questions in the BLUEX-style fields with the key in `answer` (source "bluex", no ENEM area).
  `HUB_LAYOUTS` lists the published layouts of local copies that `load_enem` recognises.
- ITENS_PROVA_<year>.csv (INEP's item parameters): read, split into item sets and attached by `enem.itens_prova`.

Rules: subject = area name (AREA_NAMES), area code in meta["area"]. Areas are read from the CSV `test` column;
for JSON they follow from year and question number (2017+: LC 1-45, CH 46-90, CN 91-135, MT 136-180;
2009-2016: CH, CN, LC, MT in that order). Annulled ("anulada"/"Anulado", any case) -> answer None and
meta["annulled"] True. has_image is True when the source says so (has_associated_images, IU, figures,
descriptions) or when the text carries an audio-description marker (IMAGE_MARKERS: "Descrição da imagem:",
"Descrição do Gráfico A:", "Image description:", ...). Boolean tags go to meta under their own names.
Foreign-language items (the first five LC positions, English or Spanish by the candidate's choice) get
meta["foreign_language"] 'en'/'es' from, in order: a per-record `foreign_language` field; the file order
when the position appears twice in one CSV (booklets print the English items first, then the Spanish
ones); the `foreign_language` argument. Item parameters are matched on (CO_PROVA, area, position) and,
when the booklet lists an English and a Spanish item at a position, on TP_LINGUA (0 English, 1 Spanish).
When a booklet code lists two item sets, the set whose keys agree with the file's answers is used (or the
`item_set` argument's); meta["item_set"] records it (see `enem.itens_prova`). Exam CSVs name their booklet; a
JSON/Parquet source numbers its questions 1-180 without saying which colour's booklet it follows, so its items
get INEP parameters only with `co_prova=` (and every answer must then agree with that booklet's key).

    formats   the record parsers of each source format (exam CSV row, BLUEX-style JSON, 2024-style JSONL,
              enem_challenge rows)
    loader    load_enem(): files and folders (hub layouts), item parameters attached, filters
"""
from mcqa_toolkit.datasets.enem.formats import AREA_NAMES, LANGUAGES, ExamFile, exam_file_info, parse_record
from mcqa_toolkit.datasets.enem.loader import HUB_LAYOUTS, load_enem

__all__ = ["load_enem", "HUB_LAYOUTS", "AREA_NAMES", "LANGUAGES", "ExamFile", "exam_file_info", "parse_record"]
