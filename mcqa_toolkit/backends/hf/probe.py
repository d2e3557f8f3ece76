"""The self-check's probe (selfcheck.py): a short exam-shaped workload in the model's own tokens that crosses its
sliding window, on which each engine path is set against the plain forward."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mcqa_toolkit.backends.hf.request import Request

PROBE_MAX_TOKENS = 2048    # the probe's run prefix crosses a sliding window up to this length
PROBE_WORDS = ("a prova do exame nacional tem questoes de ciencias humanas natureza linguagens e matematica com "
               "cinco alternativas cada uma the exam asks about history geography physics chemistry biology "
               "el examen de acceso pregunta sobre lengua literatura y filosofia la prova di ammissione chiede "
               "logica cultura generale e scienze").split()


def _window(config: Any) -> int | None:
    """The model's sliding window (the largest, where layers differ), None without one."""
    found = [getattr(config, k, None) for k in ("sliding_window", "sliding_window_size", "attention_window")]
    windows = [w for w in found if isinstance(w, int) and not isinstance(w, bool) and w > 0]
    return max(windows) if windows else None


def probe(lm: Any, items: int = 2) -> tuple[tuple[int, ...], list[list[Request]], list[list[Request]]]:
    """(run prefix, letters per item, options per item) of the probe, from a seeded text in the tokenizer's own
    tokens: a run prefix 16 tokens past the sliding window (48 tokens without one); item A with two option orders,
    and with `items` 2 item B with one. Each order's option request extends its letter request's prompt by one
    option, so one plain forward of it answers both."""
    config = lm.model.config.get_text_config() if hasattr(lm.model.config, "get_text_config") else lm.model.config
    window = _window(config)
    run_len = min(window + 16, PROBE_MAX_TOKENS) if window else 48
    rng = np.random.default_rng(0)
    tok = lm.tokenizer
    ids: list[int] = []
    while len(ids) < run_len + 64:
        ids += tok(" ".join(rng.choice(PROBE_WORDS, 64)), add_special_tokens=False).input_ids
    bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
    run = tuple(bos + ids[: run_len - len(bos)])
    rest = iter(ids[run_len - len(bos):])

    def take(n: int) -> tuple[int, ...]:
        return tuple(next(rest) for _ in range(n))

    letters = _candidates(tok, ids)
    stem_a, orders_a, stem_b, order_b, option = take(6), [take(6), take(6)], take(6), take(6), take(3)
    prompts = [[run + stem_a + o for o in orders_a], [run + stem_b + order_b]][:items]
    return (run, [[Request(p, len(p), letters) for p in item] for item in prompts],
            [[Request(p + option, len(p)) for p in item] for item in prompts])


def _candidates(tok: Any, ids: Sequence[int]) -> tuple[int, ...]:
    """Four distinct next-token candidates: the tokens of ' A' .. ' D' where they are single and distinct, else
    four of the probe text's own tokens."""
    got = [tok(f" {x}", add_special_tokens=False).input_ids for x in "ABCD"]
    if all(len(g) == 1 for g in got) and len({g[0] for g in got}) == 4:
        return tuple(g[0] for g in got)
    return tuple(dict.fromkeys(ids))[:4]
