"""A backend that answers from a lookup table (no model at all): fast, exact, and proof that run() and the
scorers need nothing but the Backend protocol. Shared by the backend-seam, recipe and fault tests."""
from __future__ import annotations

import numpy as np

from mcqa_toolkit.backends import Capabilities, ContinuationLogprobs, Generation, LetterLogprobs


class LookupBackend:
    """Scores from a table: item_id -> log-prob of each ORIGINAL option. Letters are scored in shown order,
    option texts by their table value, and generation answers "Resposta: <letter of the best option>"."""

    def __init__(self, table: dict[str, list[float]], capabilities: Capabilities | None = None):
        self.name = "lookup"
        self.table = table
        self.capabilities = capabilities or Capabilities(next_token_logprobs=True, continuation_logprobs=True,
                                                         generate=True)
        self.calls = 0

    def provenance(self):
        return {"backend": "lookup", "source": "table"}

    def usage(self):
        return {"forwarded_tokens": 10 * self.calls}

    def letter_logprobs(self, prompts):
        self.calls += 1
        return [LetterLogprobs(np.array([self.table[p.item_id][o] for o in p.permutation]), 7) for p in prompts]

    def loglikelihoods(self, requests):
        self.calls += 1
        out = []
        for r in requests:
            if isinstance(r.context, str):  # neutral context (pmi) or Min-K%: a flat prior
                out.append(ContinuationLogprobs(np.array([-1.0]), r.continuation, 1))
                continue
            k = r.context.continuations.index(r.continuation)
            value = self.table[r.context.item_id][r.context.permutation[k]]
            out.append(ContinuationLogprobs(np.array([value, 0.0]), r.continuation, 5))
        return out

    def generate(self, prompts, *, max_new_tokens, temperature=0.0, stop=(), seeds=None):
        self.calls += 1
        out = []
        for p in prompts:
            best = int(np.argmax([self.table[p.item_id][o] for o in p.permutation]))
            out.append(Generation(f"Resposta: {p.letters[best]}", 7, 3, "stop"))
        return out
