"""The errata format: one `Erratum` per correction, read from and written to JSON (errata.json beside this package,
or a user's file written by `mcqa validate-enem ... --discover-errata`), and shown as a table.

A file is {"about": "...", "errata": [entries that correct item rows], "rules": [scoring rules]} (a bare list of
entries is read too). Every entry has `id`, `kind`, `year` and `area`; the rest depends on the kind:

    zip    reference_booklet, signature, not_scored [CO_ITEM...], unpublished [{co_item, a, b, c, ...}]
    key    co_item, published_key (A-E, or X: INEP's mark of an annulled item), correct_key (A-E),
           published_params [a, b, c], booklets (optional)
    annul  co_item, published_key, published_params [a, b, c], booklets (optional)
    blank  (a rule: an all-blank answer sheet takes the all-wrong pattern's score instead of 0)

and, for people: what (what INEP got wrong), evidence (one sentence), gain (exact scores without -> with it),
source ("discovered": found by `enem.errata.discover` from candidates' official scores; "hand": found by looking, with
`reason` saying why the search does not find it), n_candidates (those of the exam-area it was found on), fixed
and broken (the candidates it makes exact / no longer exact: case ids or 0-based microdata rows). An `unpublished`
item's (a, b, c) are estimates: its `estimated` says how, `n_candidates` on how many, `cross_validation` the
held-out agreement. `enem.errata` applies entries; `booklet_signature` pins a zip to the file it was written for.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit.items import DatasetError

PARAMS = ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C")
KINDS = ("zip", "key", "annul")          # corrections of item rows: the "errata" list
RULE_KINDS = ("blank",)                  # scoring rules: the "rules" list
SOURCES = ("discovered", "hand")
AREAS = ("CH", "CN", "LC", "MT")
LETTERS = ("A", "B", "C", "D", "E")
PUBLISHED_KEYS = LETTERS + ("X",)        # INEP's TX_GABARITO "X": annulled in the file (INEP may still score it)


@dataclass(frozen=True)
class Erratum:
    """One entry (see the module docstring)."""

    id: str
    kind: str                      # KINDS or RULE_KINDS
    year: int
    area: str
    what: str = ""                 # what INEP got wrong
    evidence: str = ""             # one sentence
    gain: str = ""                 # exact scores without -> with this entry
    source: str = "hand"           # SOURCES
    reason: str = ""               # hand entries: why the search does not find them
    n_candidates: int | None = None
    fixed: tuple[str, ...] = ()    # candidates made exact (case ids, or 0-based microdata rows)
    broken: tuple[str, ...] = ()   # candidates exact before and not after
    # zip
    reference_booklet: int | None = None
    not_scored: tuple[int, ...] = ()
    unpublished: tuple[dict, ...] = ()       # {co_item, a, b, c, estimated, n_candidates, cross_validation, ...}
    signature: str = ""
    # key / annul: one item, in `booklets` (all booklets of the area when empty), as published
    co_item: int | None = None
    booklets: tuple[int, ...] = ()
    published_key: str = ""
    correct_key: str = ""
    published_params: tuple[float, ...] = field(default=())


@dataclass(frozen=True)
class ErratumResult:
    """What happened to one erratum on one file: status (enem.errata.ERRATUM_STATUSES), a sentence, rows changed."""

    id: str
    status: str
    detail: str
    rows: tuple[int, ...] = field(default=())


_NEEDS = {"zip": ("reference_booklet", "signature"), "key": ("co_item", "published_key", "correct_key",
                                                             "published_params"),
          "annul": ("co_item", "published_key", "published_params"), "blank": ()}
_TUPLES = ("fixed", "broken", "not_scored", "unpublished", "booklets", "published_params")
_NAMES = {f.name for f in fields(Erratum)}


def load_errata(path: str | Path) -> tuple[Erratum, ...]:
    """An errata file -> its entries (corrections, then rules). Raises DatasetError naming the file, the entry
    (1-based, counted over "errata" then "rules") and the field of the first bad value."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such errata file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DatasetError(path, "-", None, f"not a JSON errata file: {e}") from None
    return parse_errata(data, path)


