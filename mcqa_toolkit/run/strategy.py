"""Strategy: everything that decides how an exam is administered (method, shots, shuffles, prompt style, ...),
the named strategies of the seeds, and `strategy()` to build one from a name, a params-file dict or overrides.

A strategy's `hash` identifies the records it produces: a run folder never mixes two.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from mcqa_toolkit.scoring.methods import METHOD_NAMES, METHODS, NORMALIZATIONS


@dataclass(frozen=True)
class Strategy:
    """Everything that decides how the exam is administered; its hash identifies a run's records."""

    name: str = "custom"
    method: str = "first_token"        # first_token | loglik | cloze | generate | cot (scoring.methods)
    normalization: str = ""            # loglik/cloze: sum | token | char | byte | pmi
    shots: int = 0
    shot_rule: str = "easiest"         # easiest | random | ids
    shot_ids: tuple[str, ...] = ()
    shuffles: int = 1
    keep_original: bool = True         # shuffle 0 shows the original option order
    language: str | None = None        # prompt language; None = each item's own language
    style: str = "default"             # template style in prompts/templates/<lang>.yaml
    chat: bool = False                 # render with the tokenizer's chat template
    temperature: float = 0.0           # generate: 0 = greedy
    max_new_tokens: int = 12
    stop: tuple[str, ...] = ("\n\n",)
    seed: int = 0
    block_size: int = 8                # greedy generate: items per backend call, left-padded together (execution
                                       # detail, not hashed)
    adaptive: dict[str, Any] | None = None  # CAT: {se_target: 0.3, max_items: 20, ...} (irt.CatConfig fields)
    structured: bool = False           # generate: ask for a JSON reply {"answer", "explanation"} (course-exam style)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"Strategy.method {self.method!r} not in {METHOD_NAMES}")
        if METHODS[self.method].normalized:
            if self.normalization not in NORMALIZATIONS:
                raise ValueError(f"Strategy.normalization {self.normalization!r} not in {NORMALIZATIONS}")
        elif self.normalization:
            raise ValueError(f"Strategy.normalization applies to "
                             f"{'/'.join(m.name for m in METHODS.values() if m.normalized)}, not {self.method!r}")
        if (self.shuffles < 1 or self.shots < 0 or self.max_new_tokens < 1 or self.temperature < 0
                or self.block_size < 1):
            raise ValueError("Strategy needs shuffles >= 1, shots >= 0, max_new_tokens >= 1, temperature >= 0, "
                             "block_size >= 1")
        if self.structured and self.method != "generate":
            raise ValueError("Strategy.structured asks for a JSON reply: it needs method='generate'")
        object.__setattr__(self, "shot_ids", tuple(self.shot_ids))
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.adaptive is not None:
            self.cat_config()  # one clear error now for an unknown or invalid CAT setting

    def cat_config(self) -> Any:
        """The irt.CatConfig of an adaptive strategy (ValueError naming a bad key or value)."""
        from mcqa_toolkit.irt.cat import CatConfig

        if not isinstance(self.adaptive, dict):
            raise ValueError(f"Strategy.adaptive must be a dict of CAT settings, got {self.adaptive!r}")
        unknown = sorted(set(self.adaptive) - set(CatConfig.__dataclass_fields__))
        if unknown:
            raise ValueError(f"Strategy.adaptive: unknown setting(s) {unknown}; "
                             f"known: {sorted(CatConfig.__dataclass_fields__)}")
        return CatConfig(**self.adaptive)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def hash(self) -> str:
        """Identifies what is administered; the name and block size (like device and dtype) are not part of it.
        Fields added after the first release count only when set (`_LATER`), so earlier hashes stay valid."""
        fields = {k: v for k, v in self.to_dict().items()
                  if k not in ("name", "block_size") and _LATER.get(k, object()) != v}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]

    def with_(self, **changes: Any) -> Strategy:
        return replace(self, **changes)

    @classmethod
    def first_token(cls, shots: int = 0, shuffles: int = 1, **kw: Any) -> Strategy:
        return cls(name=kw.pop("name", f"first_token_{shots}shot"), method="first_token", shots=shots,
                   shuffles=shuffles, **kw)

    @classmethod
    def loglik(cls, normalization: str = "token", shots: int = 0, shuffles: int = 1, **kw: Any) -> Strategy:
        return cls(name=kw.pop("name", f"loglik_{normalization}_{shots}shot"), method="loglik",
                   normalization=normalization, shots=shots, shuffles=shuffles, **kw)

    @classmethod
    def cloze(cls, normalization: str = "token", shots: int = 0, **kw: Any) -> Strategy:
        return cls(name=kw.pop("name", f"cloze_{normalization}_{shots}shot"), method="cloze",
                   normalization=normalization, shots=shots, style=kw.pop("style", "cloze"), **kw)

    @classmethod
    def generate(cls, shots: int = 0, shuffles: int = 1, **kw: Any) -> Strategy:
        return cls(name=kw.pop("name", f"generate_{shots}shot"), method="generate", shots=shots, shuffles=shuffles,
                   **kw)


