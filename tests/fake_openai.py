"""Deterministic OpenAI-compatible and Anthropic answers in the documented wire formats, for tests/fake_api, and
the stand-ins' rules: each provider REJECTS what its documentation (or, for vLLM, a measurement of the real
server) says it rejects, with its error shape. These rules are written here independently of
mcqa_toolkit.backends.providers, so a wrong row there is caught here.

`completion(body)` answers /v1/completions like a server with logprobs: top-k of the first generated token, an
echo of the prompt (tokens = whitespace-led words; offsets in characters, UTF-8 bytes, or vLLM's running sum
of token lengths after a "<bos>" token), or generated text. `chat_completion(body)` answers chat completions
(letters in `logprobs.content[0].top_logprobs`, reasoning models with reasoning tokens and, for R1-style names,
a separate `reasoning_content` or inline <think> block). Letter preferences come from a hash of the prompt, so
different prompts (shuffles) get different but reproducible answers. `message(body)` answers /v1/messages.
"""
from __future__ import annotations

import hashlib
import re
import time
from typing import Any

from fake_api import anthropic_error, openai_error, vllm_error

LETTERS = "ABCDE"
LEGACY = ("gpt-3.5-turbo-instruct", "davinci-002", "babbage-002")  # OpenAI's completions models
REASONING = re.compile(r"^(o\d|gpt-5)")                              # o-series and gpt-5: reasoning models
NO_STOP = re.compile(r"^o(3|4-mini)")


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


# ---- the providers' rules ----------------------------------------------------------------------------------
def _above(name: str, limit: int, got: int) -> tuple:
    return openai_error(400, f"Invalid '{name}': integer above maximum value. Expected a value <= {limit}, but got "
                             f"{got} instead.", param=name, code="integer_above_max_value")


def openai_rejects(path: str, body: dict[str, Any]) -> tuple | None:
    """OpenAI's documented limits (openai-python completion_create_params.py, chat/completion_create_params.py,
    and the reasoning-model errors quoted in docs/providers.md)."""
    model = body.get("model", "")
    stop = body.get("stop") or []
    if len(stop) > 4:
        return openai_error(400, f"Invalid 'stop': array too long. Expected an array with maximum length 4, but got "
                                 f"an array with length {len(stop)} instead.", param="stop",
                            code="array_above_max_length")
    if path.endswith("/completions") and "/chat/" not in path:
        if model not in LEGACY:
            return openai_error(404, "This is a chat model and not supported in the v1/completions endpoint. Did you "
                                     "mean to use v1/chat/completions?", param="model")
        if (body.get("logprobs") or 0) > 5:
            return _above("logprobs", 5, body["logprobs"])
        if body.get("echo") and body.get("logprobs") is not None and model == "gpt-3.5-turbo-instruct":
            return openai_error(400, "Setting 'echo' and 'logprobs' at the same time is not supported for this model.",
                                param="echo", code="invalid_parameter_combination")
        return None
    if model in LEGACY:
        return openai_error(404, "This is not a chat model and thus not supported in the v1/chat/completions "
                                 "endpoint. Did you mean to use v1/completions?", param="model")
    if body.get("top_logprobs") is not None:
        if not body.get("logprobs"):
            return openai_error(400, "Invalid value for 'top_logprobs': logprobs must be set to true.", "top_logprobs")
        if body["top_logprobs"] > 20:
            return _above("top_logprobs", 20, body["top_logprobs"])
    if REASONING.search(model):
        if "max_tokens" in body:
            return openai_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                     "'max_completion_tokens' instead.", param="max_tokens",
                                code="unsupported_parameter")
        if body.get("temperature", 1) != 1:
            return openai_error(400, f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                                     "this model. Only the default (1) value is supported.", param="temperature",
                                code="unsupported_value")
        if body.get("logprobs"):
            return openai_error(403, "You are not allowed to request logprobs from this model")
        if stop and NO_STOP.search(model):
            return openai_error(400, "Unsupported parameter: 'stop' is not supported with this model.", param="stop",
                                code="unsupported_parameter")
    return None


