"""LLM-as-judge for short answers: a rubric prompt (the course-exam benchmark's criteria: accuracy, completeness,
logical consistency, clarity) with the question, the reference answer and its explanation, the answer to grade
and the points available; the judge replies with a score in 0..points and a one-paragraph justification.

Any Backend that generates can judge (the embedded model is a weak judge but a real one). The verdict is read
strictly (`parse_verdict`): the "score" of the JSON reply must be a complete number in [0, points]; anything
else (no JSON score, a string, a bool, NaN, out of range) is a Judgement with status `error`, the raw output
kept and no score, never a silent 0. The prompt is in the `judge` section of templates/<lang>.yaml.

Several judges are combined per answer by `combine_scores` (mean, or majority = the most frequent score,
ties to the lower) over the judges whose verdict could be read; when none could, the answer is an error.
Judging happens inside a run's unit of work (run.runner), so a killed run never re-judges finished records.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mcqa_toolkit.backends.base import Backend, CapabilityError
from mcqa_toolkit.items import Item
from mcqa_toolkit.prompts.builder import Prompt, split_trailing
from mcqa_toolkit.prompts.template import read_template_file, template_path
from mcqa_toolkit.scoring.responses import first_json_object

__all__ = ["Judgement", "LLMJudge", "parse_verdict", "combine_scores", "judge_answers", "COMBINE_RULES"]

COMBINE_RULES = ("mean", "majority")
_FIELDS = {"instruction": set(), "body": {"question", "reference", "explanation", "answer", "points"},
           "reply": {"points"}, "cue": set(), "prefill": set()}
_TRUNCATED = re.compile(r'^\s*\{\s*"score"\s*:\s*(-?\d+(?:\.\d+)?)\s*[,}]')


@dataclass(frozen=True)
class Judgement:
    """One judge's verdict on one answer: `score` None and `status` error (with `reason`) when unreadable."""

    judge: str
    prompt_hash: str
    raw_output: str
    score: float | None
    justification: str
    status: str  # ok | error
    reason: str = ""
    rule: str = ""  # json (a complete JSON object) | json_truncated (the score was complete, the text cut off)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_verdict(text: str, points: float) -> tuple[float | None, str, str, str]:
    """(score, justification, rule, error reason) from a judge's reply (prefill included).

    The first JSON object with a "score" key counts (code fences and text around it allowed). When the reply
    was cut off after the number (max tokens), a complete number right after '{"score":' still counts (rule
    json_truncated). The score must be an int or float (not a bool or a string), finite, in [0, points]."""
    obj = first_json_object(text, "score")
    if obj is not None:
        score, rule = obj["score"], "json"
        justification = obj.get("justification", "")
        justification = justification if isinstance(justification, str) else json.dumps(justification)
    else:
        m = _TRUNCATED.match(text)
        if m is None:
            return None, "", "", "no JSON object with a numeric \"score\" in the reply"
        score, rule = float(m.group(1)), "json_truncated"
        j = re.search(r'"justification"\s*:\s*"((?:[^"\\]|\\.)*)', text)
        justification = j.group(1) if j else ""
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return None, justification, rule, f"score {score!r} is not a number"
    if not 0 <= score <= points:
        return None, justification, rule, f"score {score} is outside [0, {points:g}]"
    return float(score), justification, rule, ""


def combine_scores(judgements: Sequence[Judgement], rule: str = "mean") -> float | None:
    """The combined score of one answer over the judges whose verdict was read (None when none was):
    mean, or majority = the most frequent score (ties go to the lowest of the tied scores)."""
    if rule not in COMBINE_RULES:
        raise ValueError(f"combine rule {rule!r} not in {COMBINE_RULES}")
    scores = [j.score for j in judgements if j.status == "ok" and j.score is not None]
    if not scores:
        return None
    if rule == "mean":
        return float(sum(scores) / len(scores))
    counts = Counter(scores)
    top = max(counts.values())
    return float(min(s for s, c in counts.items() if c == top))


@dataclass
class LLMJudge:
    """A Backend used as a judge, with the `judge` prompt of `language` (bundled templates or the YAML at
    `path`). Greedy, so the same answer always gets the same verdict."""

    backend: Backend
    name: str = ""
    language: str = "en"
    path: str | Path | None = None
    max_new_tokens: int = 96
    template: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.backend.capabilities.generate:
            raise CapabilityError(f"backend {self.backend.name!r} cannot judge: it cannot generate text")
        self.name = self.name or self.backend.name
        file = template_path(self.language, self.path)
        raw = read_template_file(file).get("judge")
        if not isinstance(raw, dict) or set(raw) != set(_FIELDS) or not all(isinstance(v, str) for v in raw.values()):
            raise ValueError(f"{file}: 'judge' must be a mapping of the string keys {sorted(_FIELDS)}")
        self.template = dict(raw)

    def identity(self) -> dict[str, Any]:
        """What produced a verdict: judge name, the backend's source, the prompt template's hash, max tokens."""
        text = json.dumps(self.template, sort_keys=True)
        return {"judge": self.name, "source": self.backend.provenance().get("source"),
                "template_hash": hashlib.sha256(text.encode()).hexdigest()[:12], "max_new_tokens": self.max_new_tokens}

    def prompt(self, item: Item, answer: str) -> Prompt:
        """The judge prompt for `answer` to short-answer `item`."""
        t, pts = self.template, f"{float(item.points):g}"
        body = t["instruction"] + t["body"].format(
            question=item.stem, reference=str(item.answer), explanation=item.meta.get("explanation") or "(none)",
            answer=answer, points=pts) + t["reply"].format(points=pts)
        cue, _ = split_trailing(t["cue"] + t["prefill"])
        return Prompt(item_id=item.item_id, shuffle=0, permutation=(), letters="", text=body + cue,
                      shared_prefix=t["instruction"], continuations=(), letter_continuations=(), neutral_context="")

    def judge(self, items: Sequence[Item], answers: Sequence[str]) -> list[Judgement]:
        """One verdict per (item, answer), from one backend call."""
        prompts = [self.prompt(it, a) for it, a in zip(items, answers, strict=True)]
        gens = self.backend.generate(prompts, max_new_tokens=self.max_new_tokens, temperature=0.0, stop=("\n\n",))
        out = []
        for it, p, gen in zip(items, prompts, gens, strict=True):
            score, justification, rule, reason = parse_verdict(self.template["prefill"] + gen.text, float(it.points))
            out.append(Judgement(self.name, hashlib.sha256(p.text.encode()).hexdigest()[:12], gen.text, score,
                                 justification, "error" if reason else "ok", reason, rule))
        return out


def judge_answers(judges: Sequence[LLMJudge], items: Sequence[Item], answers: Sequence[str],
                  rule: str = "mean") -> list[tuple[float | None, list[dict[str, Any]]]]:
    """(combined score or None, every judge's verdict as a dict) per answer."""
    if not judges:
        raise ValueError("short answers need at least one judge")
    verdicts = [judge.judge(items, answers) for judge in judges]
    return [(combine_scores(per, rule), [j.as_dict() for j in per]) for per in zip(*verdicts, strict=True)]