_LATER = {"structured": False, "adaptive": None}  # field -> default that leaves the hash unchanged


# Named strategies from the seeds. ENADE S1-S6 (enade-qa README): generation 0/1/2-shot, zero-shot shuffled
# (BPC), log-prob 0/1-shot (mean log-prob of each option's tokens given the stem -> cloze, token-normalised).
# ENEM paper (A.4): first-token letter scoring, 0/1/4 shots of the easiest items, 30 option shuffles.
# UNED: zero-shot chat prompt naming the subject, greedy generation.
# Chain of thought in the prompt's language (templates' `cot` style): think step by step, then "Resposta: X"; the
# final answer is read (method cot). No stop string: a thought has blank lines; reasoning models think apart.
STRATEGIES: dict[str, Strategy] = {
    "S1": Strategy(name="S1", method="generate", style="enade"),
    "S2": Strategy(name="S2", method="generate", style="enade", shots=1),
    "S3": Strategy(name="S3", method="generate", style="enade", shots=2),
    "S4": Strategy(name="S4", method="generate", style="enade", shuffles=5),
    "S5": Strategy(name="S5", method="cloze", normalization="token", style="cloze"),
    "S6": Strategy(name="S6", method="cloze", normalization="token", style="cloze", shots=1),
    "enem_0shot": Strategy(name="enem_0shot", method="first_token", style="enem", shuffles=30),
    "enem_1shot": Strategy(name="enem_1shot", method="first_token", style="enem", shots=1, shuffles=30),
    "enem_4shot": Strategy(name="enem_4shot", method="first_token", style="enem", shots=4, shuffles=30),
    "uned": Strategy(name="uned", method="generate", style="uned", chat=True),
    "medicina_mc": Strategy(name="medicina_mc", method="first_token", style="default"),
    "medicina_cloze": Strategy(name="medicina_cloze", method="cloze", normalization="token", style="cloze"),
    # OAB (bar exam): four Portuguese options, first-token letters, zero-shot (no IRT parameters for easiest-item
    # shots). HEAD-QA: lm-evaluation-harness's headqa protocol, each option's text scored after "Question: ...
    # Answer:" and normalised by its length in characters (its acc_norm), in each question's language. EXAMS: 16
    # languages, prompt templates in four: English instructions around the question in its own language, the same
    # prompt for every language. AGIEval: select-all questions need a written answer (generation, read by the
    # multi-answer rules; single-answer questions by the letter cascade), English instructions for its Chinese
    # tasks too (no Chinese templates).
    "oab": Strategy(name="oab", method="first_token", style="default", language="pt"),
    "head_qa": Strategy(name="head_qa", method="cloze", normalization="char", style="cloze"),
    "exams": Strategy(name="exams", method="first_token", style="default", language="en"),
    "agieval": Strategy(name="agieval", method="generate", style="default", language="en", max_new_tokens=16),
    "cot": Strategy(name="cot", method="cot", style="cot", max_new_tokens=1024, stop=()),
    "cot_chat": Strategy(name="cot_chat", method="cot", style="cot", chat=True, max_new_tokens=1024, stop=()),
}


def strategy(name_or_fields: str | dict[str, Any] | Strategy, **overrides: Any) -> Strategy:
    """A predefined strategy by name, or one built from a dict (e.g. from a params YAML), with overrides."""
    if isinstance(name_or_fields, Strategy):
        base = name_or_fields
    elif isinstance(name_or_fields, str):
        if name_or_fields not in STRATEGIES:
            raise ValueError(f"unknown strategy {name_or_fields!r}; predefined: {sorted(STRATEGIES)}")
        base = STRATEGIES[name_or_fields]
    else:
        fields = dict(name_or_fields)
        name = fields.pop("base", None)
        if name is not None and name not in STRATEGIES:
            raise ValueError(f"unknown base strategy {name!r}; predefined: {sorted(STRATEGIES)}")
        base = STRATEGIES[name] if name is not None else Strategy()
        overrides = {**fields, **overrides}
    unknown = [k for k in overrides if k not in Strategy.__dataclass_fields__]
    if unknown:
        raise ValueError(f"unknown Strategy field(s) {unknown}; fields: {sorted(Strategy.__dataclass_fields__)}")
    return replace(base, **overrides) if overrides else base


def build_strategy(spec: str | dict[str, Any] | Strategy, shots: int | None = None, shuffles: int | None = None,
                   seed: int | None = None, **fields: Any) -> Strategy:
    """A named or dict strategy with a notebook's overrides (None = keep the strategy's own value)."""
    overrides = {k: v for k, v in dict(shots=shots, shuffles=shuffles, seed=seed, **fields).items() if v is not None}
    return strategy(spec, **overrides)
