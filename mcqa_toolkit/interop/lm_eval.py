"""lm-evaluation-harness `--log_samples` files <-> run folders.

What lm-eval writes (lm_eval.loggers.evaluation_tracker, 0.4.x): `<output>/<model>/samples_<task>_<date>.jsonl`,
one line per document and filter, with `doc_id`, `doc` (the dataset row), `target` (as text), `arguments`
({"gen_args_i": {"arg_0": context, "arg_1": continuation or generation kwargs}}; older versions a list of
lists), `resps` and `filtered_resps` (every value turned into text: `[ll, is_greedy]` per option for
loglikelihood requests, the generated text for generate_until), `filter`, `metrics` and each metric's value
(`acc`, `acc_norm`, `exact_match`, ...), `doc_hash`, `prompt_hash`, `target_hash`; and beside it
`results_<date>.json` (`config` with model and model_args, `configs[task]` with output_type and
target_delimiter, `n-shot`, `lm_eval_version`).

Import: multiple_choice tasks give per-option log-likelihoods (option_scores; `normalization="char"` divides
by the choice's length in characters, lm-eval's acc_norm) and the choice is their argmax; generate_until tasks
give the filtered answer, read as a letter or an option's text. Export writes the same layout with our full
record in `doc["mcqa"]` (interop.payload), so importing an export restores every record.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit import __version__
from mcqa_toolkit.interop.match import SourceQuestion, as_int, option_index
from mcqa_toolkit.interop.payload import PAYLOAD_KEY, payload_of, shown_scores
from mcqa_toolkit.interop.runfolder import Response, Source
from mcqa_toolkit.items import LETTERS, DatasetError, Item

__all__ = ["read_lm_eval", "export_lm_eval", "sample_files"]

STEM_KEYS = ("question", "query", "stem", "problem", "input", "text")
ID_KEYS = ("item_id", "id", "question_id", "qid", "parallel_id")
_YEAR_NUMBER = re.compile(r"((?:19|20)\d\d)\D+?(\d{1,3})$")  # "2022_91", "ENEM_2022_CN_9102_q91"
_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")


def sample_files(path: str | Path) -> list[Path]:
    """The samples_*.jsonl files at `path` (a file, or a folder searched at any depth), sorted."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    files = [p] if p.is_file() else sorted(p.rglob("samples_*.jsonl"))
    if not files:
        raise FileNotFoundError(f"{p}: no lm-eval samples_*.jsonl file")
    return files


def _results_for(samples: Path) -> tuple[Path | None, dict[str, Any]]:
    m = _SAMPLES.match(samples.name)
    candidates = [samples.with_name(f"results_{m['date']}.json")] if m else []
    candidates += sorted(samples.parent.glob("results_*.json"))
    for c in candidates:
        if c.exists():
            return c, json.loads(c.read_text(encoding="utf-8"))
    return None, {}


def _task_of(samples: Path) -> str:
    m = _SAMPLES.match(samples.name)
    return m["task"] if m else samples.stem


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if line.strip():
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError as e:
                    raise DatasetError(path, n, None, f"not JSON ({e.msg})") from None


def _arguments(sample: Mapping[str, Any], path: Path, n: int) -> list[tuple[Any, ...]]:
    args = sample.get("arguments")
    if isinstance(args, dict):
        return [tuple(v[k] for k in sorted(v, key=lambda k: int(k.split("_")[1])))
                for _, v in sorted(args.items(), key=lambda kv: int(kv[0].split("_")[-1]))]
    if isinstance(args, list):
        return [tuple(a) for a in args]
    raise DatasetError(path, n, "arguments", "expected the request arguments (a dict of gen_args_i or a list)")