def parse_errata(data: Any, path: Any = "errata") -> tuple[Erratum, ...]:
    """Parsed JSON (an object with "errata" and optional "rules" lists, or one list) -> validated entries."""
    if isinstance(data, dict):
        unknown = set(data) - {"about", "errata", "rules"}
        if unknown or not isinstance(data.get("errata", []), list) or not isinstance(data.get("rules", []), list):
            raise DatasetError(path, "-", None, "expected {\"errata\": [...], \"rules\": [...]}"
                               + (f"; unknown key(s) {sorted(unknown)}" if unknown else ""))
        raw = [*data.get("errata", []), *data.get("rules", [])]
    elif isinstance(data, list):
        raw = data
    else:
        raise DatasetError(path, "-", None, f"expected a JSON object or list, got {type(data).__name__}")
    out = [_entry(e, n, path) for n, e in enumerate(raw, start=1)]
    ids = [e.id for e in out]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DatasetError(path, ids.index(dup) + 1, "id", f"duplicate id {dup!r}")
    return tuple(out)


def _entry(raw: Any, n: int, path: Any) -> Erratum:
    def bad(name: str | None, message: str) -> DatasetError:
        return DatasetError(path, n, name, message)

    if not isinstance(raw, dict):
        raise bad(None, f"expected an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _NAMES)
    if unknown:
        raise bad(unknown[0], "unknown field")
    for name in ("id", "kind", "year", "area"):
        if name not in raw:
            raise bad(name, "missing")
    kind = raw["kind"]
    if kind not in KINDS + RULE_KINDS:
        raise bad("kind", f"{kind!r}; expected one of {KINDS + RULE_KINDS}")
    missing = [k for k in _NEEDS[kind] if raw.get(k) in (None, "", [])]
    if missing:
        raise bad(missing[0], f"missing (a {kind} entry needs {list(_NEEDS[kind])})")
    e: dict[str, Any] = {k: tuple(v) if k in _TUPLES and isinstance(v, list) else v for k, v in raw.items()}
    checks = [("id", isinstance(e["id"], str) and e["id"] != "", "a non-empty string"),
              ("year", _is_int(e["year"]), "an integer"), ("area", e["area"] in AREAS, f"one of {AREAS}"),
              ("source", e.get("source", "hand") in SOURCES, f"one of {SOURCES}"),
              ("reference_booklet", e.get("reference_booklet") is None or _is_int(e["reference_booklet"]),
               "an integer"),
              ("co_item", e.get("co_item") is None or _is_int(e["co_item"]), "an integer"),
              ("not_scored", all(map(_is_int, e.get("not_scored", ()))), "a list of item codes"),
              ("booklets", all(map(_is_int, e.get("booklets", ()))), "a list of booklet codes"),
              ("published_key", e.get("published_key", "A") in PUBLISHED_KEYS, f"one of {PUBLISHED_KEYS}"),
              ("correct_key", e.get("correct_key", "A") in LETTERS + ("",), f"one of {LETTERS}"),
              ("published_params", kind not in ("key", "annul") or _abc(e.get("published_params")),
               "[a, b, c] with a > 0 and 0 <= c < 1")]
    for name, ok, want in checks:
        if not ok:
            raise bad(name, f"{raw.get(name)!r}: expected {want}")
    for u in e.get("unpublished", ()):
        if not isinstance(u, dict) or not _is_int(u.get("co_item")) or not _abc([u.get(p) for p in "abc"]):
            raise bad("unpublished", f"{u!r}: expected {{co_item, a, b, c}} with a > 0 and 0 <= c < 1")
    if kind == "zip" and not (e.get("not_scored") or e.get("unpublished")):
        raise bad("not_scored", "a zip needs not_scored or unpublished items")
    for name in ("fixed", "broken"):
        e[name] = tuple(str(x) for x in e.get(name, ()))
    return Erratum(**e)


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _abc(p: Any) -> bool:
    try:
        a, b, c = (float(x) for x in p)
    except (TypeError, ValueError):
        return False
    return bool(a > 0 and np.isfinite(b) and 0 <= c < 1)


def entry_dict(e: Erratum) -> dict:
    """An entry as JSON: the common fields, then the fields its kind uses, then evidence (empty ones left out)."""
    keep = ("id", "kind", "year", "area", "source", *_NEEDS[e.kind], "not_scored", "unpublished", "booklets",
            "what", "evidence", "gain", "reason", "n_candidates", "fixed", "broken")
    out = {}
    for name in dict.fromkeys(keep):
        value = getattr(e, name)
        if name in ("not_scored", "unpublished") and e.kind != "zip" or name == "booklets" and e.kind == "zip":
            continue
        if value in ("", (), None) and name not in ("not_scored",) + _NEEDS[e.kind]:
            continue
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def errata_json(entries: Iterable[Erratum], about: str) -> str:
    """The file's text: {"about", "errata": corrections, "rules": scoring rules}."""
    entries = list(entries)
    data = {"about": about, "errata": [entry_dict(e) for e in entries if e.kind in KINDS],
            "rules": [entry_dict(e) for e in entries if e.kind in RULE_KINDS]}
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return re.sub(r"\[\s+((?:\"[^\"\n]*\"|-?[\d.]+)(?:,\s+(?:\"[^\"\n]*\"|-?[\d.]+))*)\s+\]",   # lists of ids: one line
                  lambda m: "[" + re.sub(r",\s+", ", ", m[1]) + "]", text) + "\n"


def booklet_signature(rows: pd.DataFrame) -> str:
    """A short hash of one booklet's rows of one area as published: CO_POSICAO, TP_LINGUA, CO_ITEM,
    TX_GABARITO, IN_ITEM_ABAN and a, b, c (6 decimals), in position order (16 hex digits of SHA-256)."""
    lingua = rows["TP_LINGUA"].fillna(-1) if "TP_LINGUA" in rows else pd.Series(-1, index=rows.index)
    df = rows.assign(LINGUA_=lingua).sort_values(["CO_POSICAO", "LINGUA_"], kind="stable")
    lines = [";".join([str(int(r.CO_POSICAO)), str(int(r.LINGUA_)), "" if pd.isna(r.CO_ITEM) else str(int(r.CO_ITEM)),
                       str(r.TX_GABARITO), str(int(r.IN_ITEM_ABAN)), *(_num(getattr(r, p)) for p in PARAMS)])
             for r in df.itertuples()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def _num(x: float) -> str:
    return "" if x is None or np.isnan(x) else f"{x:.6f}"


def table_frame(entries: Iterable[Erratum]) -> pd.DataFrame:
    """Entries as a table, one row each: id, year, area, kind, source, rows (what it changes), what, evidence,
    gain."""
    rows = []
    for e in entries:
        if e.kind == "zip":
            target = (f"booklet {e.reference_booklet}; not scored {list(e.not_scored)}"
                      + (f"; unpublished {[u['co_item'] for u in e.unpublished]}" if e.unpublished else ""))
        elif e.kind == "blank":
            target = "all-blank sheets: the all-wrong score"
        else:
            change = f"key {e.published_key} -> {e.correct_key}" if e.kind == "key" else "annulled"
            target = f"item {e.co_item}: {change}" + (f" in booklets {list(e.booklets)}" if e.booklets else "")
        rows.append({"id": e.id, "year": e.year, "area": e.area, "kind": e.kind, "source": e.source, "rows": target,
                     "what": e.what, "evidence": e.evidence, "gain": e.gain})
    return pd.DataFrame(rows, columns=["id", "year", "area", "kind", "source", "rows", "what", "evidence", "gain"])


def markdown(entries: Iterable[Erratum]) -> str:
    """docs/enem.md's errata section: one line per entry, then the items scored with estimated parameters."""
    entries = list(entries)
    lines = ["| erratum | source | rows | what INEP got wrong | evidence | exact on the development set (in-sample) |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r.id} | {r.source} | {r.rows} | {r.what} | {r.evidence} | {r.gain} |"
              for r in table_frame(entries).itertuples()]
    estimated = [(e, u) for e in entries for u in e.unpublished]
    if estimated:
        lines += ["", "Items INEP scored with parameters it never published (ESTIMATES, from the development cases; "
                  "rows carrying them have PARAMS_ESTIMATED = True and scores using them warn):", "",
                  "| item | (a, b, c) | estimated | candidates | held-out agreement | independent check |",
                  "|---|---|---|---:|---|---|"]
        lines += [f"| {e.year} {e.area} {u['co_item']} | ({u['a']}, {u['b']}, {u['c']}) | {u.get('estimated', '')} | "
                  f"{u.get('n_candidates', '')} | {u.get('cross_validation', '')} | {u.get('independent_check', '')} |"
                  for e, u in estimated]
    return "\n".join(lines)