def vllm_rejects(path: str, body: dict[str, Any], max_logprobs: int = 20) -> tuple | None:
    """vLLM 0.32.0 as measured (tests/fixtures/vllm): top-k over --max-logprobs; both chat continuation flags."""
    k = body.get("top_logprobs") if "/chat/" in path else body.get("logprobs")
    if isinstance(k, int) and not isinstance(k, bool) and k > max_logprobs:
        return vllm_error(f"Requested sample logprobs of {k}, which is greater than max allowed: {max_logprobs} "
                          f"(parameter=logprobs, value={k})", "logprobs")
    if body.get("continue_final_message") and body.get("add_generation_prompt", True):
        return vllm_error("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
    return None


# ---- answers -----------------------------------------------------------------------------------------------
def _choice(text: str, logprobs: dict[str, Any] | None, finish: str = "length") -> dict[str, Any]:
    return {"text": text, "index": 0, "logprobs": logprobs, "finish_reason": finish}


def echo_offsets(tokens: list[str], style: str) -> tuple[list[str], list[int]]:
    """(tokens, text_offset) of an echo: 'chars' (OpenAI, llama-cpp-python), 'bytes' (some llama.cpp builds) or
    'vllm' (a leading "<bos>" token, offsets = running sum of token lengths)."""
    if style == "vllm":
        tokens = ["<bos>"] + tokens
    offsets, pos = [], 0
    for t in tokens:
        offsets.append(pos)
        pos += len(t.encode("utf-8")) if style == "bytes" else len(t)
    return tokens, offsets


def completion(body: dict[str, Any], offsets: str = "chars") -> dict[str, Any]:
    prompt = body["prompt"]
    n_prompt = len(tokens_of(prompt))
    created = int(time.time())
    if body.get("echo"):
        toks, offs = echo_offsets(tokens_of(prompt) + [" x"], offsets)
        first = 2 if offsets == "vllm" else 1
        values = [None] * first + [-0.05 * len(t) - (_h(prompt[:o]) % 5) * 0.1
                                   for t, o in zip(toks[first:], offs[first:], strict=True)]
        choice = _choice(prompt + " x", {"tokens": toks, "token_logprobs": values, "text_offset": offs,
                                         "top_logprobs": [None] * first + [{t: v} for t, v in zip(toks[first:],
                                                                                                  values[first:],
                                                                                                  strict=True)]})
    elif body.get("logprobs"):
        lead = "" if prompt.endswith("(") else " "
        top = dict(sorted(letter_logprobs(prompt, lead).items(), key=lambda kv: -kv[1])[:body["logprobs"]])
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


REASONING_TEXT = "A alternativa A parece certa, mas a B contradiz o enunciado; descarto A e B."


def chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A chat reply. Letters (`logprobs: true`): the first token's top_logprobs over the shown letters, written
    without a leading space as a chat model writes them. A reasoning model (o-series, gpt-5) reports reasoning
    tokens; a model named *r1* returns its reasoning apart (`reasoning_content`), *think* inline (<think>).
    A prefilled reply (`continue_final_message`) continues the cue: " A" after "Resposta:"."""
    text = "\n".join(str(m["content"]) for m in body["messages"])
    best, model = best_letter(text), body["model"]
    message: dict[str, Any] = {"role": "assistant", "content": f"Resposta: {best}"}
    usage: dict[str, Any] = {"prompt_tokens": len(tokens_of(text)), "completion_tokens": 3}
    logprobs = None
    if body.get("logprobs"):
        prefill = body.get("continue_final_message") and not text.endswith("(")  # " A" continues "Resposta:"
        top = sorted(letter_logprobs(text, " " if prefill else "").items(), key=lambda kv: -kv[1])[
            :body.get("top_logprobs") or 0]
        first = max(top, key=lambda kv: kv[1]) if top else (best, -0.1)
        tops = [{"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in top]
        logprobs = {"content": [{"token": first[0], "logprob": first[1], "bytes": list(first[0].encode()),
                                 "top_logprobs": tops}], "refusal": None}
        message["content"], usage["completion_tokens"] = first[0], 1
    if REASONING.search(model):
        usage["completion_tokens"] += 40
        usage["completion_tokens_details"] = {"reasoning_tokens": 40}
    elif "r1" in model:
        message["reasoning_content"] = REASONING_TEXT
    elif "think" in model:
        message["content"] = f"<think>{REASONING_TEXT} Resposta: A?</think>\n\nResposta: {best}"
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": logprobs, "finish_reason": "stop"}],
            "usage": usage}


def anthropic_rejects(body: dict[str, Any]) -> tuple | None:
    """The Messages API's documented rules (docs/providers.md, Anthropic section)."""
    model, messages = body.get("model", ""), body.get("messages") or []
    if "max_tokens" not in body:
        return anthropic_error(400, "max_tokens: Field required")
    if "temperature" in body and re.search(r"^claude-opus-(4-[7-9]|[5-9])", model):
        return anthropic_error(400, "`temperature` is deprecated for this model.")
    if not 0 <= body.get("temperature", 1.0) <= 1:
        return anthropic_error(400, "temperature: range: 0..1")
    if any(not s.strip() for s in body.get("stop_sequences") or []):
        return anthropic_error(400, "stop_sequences: each stop sequence must contain non-whitespace")
    if messages and messages[-1]["role"] == "assistant":
        if re.search(r"^claude-(opus|sonnet|haiku)-(4-[6-9]|[5-9])", model):
            return anthropic_error(400, "This model does not support assistant message prefill. The conversation "
                                        "must end with a user message.")
        if str(messages[-1]["content"]) != str(messages[-1]["content"]).rstrip():
            return anthropic_error(400, "messages: final assistant content cannot end with trailing whitespace")
    return None


def message(body: dict[str, Any]) -> dict[str, Any]:
    """A Claude Messages API reply: the letter of the prompt's preferred option after any prefill."""
    text = body.get("system", "") + "\n".join(str(m["content"]) for m in body["messages"])
    best = best_letter(text)
    return {"id": f"msg_{_h(text):08x}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": f" {best}"}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": len(tokens_of(text)), "output_tokens": 2}}


def provider_route(provider: str = "vllm", offsets: str = "chars"):
    """A route for /v1/completions and /v1/chat/completions that rejects as `provider` (openai | vllm)."""
    rules = openai_rejects if provider == "openai" else vllm_rejects

    def route(req: Any) -> tuple:
        body = req.json
        error = rules(req.path, body)
        if error:
            return error
        return 200, chat_completion(body) if "/chat/" in req.path else completion(body, offsets)
    return route


completions_route = chat_route = provider_route("vllm")  # a vLLM-like server (what most tests talk to)


def messages_route(req: Any) -> tuple:
    return anthropic_rejects(req.json) or (200, message(req.json))
