"""OAB (Exame de Ordem, the Brazilian bar exam by FGV), first phase, as legal-nlp/oab-exams publishes it: one plain
text file per exam, `official/raw/<year>-<n>.txt` (`<n>a`: the reapplication of edition n, another exam).

A file is a run of blocks:

    Questão 71 NULL              "Questão N"; " NULL" (or a leading "NULL") = annulled by the exam board
    AREA CIVIL                   the legal area (ETHICS, CIVIL-PROCEDURE, ...), often empty: "AREA"
    <the stem's paragraphs>
    OPTIONS
    A) ...                       hard-wrapped lines; the key is marked "X:CORRECT)"
    D:CORRECT) ...

Text is PDF extraction hard-wrapped at ~60 characters: lines of a paragraph are joined with a space (a line that
starts an enumeration, "I -", "II.", "a)", "-", keeps its line break), paragraphs are separated by one newline.
Mojibake (UTF-8 read as cp1252: "QuestÃ£o") is repaired per question where the repair is unambiguous
(`datasets.mojibake`; meta["mojibake"] = "repaired"); what cannot be repaired is kept, marked meta["mojibake"] =
"unrepaired" and warned about (TextRepairWarning, once per load).
A file that is not UTF-8 is read as cp1252.

A question that cannot be used is left out and named (ItemSet.skipped, one warning; strict=True refuses it;
datasets.common): annulled ("NULL", even when the file still marks a key), without question or option text, with
fewer than two options or an empty one, options out of order or text before option A, or not exactly one option
marked :CORRECT; so is text before the first "Questão N" line (named by its line, field "header"). Exams have 80
four-option questions (100 in the first three); nothing here assumes either. `path` is one exam file or a folder: its
files named `<year>-<n>[a].txt` are read (the release's answer sheets `-ans.txt`, `.xml` and `.plain` renderings are not
exams). Items are `oab-<year>-<n>[a]-q<N>` of exam `OAB_<year>-<n>[a]`, subject = the area in lower case; a record
is numbered by the line of its "Questão N" header.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from mcqa_toolkit.datasets.common import UniqueIds, concat, items_from_records, reports_skipped
from mcqa_toolkit.datasets.mojibake import Repair, TextRepairWarning, repair
from mcqa_toolkit.items import LETTERS, DatasetError, Item, ItemSet
from mcqa_toolkit.textfiles import read_text

# "Questão 12", "Questão 71 NULL", "NULL Questão 71"; "Quest" + anything short covers a mojibake "QuestÃ£o"
_HEADER = re.compile(r"^[ \t]*(NULL[ \t]+)?Quest\S{1,6}[ \t]+(\d+)[ \t]*(NULL)?[ \t]*$")
_AREA = re.compile(r"^AREA\b[ \t]*(.*)$")
_OPTION = re.compile(r"^([A-J])(:CORRECT)?\)[ \t]*(.*)$")
_ENUMERATION = re.compile(r"^(?:[IVX]{1,5}\s*[-.)–—]|[a-j]\)|[-–•])\s")
# <year>-<edition>[a], alone or inside a longer name (a "_sample" excerpt of a release file)
_EXAM_FILE = re.compile(r"^(?P<year>\d{4})-(?P<edition>\d{1,3})(?P<re>a?)\.txt$")
_EXAM_NAME = re.compile(r"(?<!\d)(?P<year>(?:19|20)\d{2})-(?P<edition>\d{1,3})(?P<re>a?)(?![\da-z])")


def _reflow(lines: list[str]) -> str:
    """Hard-wrapped lines -> text: paragraphs joined by a newline, their lines by a space (enumerations kept)."""
    paragraphs: list[str] = []
    current: list[str] = []
    for raw in lines + [""]:
        line = " ".join(raw.split())
        if not line or (_ENUMERATION.match(line) and current):
            if current:
                paragraphs.append(" ".join(current))
            current = [line] if line else []
        else:
            current.append(line)
    return "\n".join(paragraphs)


def _options(lines: list[tuple[int, str]], path: Path, n: int, qid: str, item_id: str
             ) -> tuple[tuple[str, ...], list[int]]:
    """(option texts, indices of the options marked :CORRECT) from the lines after OPTIONS."""
    texts: list[list[str]] = []
    keys = []
    for line_no, line in lines:
        m = _OPTION.match(line.strip())
        if m:
            if LETTERS.index(m[1]) != len(texts):
                raise DatasetError(path, n, "OPTIONS", f"{qid}: option {m[1]} (line {line_no}) out of order; "
                                   f"expected {LETTERS[len(texts)]}", item_id)
            if m[2]:
                keys.append(len(texts))
            texts.append([m[3]])
        elif texts:
            texts[-1].append(line)
        elif line.strip():
            raise DatasetError(path, n, "OPTIONS", f"{qid}: text before option A (line {line_no}): "
                               f"{line.strip()!r:.60}", item_id)
    return tuple(_reflow(t) for t in texts), keys


def _parse_block(block: list[tuple[int, str]], annulled: bool, number: int, fixed: Repair, n: int, path: Path,
                 exam: str, year: int) -> Item:
    """One question block (the numbered lines after its header, mojibake repaired as `fixed` says) -> Item."""
    qid = f"Questão {number}"
    item_id = f"oab-{exam[4:]}-q{number}"
    body = list(block)
    while body and not body[0][1].strip():
        body.pop(0)
    area = ""
    if body and (m := _AREA.match(body[0][1].strip())):
        area = m[1].strip()
        body.pop(0)
    marker = next((i for i, (_, line) in enumerate(body) if line.strip() == "OPTIONS"), None)
    stem = _reflow([line for _, line in (body if marker is None else body[:marker])])
    options, keys = _options(body[marker + 1:], path, n, qid, item_id) if marker is not None else ((), [])
    if annulled:
        raise DatasetError(path, n, "header", f"annulled by the exam board ({qid} NULL)", item_id)
    if not stem:
        raise DatasetError(path, n, "stem", "no question text", item_id)
    if not any(options):
        raise DatasetError(path, n, "OPTIONS", "no option text", item_id)
    if len(options) < 2 or not all(options):
        raise DatasetError(path, n, "OPTIONS", f"{qid}: {len(options)} option(s), {sum(not o for o in options)} "
                           "of them empty", item_id)
    if len(keys) != 1:
        raise DatasetError(path, n, "key", f"{qid}: {len(keys)} options marked :CORRECT; expected one", item_id)
    meta = {"number": number, "area": area}
    if fixed.repaired or fixed.unrepaired:
        meta.update(mojibake="unrepaired" if fixed.unrepaired else "repaired", mojibake_repaired=fixed.repaired)
    return Item(item_id=item_id, source="oab", exam=exam, stem=stem, options=options, answer=keys[0], year=year,
                subject=area.lower(), language="pt", meta=meta)


def exam_of(path: Path) -> tuple[str, int]:
    """('OAB_2016-20a', 2016) from a file named like `2016-20a.txt` (or containing `2016-20a`)."""
    m = _EXAM_NAME.search(path.stem)
    if not m:
        raise DatasetError(path, "-", None, "file name does not say the exam: expected <year>-<n>[a].txt")
    return f"OAB_{m['year']}-{int(m['edition']):02d}{m['re']}", int(m["year"])


def read_exam(path: Path, ids: UniqueIds, strict: bool = False) -> ItemSet:
    """The questions of one exam file (see the module docstring)."""
    exam, year = exam_of(path)
    # split on newlines only: str.splitlines also splits on U+0085, a character mojibake is made of
    lines = read_text(path, ("utf-8", "cp1252")).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    heads = [(k, m) for k, line in enumerate(lines) if (m := _HEADER.match(line))]
    if not heads:
        raise DatasetError(path, "-", "header", "no 'Questão N' line: not an OAB exam file")
    stray = next((k for k in range(heads[0][0]) if lines[k].strip()), None)
    blocks: list[tuple[int, Any]] = [] if stray is None else [(stray + 1, DatasetError(
        path, stray + 1, "header", f"text before the first 'Questão N' line: {lines[stray]!r:.60}"))]
    for (start, h), end in zip(heads, [k for k, _ in heads[1:]] + [len(lines)], strict=True):
        fixed = repair("\n".join(lines[start + 1:end]))
        block = list(enumerate(fixed.text.split("\n"), start=start + 2))
        blocks.append((start + 1, (block, bool(h[1] or h[3]), int(h[2]), fixed)))

    def parse(rec: tuple[list[tuple[int, str]], bool, int, Repair], n: int) -> Item:
        return _parse_block(*rec, n, path, exam, year)

    return items_from_records(blocks, parse, path,
                              f"oab:{path.name}", ids=ids, strict=strict)


@reports_skipped
def load_oab(path: str | Path, strict: bool = False) -> ItemSet:
    """Load one OAB exam file or a folder of them (`<year>-<n>[a].txt`); a question that cannot be used (annulled,
    no option text, ...: the module docstring) is left out and named with one warning (strict=True: refused)."""
    path = Path(path)
    if not path.exists():
        raise DatasetError(path, "-", None, "file or directory not found")
    files = sorted(f for f in path.iterdir() if _EXAM_FILE.match(f.name)) if path.is_dir() else [path]
    if not files:
        raise DatasetError(path, "-", None, "no <year>-<n>.txt exam files in this directory")
    ids = UniqueIds(path)
    items = concat((read_exam(f, ids, strict) for f in files), f"oab:{path.name}")
    broken = [f"{it.exam} Questão {it.meta['number']} ({it.item_id})" for it in items
              if it.meta.get("mojibake") == "unrepaired"]
    if broken:
        warnings.warn(TextRepairWarning(f"{len(broken)} question(s) keep mojibake that cannot be repaired reliably "
                                        f"(meta 'mojibake' is 'unrepaired'): {', '.join(broken)}"), stacklevel=3)
    return items
