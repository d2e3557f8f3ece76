"""Scripted backends (no model) for the course-exam tests: a model that writes fixed answers per question
and yes/no log-probs from a function, and a judge with fixed verdicts."""
from __future__ import annotations

import numpy as np

from mcqa_toolkit.backends import Capabilities, ContinuationLogprobs, Generation, LetterLogprobs

# what the scripted model writes for each demo course-exam question (item ids course-101 .. course-110)
ANSWERS = {
    "course-101": "B",                                   # single, correct in the original order
    "course-102": "A and C",                             # multi, key A,C,D: a strict subset -> 2 points
    "course-103": "True, False, True",                   # truefalse, exact
    "course-104": "The handshake confirms both sequence numbers.",
    "course-105": "Answer: A",                           # single with its options inline (letter-keyed)
    "course-106": "Answer: C",                           # single, wrong
    "course-107": '```json\n{"answer": "A,C", "explanation": "both agree"}\n```',
    "course-108": "T F T",                               # 3 values for 4 statements: unanswered
    "course-109": "Sequential reads are cheaper.",
    "course-110": "A, B, C.",                            # inline multi, key A,C: not a subset -> 0
}


class ScriptedModel:
    """Generates ANSWERS (letters as shown, i.e. the same letter whatever the shuffle); yes/no log-probs from
    `p_yes(item_id, prompt text)`."""

    name = "scripted"

    def __init__(self, p_yes=None, capabilities=None):
        self.p_yes = p_yes or (lambda item_id, text: 0.5)
        self.capabilities = capabilities or Capabilities(next_token_logprobs=True, continuation_logprobs=True,
                                                         generate=True)
        self.generated = []

    def provenance(self):
        return {"source": "script"}

    def usage(self):
        return {"forwarded_tokens": 0}

    def letter_logprobs(self, prompts):
        out = []
        for p in prompts:
            if len(p.letter_continuations) == 2 and p.item_id != "course-106":
                y = self.p_yes(p.item_id, p.text)
                out.append(LetterLogprobs(np.log([y, 1 - y]), 9))
            else:
                out.append(LetterLogprobs(np.log(np.linspace(0.5, 0.1, len(p.letter_continuations))), 9))
        return out

    def loglikelihoods(self, requests):
        out = []
        for r in requests:
            y = self.p_yes(r.context.item_id, r.context.text)
            out.append(ContinuationLogprobs(np.log([y if r.continuation == r.context.continuations[0] else 1 - y]),
                                            r.continuation, 9))
        return out

    def generate(self, prompts, *, max_new_tokens, temperature=0.0, stop=(), seeds=None):
        self.generated += [p.item_id for p in prompts]
        return [Generation(ANSWERS[p.item_id], 9, 4, "stop") for p in prompts]


class ScriptedJudge(ScriptedModel):
    """Scores every answer 3 of its points, except the database question's, whose verdict is unreadable."""

    name = "judge"

    def generate(self, prompts, *, max_new_tokens, temperature=0.0, stop=(), seeds=None):
        self.generated += [p.item_id for p in prompts]
        return [Generation(" I'd say 5/7" if p.item_id == "course-109" else ' 3, "justification": "fair"}', 9, 6)
                for p in prompts]
