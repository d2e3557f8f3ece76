"""A Gemini API stand-in (v1beta REST, as google-genai speaks it) on a tests/fake_api server: generateContent and
Batch Mode (batchGenerateContent, batches/{id}), in the documented request/response shapes (the generativelanguage
v1beta schema: GenerateContentRequest, GenerationConfig, Candidate, LogprobsResult, UsageMetadata; the batch
guide's Operation with metadata.state and output.inlinedResponses), and rejecting what the API rejects:

- no `x-goog-api-key` -> 403 PERMISSION_DENIED;
- `logprobs` outside [0, 20], or without `responseLogprobs: true` -> 400 INVALID_ARGUMENT;
- `responseLogprobs` on a model without log-probs -> 400 "Logprobs is not enabled for models/<model>" (the error
  quoted from the real API; which models offer them is not documented: here only gemini-2.0-flash);
- more than 5 `stopSequences`, `temperature` outside [0, 2], empty `contents` -> 400 INVALID_ARGUMENT;
- inline batch requests over 20 MB -> 400.

Models whose name contains "thinking" answer with a thought part first and report `thoughtsTokenCount`. A batch
job is PENDING when created, RUNNING on the first poll and then ends as `outcome` (SUCCEEDED with one inlined
response per request, in order, carrying the request's metadata; an invalid request gets an `error` instead;
FAILED with the Operation's `error`; CANCELLED; EXPIRED without results).
"""
from __future__ import annotations

from typing import Any

from fake_api import FakeAPI, gemini_error
from fake_openai import REASONING_TEXT, best_letter, letter_logprobs, tokens_of

LOGPROB_MODELS = {"gemini-2.0-flash"}
INLINE_LIMIT = 20 * 1000 ** 2
OP_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"


def rejects(model: str, body: dict[str, Any]) -> tuple | None:
    cfg = body.get("generationConfig") or {}
    if not body.get("contents"):
        return gemini_error(400, "* GenerateContentRequest.contents: contents is not specified")
    if "logprobs" in cfg and not cfg.get("responseLogprobs"):
        return gemini_error(400, "logprobs is only valid if responseLogprobs is true")
    if not 0 <= cfg.get("logprobs", 0) <= 20:
        return gemini_error(400, f"logprobs must be in the range [0, 20], got {cfg['logprobs']}")
    if cfg.get("responseLogprobs") and model not in LOGPROB_MODELS:
        return gemini_error(400, f"Logprobs is not enabled for models/{model}")
    if len(cfg.get("stopSequences") or []) > 5:
        return gemini_error(400, "* GenerateContentRequest.generation_config.stop_sequences: at most 5 stop sequences")
    if not 0 <= cfg.get("temperature", 1.0) <= 2:
        return gemini_error(400, "* GenerateContentRequest.generation_config.temperature: must be in [0, 2]")
    return None


def answer(model: str, body: dict[str, Any]) -> dict[str, Any]:
    cfg = body.get("generationConfig") or {}
    text = "\n".join(p.get("text", "") for c in body["contents"] for p in c["parts"])
    best = best_letter(text)
    parts = [{"text": f"Resposta: {best}"}]
    usage = {"promptTokenCount": len(tokens_of(text)), "candidatesTokenCount": 3}
    if "thinking" in model:
        parts.insert(0, {"text": REASONING_TEXT, "thought": True})
        usage["thoughtsTokenCount"] = 25
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    if cfg.get("responseLogprobs"):
        top = sorted(letter_logprobs(text, "").items(), key=lambda kv: -kv[1])[:cfg.get("logprobs", 0)]
        first = top[0] if top else (best, -0.1)
        parts[-1] = {"text": first[0]}
        usage["candidatesTokenCount"] = 1
        cand["logprobsResult"] = {"topCandidates": [{"candidates": [{"token": t, "logProbability": v}
                                                                    for t, v in top]}],
                                  "chosenCandidates": [{"token": first[0], "logProbability": first[1]}],
                                  "logProbabilitySum": first[1]}
    usage["totalTokenCount"] = sum(v for v in usage.values())
    return {"candidates": [cand], "usageMetadata": usage, "modelVersion": model, "responseId": "resp-1"}


class GeminiServer:
    def __init__(self, api: FakeAPI, outcome: str = "SUCCEEDED"):
        self.api, self.outcome = api, outcome
        self.jobs: dict[str, dict[str, Any]] = {}
        api.route("POST", "/v1beta/models/", self.models)
        api.route("GET", "/v1beta/batches/", self.get)

    def models(self, req):
        if not req.headers.get("x-goog-api-key"):
            return gemini_error(403, "Method doesn't allow unregistered callers. Please use an API key.",
                                "PERMISSION_DENIED")
        model, _, method = req.path.split("/v1beta/models/", 1)[1].partition(":")
        if method == "generateContent":
            return rejects(model, req.json) or (200, answer(model, req.json))
        if method == "batchGenerateContent":
            if len(req.raw) > INLINE_LIMIT:
                return gemini_error(400, f"Request payload size exceeds the limit: {INLINE_LIMIT} bytes.")
            batch = req.json["batch"]
            name = f"batches/job{len(self.jobs) + 1}"
            self.jobs[name] = {"model": model, "display": batch.get("displayName", ""), "polls": 0,
                               "requests": batch["inputConfig"]["requests"]["requests"]}
            return 200, self._operation(name, "BATCH_STATE_PENDING")
        return gemini_error(404, f"method {method} not found", "NOT_FOUND")

    def _operation(self, name: str, state: str, **extra: Any) -> dict[str, Any]:
        job = self.jobs[name]
        meta = {"@type": OP_TYPE, "model": f"models/{job['model']}", "displayName": job["display"], "state": state,
                "name": name, "createTime": "2026-11-24T00:00:00Z", **extra.pop("metadata", {})}
        return {"name": name, "metadata": meta, "done": state not in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"),
                **extra}

    def get(self, req):
        name = req.path.split("/v1beta/", 1)[1]
        job = self.jobs[name]
        job["polls"] += 1
        if job["polls"] == 1:
            return 200, self._operation(name, "BATCH_STATE_RUNNING")
        if self.outcome == "FAILED":
            return 200, self._operation(name, "BATCH_STATE_FAILED",
                                        error={"code": 3, "message": "Input requests are malformed."})
        if self.outcome != "SUCCEEDED":
            return 200, self._operation(name, f"BATCH_STATE_{self.outcome}")
        out = []
        for r in job["requests"]:
            err = rejects(job["model"], r["request"])
            got = {"error": err[1]["error"]} if err else {"response": answer(job["model"], r["request"])}
            out.append({**got, "metadata": r.get("metadata") or {}})
        return 200, self._operation(name, "BATCH_STATE_SUCCEEDED", metadata={
            "output": {"inlinedResponses": {"inlinedResponses": out}}})


def sizes(api: FakeAPI) -> list[int]:
    """Bytes of each batchGenerateContent request the stand-in received."""
    return [len(r.raw) for r in api.requests if r.path.endswith(":batchGenerateContent")]


