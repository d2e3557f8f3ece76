"""inspect_ai eval logs (.eval / .json) <-> run folders, read and written with inspect's own functions.

Import (`read_eval_log`): one response per EvalSample. The question is its `input` (text, or the text of its
first user message), `choices` in the order the log lists them and `target` (a letter); the answer is the
letter in the chosen scorer's `Score.answer` (the `multiple_choice` solver + `choice` scorer write it; an
empty answer, e.g. "invalid_response_format", is unanswered); a sample with an `error` is an error record.
When the model's output has log-probs (`--logprobs --top-logprobs K`), the option scores are the log-probs of
the option letters at the first generated token that is one of them (the letter after "ANSWER:"; a letter
outside the top K is NaN, as for API backends). Epochs of one sample are its shuffles (in log order); the
choices are taken as shown, so a task must not use `multiple_choice(shuffle=True)`, whose log lists the
unshuffled choices.

Export (`write_eval_log`): one EvalSample per record, id = item_id and epoch = shuffle + 1, the shown
choices, the key letter as target, the answer as `ANSWER: <letter>` (or the generated text), a `choice`
score, letter log-probs in the output when the record's method is first_token, and our full record in
`metadata["mcqa"]` (interop.payload), so `inspect view` shows our runs and importing them gives them back.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit import __version__
from mcqa_toolkit.interop.match import SourceQuestion, as_int
from mcqa_toolkit.interop.payload import PAYLOAD_KEY, payload_of, shown_scores
from mcqa_toolkit.interop.runfolder import Response, Source
from mcqa_toolkit.items import LETTERS, Item

__all__ = ["read_inspect", "export_inspect", "letter_scores", "log_files"]


def _need_inspect() -> None:
    import importlib.util

    if importlib.util.find_spec("inspect_ai") is None:
        raise ModuleNotFoundError("inspect_ai is not installed: pip install 'mcqa_toolkit[interop]'")


def log_files(path: str | Path) -> list[Path]:
    """The .eval / .json logs at `path` (a file, or a folder searched at any depth), sorted."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.suffix in (".eval", ".json"))
    if not files:
        raise FileNotFoundError(f"{p}: no inspect_ai .eval or .json log")
    return files


def _letter(token: str) -> str:
    return token.replace("\u2581", " ").replace("\u0120", " ").strip()


def letter_scores(output: Any, n_options: int) -> list[float] | None:
    """Log-probs of letters A.. at the first generated token that is one of them (max over a letter's token
    variants, e.g. '▁B' and 'B'); NaN for letters outside the top log-probs; None without log-probs."""
    choices = getattr(output, "choices", None) or []
    logprobs = choices[0].logprobs if choices and choices[0].logprobs is not None else None
    if logprobs is None:
        return None
    letters = LETTERS[:n_options]
    for step in logprobs.content:
        if _letter(step.token) in letters:
            best = {L: -math.inf for L in letters}
            for cand in [*(step.top_logprobs or []), step]:
                L = _letter(cand.token)
                if L in best:
                    best[L] = max(best[L], float(cand.logprob))
            return [v if v > -math.inf else math.nan for v in best.values()]
    return None


def _input_text(sample: Any) -> str:
    if isinstance(sample.input, str):
        return sample.input
    users = [m for m in sample.input if getattr(m, "role", "") == "user"]
    return users[0].text if users else ""


def _question(sample: Any, path: Path) -> SourceQuestion:
    choices = list(sample.choices or [])
    if not choices and PAYLOAD_KEY not in (sample.metadata or {}):
        raise ValueError(f"{path}: sample {sample.id!r} (epoch {sample.epoch}) has no choices: only multiple-"
                         "choice samples can be imported")
    target = sample.target if isinstance(sample.target, str) else (sample.target[0] if sample.target else "")
    target = str(target).strip().upper()
    answer = LETTERS.index(target) if len(target) == 1 and target in LETTERS[:len(choices)] else None
    meta = dict(sample.metadata or {})
    ids = tuple(dict.fromkeys(str(v) for v in (sample.id, meta.get("item_id"), meta.get("id")) if v is not None))
    return SourceQuestion(key=f"{path.name}: sample {sample.id!r} epoch {sample.epoch}", stem=_input_text(sample),
                          options=tuple(choices), answer=answer, ids=ids, year=as_int(meta.get("year")),
                          number=as_int(meta.get("number")), language=meta.get("language"),
                          subject=str(meta.get("subject", "")))