def _float(text: Any, path: Path, n: int, field: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        raise DatasetError(path, n, field, f"{text!r} is not a number") from None


def _choices(doc: Mapping[str, Any]) -> list[str] | None:
    for key in ("choices", "options", "endings", "alternatives"):
        v = doc.get(key)
        if isinstance(v, dict) and isinstance(v.get("text"), list):
            return [str(x) for x in v["text"]]
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            return list(v)
    return None


def _question(sample: Mapping[str, Any], task: str, options: list[str], path: Path, n: int) -> SourceQuestion:
    doc = sample.get("doc")
    if not isinstance(doc, dict):
        raise DatasetError(path, n, "doc", "expected the document as an object")
    stem = next((str(doc[k]) for k in STEM_KEYS if isinstance(doc.get(k), str)), None)
    if stem is None:
        stem = str(_arguments(sample, path, n)[0][0])
    target = str(sample.get("target", ""))
    if re.fullmatch(r"\d+", target) and int(target) < len(options):
        answer: int | None = int(target)
    else:
        answer = option_index(target, options)
    ids = tuple(str(doc[k]) for k in ID_KEYS if isinstance(doc.get(k), (str, int)) and not isinstance(doc.get(k), bool))
    year, number = doc.get("year", doc.get("exam_year")), doc.get("number", doc.get("question_number"))
    m = next((found for found in (_YEAR_NUMBER.search(i) for i in ids) if found), None)
    if m and year is None:
        year = m[1]
    if m and number is None:
        number = m[2]
    return SourceQuestion(key=f"{path.name}:{n} (doc_id {sample.get('doc_id')})", stem=stem, options=tuple(options),
                          answer=answer, ids=ids, year=as_int(year), number=as_int(number),
                          language=doc.get("language") if isinstance(doc.get("language"), str) else None,
                          subject=str(doc.get("subject", "")))


def _response(sample: Mapping[str, Any], output_type: str, task: str, delimiter: str, normalization: str,
              path: Path, n: int) -> Response:
    args = _arguments(sample, path, n)
    filtered = sample.get("filtered_resps")
    if not isinstance(filtered, list):
        raise DatasetError(path, n, "filtered_resps", "expected a list")
    metrics = {k: sample[k] for k in sample.get("metrics", []) if k in sample}
    extra: dict[str, Any] = {"lm_eval": {"doc_id": sample.get("doc_id"), "filter": sample.get("filter"),
                                         "doc_hash": sample.get("doc_hash"), "prompt_hash": sample.get("prompt_hash"),
                                         "metrics": metrics}}
    payload = (sample.get("doc") or {}).get(PAYLOAD_KEY)
    if output_type in ("multiple_choice", "loglikelihood"):
        options = [str(a[1])[len(delimiter):] if str(a[1]).startswith(delimiter) else str(a[1]) for a in args]
        doc_options = _choices(sample["doc"]) if isinstance(sample.get("doc"), dict) else None
        options = doc_options if doc_options and len(doc_options) == len(options) else options
        if len(filtered) != len(options):
            raise DatasetError(path, n, "filtered_resps", f"{len(filtered)} responses for {len(options)} choices")
        ll = [_float(r[0] if isinstance(r, list) else r, path, n, "filtered_resps") for r in filtered]
        scores = np.asarray(ll, dtype=float)
        if normalization == "char":
            scores = scores / np.array([max(len(o), 1) for o in options], dtype=float)
        extra["lm_eval"].update(loglik=ll, is_greedy=[str(r[1]) == "True" for r in filtered if isinstance(r, list)])
        choice = int(np.argmax(np.where(np.isnan(scores), -np.inf, scores))) if np.isfinite(scores).any() else -1
        return Response(_question(sample, task, options, path, n), scores=scores.tolist(), choice=choice,
                        extraction_rule="", extra=extra, payload=payload)
    doc = sample.get("doc") or {}
    options = _choices(doc) or []
    if not options and payload is None:
        raise DatasetError(path, n, "doc", "a generate_until sample without choices in its doc: only multiple-"
                           "choice questions can be imported")
    answer = filtered[0] if filtered else None
    raw = sample.get("resps") or [[""]]
    text = raw[0][0] if isinstance(raw[0], list) and raw[0] else str(raw[0])
    picked = option_index(str(answer), options) if isinstance(answer, str) and options else None
    return Response(_question(sample, task, options, path, n), choice=-1 if picked is None else picked,
                    generated_text=str(text), extraction_rule=f"lm-eval filter {sample.get('filter', '')}".strip(),
                    extra=extra, payload=payload)


def read_lm_eval(path: str | Path, normalization: str = "sum", task: str | None = None,
                 filter_name: str | None = None) -> tuple[Source, list[Response]]:
    """(Source, responses) of one task's samples file (or the only / named task under a folder).
    normalization: "sum" (lm-eval's acc) or "char" (acc_norm). filter_name: which filter's answers to read
    when a generative task logged several (default: the first in the file)."""
    if normalization not in ("sum", "char"):
        raise ValueError(f"normalization {normalization!r}: lm-eval logs 'sum' (acc) or 'char' (acc_norm)")
    files = sample_files(path)
    tasks = {_task_of(f): f for f in files}
    if task is not None:
        files = [f for t, f in tasks.items() if t == task]
    if len(files) != 1:
        raise ValueError(f"{path}: {len(files)} samples files for task {task!r}; tasks here: {sorted(map(str, tasks))}")
    samples = files[0]
    task = task or _task_of(samples)
    results_file, results = _results_for(samples)
    config = (results.get("configs") or {}).get(task, {})
    first = next(_lines(samples), (0, {}))[1]
    output_type = config.get("output_type") or (
        "multiple_choice" if all(isinstance(r, list) for r in first.get("filtered_resps", [])) else "generate_until")
    delimiter = config.get("target_delimiter", " ")
    responses, seen_filter = [], filter_name
    for n, sample in _lines(samples):
        seen_filter = seen_filter or sample.get("filter")
        if sample.get("filter", seen_filter) != seen_filter:
            continue
        responses.append(_response(sample, output_type, task, delimiter, normalization, samples, n))
    run_config = results.get("config") or {}
    model_args = run_config.get("model_args")
    model = results.get("model_name") or (model_args.get("pretrained") if isinstance(model_args, dict) else None) \
        or str(run_config.get("model", "unknown"))
    generative = output_type not in ("multiple_choice", "loglikelihood")
    version = results.get("lm_eval_version") or results.get("exported_by") or "unknown"
    source = Source(tool="lm-eval", version=str(version),
                    files=tuple(f for f in (samples, results_file) if f is not None), model=str(model), task=task,
                    method="generate" if generative else "loglik", normalization="" if generative else normalization,
                    shots=int((results.get("n-shot") or {}).get(task, 0) or 0),
                    seed=int(run_config.get("random_seed", 0) or 0),
                    details={"output_type": output_type, "filter": seen_filter, "model_args": model_args,
                             "task_hash": (results.get("task_hashes") or {}).get(task)})
    return source, responses


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _context(item: Item, perm: list[int]) -> str:
    shown = "\n".join(f"{LETTERS[i]}. {item.options[p]}" for i, p in enumerate(perm))
    return f"Question: {item.stem}\n{shown}\nAnswer:"


def export_lm_eval(records: pd.DataFrame, items: Mapping[str, Item], out_dir: str | Path, task: str) -> Path:
    """Write one run's records as `samples_<task>_<date>.jsonl` and `results_<date>.json` under `out_dir`.
    Records with option scores become multiple_choice samples (per-option `[score, is_greedy]`), the others
    generate_until samples (the generated text and the answer as filtered response). The context is a plain
    rendering of the shown question (our records do not keep the prompt text)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    date = "1970-01-01T00-00-00.000000"  # fixed: one run exports to the same file names every time
    lines, correct = [], []
    generative = records["method"].eq("generate").all()
    for doc_id, rec in enumerate(records.to_dict("records")):
        item = items[rec["item_id"]]
        perm = [int(p) for p in rec["permutation"]]
        doc = {"id": item.item_id, "exam": item.exam, "year": item.year, "number": item.meta.get("number"),
               "language": item.language, "question": item.stem, "choices": [item.options[p] for p in perm],
               "label": int(rec["correct_position"]), PAYLOAD_KEY: payload_of(rec, item)}
        ctx, target = _context(item, perm), str(int(rec["correct_position"]))
        acc = float(bool(rec["correct"]))
        if generative:
            args = {"gen_args_0": {"arg_0": ctx, "arg_1": {"until": ["\n\n"]}}}
            answer = LETTERS[int(rec["choice_position"])] if rec["choice_position"] >= 0 else str(rec["response"])
            resps, filtered, metrics = [[rec["generated_text"]]], [answer], {"exact_match": acc}
        else:
            scores = shown_scores(rec)
            args = {f"gen_args_{i}": {"arg_0": ctx, "arg_1": " " + item.options[p]} for i, p in enumerate(perm)}
            resps = [[[str(float("nan") if s is None else s), "False"]] for s in scores]
            filtered, metrics = [r[0] for r in resps], {"acc": acc}
        lines.append({"doc_id": doc_id, "doc": doc, "target": target, "arguments": args, "resps": resps,
                      "filtered_resps": filtered, "filter": "none", "metrics": list(metrics),
                      "doc_hash": _hash(json.dumps(doc, indent=2, ensure_ascii=False)),
                      "prompt_hash": _hash(ctx), "target_hash": _hash(target), **metrics})
        correct.append(acc)
    samples = out / f"samples_{task}_{date}.jsonl"
    samples.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    metric = "exact_match" if generative else "acc"
    model = str(records["model"].iloc[0])
    results = {"results": {task: {"alias": task, f"{metric},none": float(np.mean(correct))}},
               "configs": {task: {"task": task, "output_type": "generate_until" if generative else "multiple_choice",
                                  "target_delimiter": " "}},
               "n-shot": {task: int(records["shots"].iloc[0])}, "config": {"model": "mcqa_toolkit", "model_args":
                                                                          {"model": model}},
               "model_name": model, "lm_eval_version": None, "exported_by": f"mcqa_toolkit {__version__}",
               "date": date}
    (out / f"results_{date}.json").write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    return samples
