"""load_enem(): ENEM items from a file or a folder (exam CSVs, JSON, JSONL, Parquet, hub layouts), with INEP's
item parameters attached and the language / area filters (rules: the package docstring)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mcqa_toolkit.datasets.common import UniqueIds, concat, parse_records, reports_skipped
from mcqa_toolkit.datasets.enem.formats import CSV_REQUIRED, exam_file_info, language_of, parse_record
from mcqa_toolkit.enem.attach import ItemParams
from mcqa_toolkit.enem.itens_prova import AREAS, TP_LINGUA
from mcqa_toolkit.items import DatasetError, Item, ItemSet
from mcqa_toolkit.textfiles import csv_entries, json_entries, jsonl_file_entries


def _csv_rows(path: Path, foreign_language: str | None) -> tuple[list, dict[int, str | None], str | None]:
    """Rows of one exam CSV (a row that cannot be read, or whose position is listed more than twice, as its
    DatasetError), per row the foreign language implied by file order (a position listed twice: 1st English, 2nd
    Spanish) or else the `foreign_language` argument, and the exam version's language: the language of its
    questions outside the foreign-language positions (None when the rows do not say)."""
    rows = list(csv_entries(path, encodings=("utf-8", "latin-1"), required=CSV_REQUIRED))
    counts = Counter(str(rec["question_number"]).strip() for _, rec in rows if isinstance(rec, dict))
    seen: Counter = Counter()
    implied = {}
    for k, (n, rec) in enumerate(rows):
        if not isinstance(rec, dict):
            continue
        key = str(rec["question_number"]).strip()
        if counts[key] > 2:
            rows[k] = (n, DatasetError(path, n, "question_number", f"question {key} appears {counts[key]} times"))
        implied[n] = ("en", "es")[seen[key]] if counts[key] == 2 else foreign_language
        seen[key] += 1
    own = Counter(language_of(rec.get("language")) for _, rec in rows
                  if isinstance(rec, dict) and counts[str(rec["question_number"]).strip()] == 1)
    own.pop(None, None)
    return rows, implied, own.most_common(1)[0][0] if own else None


@reports_skipped
def load_enem(path: str | Path, item_params: str | Path | None = None, language: str | None = None,
              area: str | None = None, foreign_language: str | None = None,
              item_set: int | Mapping[int, int] | None = None,
              co_prova: int | Mapping[str, int] | None = None, strict: bool = False) -> ItemSet:
    """Load ENEM items from an exam CSV, a directory of exam CSVs, a BLUEX-style JSON list, a JSONL file, a
    Parquet file, or a local copy of a Hugging Face release (see HUB_LAYOUTS): a directory is searched for
    exam CSVs at its top and for .jsonl / .parquet files (and top-level .json lists) at any depth.

    item_params: an ITENS_PROVA csv whose 3PL parameters are attached by (booklet, area, position) (see
    `ItemParams`) to the items of its year; exam CSVs name their booklet, other sources need `co_prova` (an
    int, or {area: CO_PROVA}): the booklet whose numbering the file follows (every answer is then checked
    against its key).
    item_set: for booklet codes that list two item sets, which one (1, 2, or {CO_PROVA: set}); by default the
    set whose keys agree with the file's answers (an error when both or neither do).
    language: keep only the exam version in this language ('pt'/'en'/'es': `Item.exam_language`, so a Portuguese
    exam keeps its English and Spanish questions); also the language of JSON sources (default 'pt').
    area: keep only this area (CH/CN/LC/MT). foreign_language: 'en'/'es' for foreign-language items whose
    language the file does not tell (see the module docstring). Filters that leave nothing raise DatasetError.
    strict: refuse the first record that cannot be used instead of leaving it out and naming it
    (mcqa_toolkit.datasets.common). Attaching item parameters is all or nothing: an item the booklet does not
    list, or whose answer contradicts its key, refuses the load.
    """
    path = Path(path)
    for name, value, allowed in (("area", area, AREAS), ("foreign_language", foreign_language, tuple(TP_LINGUA)),
                                 ("language", language, ("pt", "en", "es"))):
        if value is not None and value not in allowed:
            raise ValueError(f"{name}={value!r}; expected one of {allowed}")
    params = ItemParams(item_params) if item_params is not None else None
    name, ids = f"enem:{path.name}", UniqueIds(path)
    if not path.exists():
        raise DatasetError(path, "-", None, "file or directory not found")
    files = _files(path) if path.is_dir() else [path]
    sets = []
    for f in files:
        suffix = f.suffix.lower()
        if suffix == ".csv":
            records, implied, version = _csv_rows(f, foreign_language)
            info = exam_file_info(f)

            def parse_row(rec, n, f=f, fl=implied, info=info, version=version):
                return parse_record(rec, n, f, language, fl[n], info, version)
            parse: Callable[[Any, Any], Item] = parse_row
        elif suffix in (".json", ".jsonl", ".parquet"):
            records = {".json": json_entries, ".jsonl": jsonl_file_entries, ".parquet": _iter_parquet}[suffix](f)

            def parse_entry(rec, n, f=f):
                return _with_booklet(parse_record(rec, n, f, language, foreign_language), co_prova)
            parse = parse_entry
        else:
            raise DatasetError(f, "-", None, "expected an exam .csv, a .json list, a .jsonl or .parquet file or a "
                                             "directory")
        pairs, skipped = parse_records(records, parse, f, ids, strict=strict)
        if params is not None:  # the whole file first: its answers choose the booklet's item set
            # BLUEX's UNICAMP/USP items have no INEP row; a multi-edition source meets this year's file only
            enem = [(n, it) for n, it in pairs if it.source == "enem" and params.year in (None, it.year)]
            attached = dict(params.attach_all(enem, f, item_set)) if enem else {}
            pairs = [(n, attached.get(n, it)) for n, it in pairs]
        sets.append(ItemSet([it for _, it in pairs], name, skipped))
    items = concat(sets, name)
    if language is not None:
        items = _keep(items, path, "language", language, lambda it: it.exam_language == language)
    if area is not None:
        items = _keep(items, path, "area", area, lambda it: it.meta["area"] == area)
    return items


# Hugging Face releases whose local copies `load_enem` reads (files as published; see docs/enem.md):
HUB_LAYOUTS = {
    "maritaca-ai/enem": "<year>.jsonl per edition (2022-2024; its Parquet conversion <year>/train/*.parquet): id "
                        "questao_NN, exam, question with [[placeholder]] figures, alternatives, label, figures, "
                        "description, IU, ledor",
    "eduagarcia/enem_challenge": "data/train-*.parquet: id, exam_id, exam_year, question_number, question, choices "
                                 "{label, text}, answerKey (ANULADO when annulled)",
    "portuguese-benchmark-datasets/BLUEX": "data/questions-*.parquet: id (UNICAMP_/USP_<year>_<n>), number, "
                                          "question, alternatives, answer, associated_images, subject, tags; "
                                          "UNICAMP and USP entrance exams, not ENEM (source 'bluex', no INEP row)",
}


def _files(path: Path) -> list[Path]:
    """A directory's exam CSVs (top level), .jsonl and .parquet files (any depth) and .json lists (top level),
    skipping hidden folders (.git, .cache of a hub download)."""
    found = sorted(f for f in path.iterdir() if exam_file_info(f) or f.suffix.lower() == ".json")
    found += sorted(f for f in path.rglob("*") if f.suffix.lower() in (".jsonl", ".parquet") and f.is_file()
                    and not any(part.startswith(".") for part in f.relative_to(path).parts))
    if not found:
        raise DatasetError(path, "-", None, "no exam CSV named like [pt_]ENEM_2022_CN_CO_PROVA_1092.csv, nor "
                                            ".json/.jsonl/.parquet files here")
    return found


def _iter_parquet(path: Path):
    """(row number from 1, row as a dict of Python values) of a Parquet file."""
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as err:    # pyarrow's errors: not a Parquet file, truncated, ...
        raise DatasetError(path, "-", None, f"not a readable Parquet file ({type(err).__name__}: {err})") from None
    return enumerate(rows, start=1)


def _with_booklet(item: Item, co_prova: int | Mapping[str, int] | None) -> Item:
    """A JSON/Parquet ENEM item with the booklet code its numbering follows (the caller's `co_prova`)."""
    if co_prova is None or item.source != "enem" or item.meta.get("co_prova") is not None:
        return item
    area = item.meta.get("area")
    code = (None if area is None else co_prova.get(area)) if isinstance(co_prova, Mapping) else co_prova
    return item if code is None else item.with_(meta={**item.meta, "co_prova": int(code)})


def _keep(items: ItemSet, path: Path, key: str, wanted: str, predicate) -> ItemSet:
    kept = items.filter(predicate)
    if not len(kept):
        raise DatasetError(path, "-", key, f"no items with {key} {wanted!r}")
    return kept
