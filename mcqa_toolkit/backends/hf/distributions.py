"""Per token of a text, the log-prob of the token and the mean and variance of log p over the model's whole
next-token distribution at that place: what Min-K%++ (Zhang et al. 2024) standardises each token's log-prob with.

Only a local model can give these (an API returns a few top log-probs at most), so this is an optional part of a
backend: `HFBackend.token_distributions(texts)`. Texts are read from the start of a document, as
`scoring.loglik.text_logprobs` reads them (BOS as the only context; the same token ids), so the log-probs equal
that function's up to float rounding (tests compare them). One text per forward call; the variance is taken in two
passes, E[(log p - mu)^2] (E[(log p)^2] - mu^2 cancels badly in float32 when the distribution is flat), over
`chunk` positions at a time, so a long text never holds more than a chunk's full distributions twice.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from mcqa_toolkit.backends.hf.loading import LM
from mcqa_toolkit.backends.hf.tokens import encode

__all__ = ["TokenDistribution", "token_distributions"]


@dataclass(frozen=True)
class TokenDistribution:
    """Arrays over the scored tokens of one text (every token after BOS): `logprobs` log p(x_t | x_<t), `mean`
    E_z[log p(z | x_<t)] and `var` Var_z[log p(z | x_<t)] under the model's next-token distribution."""

    logprobs: np.ndarray
    mean: np.ndarray
    var: np.ndarray


@torch.no_grad()
def token_distributions(lm: LM, texts: Sequence[str], chunk: int = 128) -> list[TokenDistribution]:
    """The `TokenDistribution` of each text under `lm` (a text of BOS alone would have no token: ValueError)."""
    out = []
    for text in texts:
        ids = encode(lm, text)
        if len(ids) < 2:
            raise ValueError(f"text {text[:40]!r} has no token to score")
        x = torch.tensor([ids], device=lm.device)
        logits = lm.model(input_ids=x).logits[0, :-1]
        target = x[0, 1:]
        parts = []
        for lo in range(0, len(target), chunk):
            logp = torch.log_softmax(logits[lo:lo + chunk].float(), dim=-1)
            p = logp.exp()
            mean = (p * logp).sum(-1)
            var = (p * (logp - mean[:, None]).square()).sum(-1)
            tok = logp.gather(-1, target[lo:lo + chunk, None])[:, 0]
            parts.append(torch.stack([tok, mean, var.clamp_min(0.0)]))
        lp, mu, var = torch.cat(parts, dim=1).cpu().numpy().astype(float)
        out.append(TokenDistribution(lp, mu, var))
    return out