def read_inspect(path: str | Path, scorer: str | None = None) -> tuple[Source, list[Response]]:
    """(Source, responses) of one inspect_ai log (or the only log under a folder). scorer: whose Score
    gives the answer (default: "choice" when present, else the first scorer)."""
    _need_inspect()
    from inspect_ai.log import read_eval_log

    files = log_files(path)
    if len(files) != 1:
        raise ValueError(f"{path}: {len(files)} logs here ({', '.join(f.name for f in files[:4])}); import one")
    log = read_eval_log(str(files[0]))
    if not log.samples:
        raise ValueError(f"{files[0]}: the log has no samples (status {log.status!r})")
    responses = []
    for sample in sorted(log.samples, key=lambda s: (str(s.id), s.epoch)):
        q = _question(sample, files[0])
        scores = sample.scores or {}
        name = scorer or ("choice" if "choice" in scores else next(iter(scores), None))
        score = scores.get(name) if name else None
        answer = str(score.answer or "").strip().upper() if score is not None else ""
        choice = LETTERS.index(answer) if len(answer) == 1 and answer in LETTERS[:len(q.options)] else -1
        meta = dict(sample.metadata or {})
        responses.append(Response(
            q, scores=letter_scores(sample.output, len(q.options)), choice=choice,
            status="error" if sample.error is not None else None, generated_text=sample.output.completion or "",
            extraction_rule=f"inspect scorer {name}" if name else "none",
            extra={"inspect": {"id": sample.id, "epoch": sample.epoch, "scorer": name,
                               "value": None if score is None else score.value,
                               "reason": None if score is None else getattr(score, "reason", None)}},
            payload=meta.get(PAYLOAD_KEY)))
    spec = log.eval
    source = Source(tool="inspect_ai", version=str(spec.packages.get("inspect_ai", "unknown")), files=(files[0],),
                    model=spec.model, task=spec.task, method="generate",
                    seed=int(getattr(spec.config, "seed", None) or 0),
                    details={"eval_id": spec.eval_id, "run_id": spec.run_id, "created": spec.created,
                             "solver": spec.solver, "status": log.status,
                             "model_args": {k: str(v) for k, v in (spec.model_args or {}).items()}})
    return source, responses


def _sample(rec: Mapping[str, Any], item: Item) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        ChatMessageUser,
        Logprob,
        Logprobs,
        ModelOutput,
        TopLogprob,
    )
    from inspect_ai.scorer import Score

    perm = [int(p) for p in rec["permutation"]]
    shown = [item.options[p] for p in perm]
    question = item.stem + "\n\n" + "\n".join(f"{LETTERS[i]}) {o}" for i, o in enumerate(shown))
    letter = LETTERS[int(rec["choice_position"])] if rec["choice_position"] >= 0 else ""
    completion = f"ANSWER: {letter}" if letter and rec["method"] != "generate" else str(rec["generated_text"])
    logprobs = None
    scores = shown_scores(rec) if rec["method"] == "first_token" and letter else []
    chosen = scores[LETTERS.index(letter)] if scores else None  # the chosen option's score (NaN: none)
    if chosen is not None:
        top = [TopLogprob(token=LETTERS[i], logprob=s) for i, s in enumerate(scores) if s is not None]
        logprobs = Logprobs(content=[Logprob(token=letter, logprob=chosen, top_logprobs=top)])
    output = ModelOutput(model=str(rec["model"]), choices=[ChatCompletionChoice(
        message=ChatMessageAssistant(content=completion), stop_reason="stop", logprobs=logprobs)])
    key = LETTERS[int(rec["correct_position"])] if rec["correct_position"] >= 0 else ""
    return EvalSample(id=item.item_id, epoch=int(rec["shuffle"]) + 1, input=question, choices=shown, target=key,
                      messages=[ChatMessageUser(content=question), ChatMessageAssistant(content=completion)],
                      output=output, scores={"choice": Score(value="C" if rec["correct"] else "I", answer=letter,
                                                             explanation=completion)},
                      metadata={"exam": item.exam, "year": item.year, "number": item.meta.get("number"),
                                "language": item.language, PAYLOAD_KEY: payload_of(rec, item)})


def export_inspect(records: pd.DataFrame, items: Mapping[str, Item], out_dir: str | Path, name: str) -> Path:
    """Write one run's records as the inspect_ai log `<out_dir>/<name>.eval` with inspect's write_eval_log."""
    _need_inspect()
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalScore,
        EvalSpec,
        write_eval_log,
    )

    records = records.sort_values(["item_id", "shuffle"], kind="stable")
    samples = [_sample(rec, items[rec["item_id"]]) for rec in records.to_dict("records")]
    accuracy = float(np.mean([s.scores["choice"].value == "C" for s in samples]))
    created = datetime(1970, 1, 1, tzinfo=timezone.utc).isoformat()  # fixed: the same run exports the same log
    spec = EvalSpec(created=created, task=name, dataset=EvalDataset(name=str(records["dataset"].iloc[0]),
                    samples=records["item_id"].nunique(), sample_ids=sorted(records["item_id"].unique().tolist())),
                    model=f"mcqa/{records['model'].iloc[0]}",
                    config=EvalConfig(epochs=int(records["shuffle"].max()) + 1),
                    packages={"mcqa_toolkit": __version__}, metadata={"exported_by": f"mcqa_toolkit {__version__}"})
    results = EvalResults(total_samples=len(samples), completed_samples=len(samples), scores=[EvalScore(
        name="choice", scorer="choice", metrics={"accuracy": EvalMetric(name="accuracy", value=accuracy)})])
    log = EvalLog(status="success", eval=spec, results=results, samples=samples)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{name}.eval"
    write_eval_log(log, str(target))
    return target
