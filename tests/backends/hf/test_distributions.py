"""Per-token next-token distribution statistics (backends.hf.distributions) on the tiny Gemma 3 and Llama: equal
to a float64 computation from the model's own forward (mean of log p = minus the entropy, variance as
E[(log p)^2] - E[log p]^2, the other formula than the module's two passes) within 1e-4 (fp32 against float64;
observed ~1e-5), in small chunks or one, and the token log-probs equal to the engine's `text_logprobs` (what Min-K%
prob reads) within 1e-4."""
import numpy as np
import pytest
import torch

from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.backends.hf.distributions import token_distributions
from mcqa_toolkit.backends.hf.tokens import encode
from mcqa_toolkit.scoring.loglik import text_logprobs

TEXTS = ["Questão: Qual é a capital do Brasil? Resposta: Brasília.", "Options: (A) red (B) blue", "2 + 2 = 4"]


def _float64(lm, text):
    ids = torch.tensor([encode(lm, text)])
    with torch.no_grad():
        logp = lm.model(ids).logits[0, :-1].double().log_softmax(-1)
    p = logp.exp()
    entropy = -(p * logp).sum(-1)
    var = (p * logp ** 2).sum(-1) - entropy ** 2
    return logp.gather(-1, ids[0, 1:, None])[:, 0].numpy(), -entropy.numpy(), var.numpy()


@pytest.mark.parametrize("chunk", [3, 128])
def test_statistics_equal_a_float64_computation(tiny_lm, chunk):
    for d, text in zip(token_distributions(tiny_lm, TEXTS, chunk=chunk), TEXTS, strict=True):
        lp, mean, var = _float64(tiny_lm, text)
        assert len(d.logprobs) == len(encode(tiny_lm, text)) - 1
        for got, want in ((d.logprobs, lp), (d.mean, mean), (d.var, var)):
            np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-5)


def test_log_probs_are_those_min_k_reads_and_the_backend_counts_tokens(tiny_lm):
    backend = HFBackend(tiny_lm)
    before = backend.usage()["forwarded_tokens"]
    dists = backend.token_distributions(TEXTS)
    for d, lp in zip(dists, text_logprobs(HFBackend(tiny_lm), TEXTS), strict=True):
        np.testing.assert_allclose(d.logprobs, lp, atol=1e-4)
    assert backend.usage()["forwarded_tokens"] - before == sum(len(encode(tiny_lm, t)) for t in TEXTS)
    with pytest.raises(ValueError, match="no token to score"):
        token_distributions(tiny_lm, [""])
