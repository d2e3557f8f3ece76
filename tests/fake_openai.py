"""Deterministic OpenAI-compatible and Anthropic answers in the documented wire formats, for tests/fake_api.

`completions(req)` answers /v1/completions like a server with logprobs: top-k of the first generated token,
an echo of the prompt (tokens = whitespace-led words, text_offset in characters, first token without a
log-prob), or generated text. Letter preferences come from a hash of the prompt, so different prompts
(shuffles) get different but reproducible answers. `messages(req)` answers /v1/messages (Claude).
"""
from __future__ import annotations

import hashlib
import re
import time
from typing import Any

LETTERS = "ABCDE"


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def shown_letters(text: str) -> str:
    """The option letters a prompt shows ("A. ...", "(A) ...", "A) ..." at a line start), else A-E."""
    found = sorted(set(re.findall(r"(?m)^\(?([A-J])[.)]", text)))
    return "".join(found) or LETTERS


def letter_logprobs(prompt: str, lead: str = " ") -> dict[str, float]:
    """A fixed top-k over the shown letters (with `lead`) plus two non-letters, from the prompt's hash."""
    k = _h(prompt)
    out = {f"{lead}{c}": -0.3 - ((k >> (3 * i)) % 7) * 0.4 for i, c in enumerate(shown_letters(prompt))}
    out[" the"], out["\n"] = -0.2 - (k % 3) * 0.5, -4.0
    return out


def best_letter(text: str) -> str:
    """The shown letter the fake model prefers for this prompt."""
    lp = letter_logprobs(text)
    return max((t for t in lp if t.strip() in LETTERS + "FGHIJ" and t.strip()), key=lp.get).strip()


def tokens_of(text: str) -> list[str]:
    return re.findall(r"\s*\S+|\s+$", text)


def _choice(text: str, logprobs: dict[str, Any] | None, finish: str = "length") -> dict[str, Any]:
    return {"text": text, "index": 0, "logprobs": logprobs, "finish_reason": finish}


def completion(body: dict[str, Any], top_k_cap: int = 20) -> dict[str, Any]:
    prompt = body["prompt"]
    n_prompt = len(tokens_of(prompt))
    created = int(time.time())
    if body.get("echo"):
        toks = tokens_of(prompt) + [" x"]
        offsets, pos = [], 0
        for t in toks:
            offsets.append(pos)
            pos += len(t)
        values = [None] + [-0.05 * len(t) - (_h(prompt[:o]) % 5) * 0.1 for t, o in zip(toks[1:], offsets[1:])]
        choice = _choice(prompt + " x", {"tokens": toks, "token_logprobs": values, "text_offset": offsets,
                                         "top_logprobs": [None] + [{t: v} for t, v in zip(toks[1:], values[1:])]})
    elif body.get("logprobs"):
        lead = "" if prompt.endswith("(") else " "
        top = dict(sorted(letter_logprobs(prompt, lead).items(), key=lambda kv: -kv[1])[: min(body["logprobs"],
                                                                                                top_k_cap)])
        best = max(top, key=top.get)
        choice = _choice(best, {"tokens": [best], "token_logprobs": [top[best]], "text_offset": [len(prompt)],
                                "top_logprobs": [top]})
    else:
        text = f" {best_letter(prompt)}) because the others are wrong"
        choice = _choice(text, None, "stop")
        return {"id": "cmpl-gen", "object": "text_completion", "created": created, "model": body["model"],
                "choices": [choice], "usage": {"prompt_tokens": n_prompt, "completion_tokens": 6,
                                                "total_tokens": n_prompt + 6}}
    return {"id": "cmpl-1", "object": "text_completion", "created": created, "model": body["model"],
            "choices": [choice], "usage": {"prompt_tokens": n_prompt, "completion_tokens": 1,
                                            "total_tokens": n_prompt + 1}}


def chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    text = "\n".join(m["content"] for m in body["messages"])
    best = best_letter(text)
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Resposta: {best}"},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(tokens_of(text)), "completion_tokens": 3,
                      "total_tokens": len(tokens_of(text)) + 3}}


def message(body: dict[str, Any]) -> dict[str, Any]:
    """A Claude Messages API reply: the letter of the prompt's preferred option after any prefill."""
    text = body.get("system", "") + "\n".join(str(m["content"]) for m in body["messages"])
    best = best_letter(text)
    return {"id": f"msg_{_h(text):08x}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": f" {best}"}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": len(tokens_of(text)), "output_tokens": 2}}


def completions_route(req: Any) -> tuple:
    return 200, completion(req.json)


def chat_route(req: Any) -> tuple:
    return 200, chat_completion(req.json)


def messages_route(req: Any) -> tuple:
    return 200, message(req.json)
