"""HELM run folders (`scenario_state.json` + `per_instance_stats.json`) -> responses.

HELM itself is not installed here (crfm-helm pins torch 2.14 with CUDA, datasets 3 and pandas 2, which would
replace this project's pinned torch), so this reader follows HELM's documented dataclasses
(stanford-crfm/helm: benchmark/adaptation/scenario_state.py, request_state.py, scenarios/scenario.py,
common/request.py, benchmark/metrics/statistic.py) as `dataclasses.asdict` writes them:

  scenario_state.json   {"adapter_spec": {"method", "model", "model_deployment", "max_train_instances", ...},
                         "request_states": [{"instance": {"input": {"text"}, "references": [{"output": {"text"},
                         "tags": ["correct"]}], "split", "id"}, "reference_index", "request_mode",
                         "train_trial_index", "output_mapping": {"A": "<reference text>", ...}, "request":
                         {"prompt", ...}, "result": {"success", "completions": [{"text", "logprob", "tokens":
                         [{"text", "logprob", "top_logprobs"}]}]}, "num_train_instances",
                         "num_conditioning_tokens", ...}]}
  per_instance_stats.json  [{"instance_id", "train_trial_index", "stats": [{"name": {"name", "split"}, "mean",
                         "sum", "count", ...}]}]

`multiple_choice_joint` runs (one request shows every option under a letter) give the letter the model
wrote, the options in the order of `output_mapping`, and letter log-probs when the first token kept its
top log-probs; `multiple_choice_separate_original` runs (one request per reference) give per-option
log-likelihoods (the reference's tokens after `num_conditioning_tokens`), whose argmax is the choice.
Train trials are the shuffles. Per-instance `exact_match` is kept in extra.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcqa_toolkit.interop.match import SourceQuestion, option_index
from mcqa_toolkit.interop.runfolder import Response, Source
from mcqa_toolkit.items import LETTERS, DatasetError

__all__ = ["read_helm"]

EVAL_SPLITS = ("test", "valid", None)
JOINT, SEPARATE = "multiple_choice_joint", ("multiple_choice_separate_original", "multiple_choice_separate_calibrated")


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DatasetError(path, e.lineno, None, f"not JSON ({e.msg})") from None


def _need(obj: Mapping[str, Any], key: str, path: Path, where: str) -> Any:
    if not isinstance(obj, Mapping) or key not in obj:
        raise DatasetError(path, where, key, "missing")
    return obj[key]


def _question(state: Mapping[str, Any], shown: list[str], path: Path, where: str) -> SourceQuestion:
    inst = _need(state, "instance", path, where)
    refs = _need(inst, "references", path, where)
    correct = [r["output"]["text"] for r in refs if "correct" in (r.get("tags") or [])]
    answer = shown.index(correct[0]) if len(correct) == 1 and correct[0] in shown else None
    iid = inst.get("id")
    stem = str(_need(inst["input"], "text", path, where))
    return SourceQuestion(key=f"{path.name}: {where} (instance {iid})", stem=stem,
                          options=tuple(shown), answer=answer, ids=(str(iid),) if iid else ())


def _completion(state: Mapping[str, Any]) -> Mapping[str, Any] | None:
    result = state.get("result") or {}
    if not result.get("success", False) or not result.get("completions"):
        return None
    return result["completions"][0]


def _joint(state: Mapping[str, Any], path: Path, where: str, stats: Mapping[tuple, dict]) -> Response:
    mapping = state.get("output_mapping") or {}
    letters = sorted(mapping)
    if not letters or letters != list(LETTERS[:len(letters)]):
        raise DatasetError(path, where, "output_mapping", f"expected letters A.. as keys, got {letters}")
    shown = [mapping[L] for L in letters]
    q = _question(state, shown, path, where)
    comp = _completion(state)
    if comp is None:
        return Response(q, status="error", extra={"helm": {"error": (state.get("result") or {}).get("error")}})
    choice = option_index(str(comp.get("text", "")).strip().split("\n")[0].strip(), shown)
    scores = None
    tokens = comp.get("tokens") or []
    top = tokens[0].get("top_logprobs") if tokens else None
    if isinstance(top, Mapping) and top:
        best = {L: -math.inf for L in letters}
        for tok, lp in top.items():
            if tok.strip() in best:
                best[tok.strip()] = max(best[tok.strip()], float(lp))
        scores = [v if v > -math.inf else math.nan for v in best.values()]
    key = (q.ids[0] if q.ids else None, state.get("train_trial_index", 0))
    return Response(q, scores=scores, choice=-1 if choice is None else choice, generated_text=str(comp.get("text", "")),
                    extraction_rule="helm output_mapping", extra={"helm": stats.get(key, {})})


def _separate(group: list[Mapping[str, Any]], path: Path, where: str, stats: Mapping[tuple, dict]) -> Response:
    refs = group[0]["instance"]["references"]
    shown = [r["output"]["text"] for r in refs]
    scores = [math.nan] * len(shown)
    for st in group:
        comp, i = _completion(st), st.get("reference_index")
        if comp is None or i is None:
            continue
        n0 = int(st.get("num_conditioning_tokens") or 0)
        toks = comp.get("tokens") or []
        scores[int(i)] = sum(float(t["logprob"]) for t in toks[n0:]) if toks else float(comp.get("logprob", math.nan))
    q = _question(group[0], shown, path, where)
    finite = [s for s in scores if not math.isnan(s)]
    choice = scores.index(max(finite)) if finite else -1
    key = (q.ids[0] if q.ids else None, group[0].get("train_trial_index", 0))
    return Response(q, scores=scores, choice=choice, status=None if finite else "error",
                    extra={"helm": stats.get(key, {})})


def read_helm(path: str | Path) -> tuple[Source, list[Response]]:
    """(Source, responses) of one HELM run folder (or its scenario_state.json)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    folder = p if p.is_dir() else p.parent
    state_file = folder / "scenario_state.json"
    if not state_file.exists():
        raise FileNotFoundError(f"{folder}: no scenario_state.json (a HELM run folder holds one)")
    state = _load(state_file)
    spec = _need(state, "adapter_spec", state_file, "top level")
    method = str(spec.get("method", ""))
    if method != JOINT and method not in SEPARATE:
        raise DatasetError(state_file, "adapter_spec", "method", f"{method!r}: only multiple-choice runs "
                           f"({JOINT}, {', '.join(SEPARATE)}) can be imported")
    stats_file = folder / "per_instance_stats.json"
    stats: dict[tuple, dict] = {}
    for entry in _load(stats_file) if stats_file.exists() else []:
        values = {s["name"]["name"]: s.get("mean") for s in entry.get("stats", []) if isinstance(s.get("name"), dict)}
        stats[(entry.get("instance_id"), entry.get("train_trial_index", 0))] = {
            k: values[k] for k in ("exact_match", "quasi_exact_match") if k in values}
    states = [s for s in _need(state, "request_states", state_file, "top level")
              if s.get("instance", {}).get("split") in EVAL_SPLITS and s.get("request_mode") in (None, "original")]
    responses: list[Response] = []
    if method == JOINT:
        responses = [_joint(s, state_file, f"request_states[{i}]", stats) for i, s in enumerate(states)]
    else:
        groups: dict[tuple, list] = {}
        for s in states:
            groups.setdefault((s["instance"].get("id"), s.get("train_trial_index", 0)), []).append(s)
        responses = [_separate(g, state_file, f"instance {k[0]} trial {k[1]}", stats) for k, g in groups.items()]
    model = spec.get("model_deployment") or spec.get("model") or "unknown"
    source = Source(tool="helm", version=str(state.get("helm_version", "unknown")),
                    files=tuple(f for f in (state_file, stats_file) if f.exists()), model=str(model),
                    task=folder.name, method="loglik" if method in SEPARATE else "generate",
                    normalization="sum" if method in SEPARATE else "",
                    shots=int(spec.get("max_train_instances", 0) or 0), details={"adapter_method": method})
    return source, responses
