"""Stand-ins for the OpenAI Batch API (Files + Batches) and Anthropic Message Batches on a tests/fake_api server,
in their documented wire formats (openai-python types/batch.py and the batch guide; anthropic-sdk-python
types/messages/message_batch*.py), including what the real services do when things go wrong:

- OpenAI: a batch is `validating`, then `in_progress` on the first poll; on the next it ends as its `outcome`:
  `completed` (requests whose custom_id is in `fail` land in the error file), `failed` (input validation:
  no output or error file, the reasons in `errors.data`), `expired` (the first half answered in the output file,
  the rest in the error file with `response: null, error.code: batch_expired`), `cancelled` (cancelling, then
  cancelled with the first half answered; the rest never ran). An input file over `max_requests` lines, with a
  line whose url is not the batch's endpoint, or a duplicate custom_id fails validation, as documented.
- Anthropic: custom_ids must match ^[a-zA-Z0-9_-]{1,64}$ (else 400 at create), at most `max_requests` per batch;
  a batch is in_progress, then ended; each request is validated as the Messages API would (an invalid one is an
  `errored` result), the ones in `expire` are `expired`.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from fake_api import FakeAPI, anthropic_error, openai_error
from fake_openai import anthropic_rejects, completion, message

OPENAI_LIMIT = 50_000
ANTHROPIC_LIMIT = 100_000


class OpenAIBatchServer:
    def __init__(self, api: FakeAPI, fail: set[str] = frozenset(), outcome: str = "completed",
                 max_requests: int = OPENAI_LIMIT, answer: Callable[[dict], dict] = completion):
        self.api, self.fail, self.outcome, self.answer = api, set(fail), outcome, answer
        self.max_requests = max_requests
        self.files: dict[str, str] = {}
        self.polls: dict[str, int] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        api.route("POST", "/v1/files", self.upload)
        api.route("POST", "/v1/batches", self.create)
        api.route("GET", "/v1/batches/", self.retrieve)
        api.route("GET", "/v1/files/", self.content)

    def upload(self, req):
        if b'name="purpose"\r\n\r\nbatch' not in req.raw:
            return openai_error(400, "Invalid purpose: a batch input file must be uploaded with purpose 'batch'.")
        data = re.search(rb'filename="[^"]*"\r\n(?:[^\r\n]+\r\n)*\r\n(.*?)\r\n--', req.raw, re.S).group(1)
        fid = f"file-{len(self.files)}"
        self.files[fid] = data.decode()
        return 200, {"id": fid, "object": "file", "bytes": len(data), "created_at": 0, "filename": "batch.jsonl",
                     "purpose": "batch", "status": "processed"}

    def lines(self, bid: str) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.files[self.batches[bid]["input_file_id"]].splitlines() if x.strip()]

    def _batch(self, bid: str, status: str, **extra: Any) -> dict[str, Any]:
        b = self.batches[bid]
        return {"id": bid, "object": "batch", "endpoint": b["endpoint"], "input_file_id": b["input_file_id"],
                "completion_window": "24h", "status": status, "created_at": 0, "output_file_id": None,
                "error_file_id": None, "errors": None, "request_counts": {"total": 0, "completed": 0, "failed": 0},
                **extra}

    def create(self, req):
        body = req.json
        if body.get("completion_window") != "24h":
            return openai_error(400, "Invalid completion_window: only '24h' is supported.", param="completion_window")
        bid = f"batch_{len(self.batches)}"
        self.batches[bid] = {"input_file_id": body["input_file_id"], "endpoint": body["endpoint"]}
        return 200, self._batch(bid, "validating")

    def _validation_errors(self, bid: str) -> list[dict[str, Any]]:
        lines, endpoint = self.lines(bid), self.batches[bid]["endpoint"]
        errors = [{"code": "url_mismatch", "line": n, "message": f"The url in line {n} does not match the batch's "
                   f"endpoint {endpoint}.", "param": "url"} for n, r in enumerate(lines, 1) if r["url"] != endpoint]
        seen: set[str] = set()
        for n, r in enumerate(lines, 1):
            if r["custom_id"] in seen:
                errors.append({"code": "duplicate_custom_id", "line": n, "param": "custom_id",
                               "message": "The custom_id for this request is a duplicate of another request."})
            seen.add(r["custom_id"])
        if len(lines) > self.max_requests:
            errors.append({"code": "too_many_tasks", "line": None, "param": None, "message": f"The input file has "
                           f"{len(lines)} requests; a batch can contain at most {self.max_requests}."})
        if self.outcome == "failed":
            errors.append({"code": "invalid_json_line", "line": 1, "param": None,
                           "message": "This line is not parseable as valid JSON."})
        return errors

    def retrieve(self, req):
        bid = req.path.rsplit("/", 1)[1]
        self.polls[bid] = self.polls.get(bid, 0) + 1
        if self.polls[bid] == 1:
            return 200, self._batch(bid, "in_progress" if self.outcome != "cancelled" else "cancelling")
        errors = self._validation_errors(bid)
        if errors:
            return 200, self._batch(bid, "failed", errors={"object": "list", "data": errors})
        lines, out, err = self.lines(bid), [], []
        half = len(lines) // 2 if self.outcome in ("expired", "cancelled") else len(lines)
        for n, rec in enumerate(lines):
            if n >= half:
                if self.outcome == "expired":
                    err.append({"id": f"r{n}", "custom_id": rec["custom_id"], "response": None, "error": {
                        "code": "batch_expired", "message": "This request could not be executed before the "
                                                            "completion window expired."}})
                continue  # cancelled: never ran
            if rec["custom_id"] in self.fail:
                err.append({"id": f"r{n}", "custom_id": rec["custom_id"], "error": None, "response": {
                    "status_code": 500, "request_id": "q", "body": {"error": {"message": "server error",
                                                                              "type": "server_error"}}}})
            else:
                out.append({"id": f"r{n}", "custom_id": rec["custom_id"], "error": None,
                            "response": {"status_code": 200, "request_id": "q", "body": self.answer(rec["body"])}})
        ids = {}
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = f"{name[:3]}-{bid}"
                self.files[fid] = "\n".join(json.dumps(o) for o in reversed(rows))  # unordered on purpose
                ids[name] = fid
        return 200, self._batch(bid, self.outcome, **ids, request_counts={"total": len(lines), "completed": len(out),
                                                                          "failed": len(err)})

    def content(self, req):
        return 200, self.files[req.path.split("/")[3]].encode(), {"content-type": "application/jsonl"}


class AnthropicBatchServer:
    def __init__(self, api: FakeAPI, expire: set[str] = frozenset(), max_requests: int = ANTHROPIC_LIMIT):
        self.api, self.expire, self.max_requests = api, set(expire), max_requests
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self.polls: dict[str, int] = {}
        api.route("POST", "/v1/messages/batches", self.create)
        api.route("GET", "/v1/messages/batches/", self.get)

    def _batch(self, bid: str, ended: bool) -> dict[str, Any]:
        n, results = len(self.batches[bid]), self._results(bid) if ended else []
        count = {t: sum(r["result"]["type"] == t for r in results) for t in ("succeeded", "errored", "expired")}
        return {"id": bid, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": {"processing": 0 if ended else n, "canceled": 0, **count},
                "created_at": "2026-11-23T00:00:00Z", "expires_at": "2026-11-24T00:00:00Z", "ended_at": None,
                "cancel_initiated_at": None, "archived_at": None,
                "results_url": f"{self.api.url}/v1/messages/batches/{bid}/results" if ended else None}

    def create(self, req):
        requests = req.json["requests"]
        bad = [r["custom_id"] for r in requests if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", r["custom_id"])]
        if bad:
            return anthropic_error(400, "requests.0.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'")
        if len(requests) > self.max_requests:
            return anthropic_error(400, f"requests: List should have at most {self.max_requests} items")
        bid = f"msgbatch_{len(self.batches) + 1}"
        self.batches[bid] = requests
        return 200, self._batch(bid, False)

    def _results(self, bid: str) -> list[dict[str, Any]]:
        out = []
        for r in reversed(self.batches[bid]):  # results come back in another order
            error = anthropic_rejects(r["params"])
            if r["custom_id"] in self.expire:
                result = {"type": "expired"}
            elif error:
                result = {"type": "errored", "error": error[1]}
            else:
                result = {"type": "succeeded", "message": message(r["params"])}
            out.append({"custom_id": r["custom_id"], "result": result})
        return out

    def get(self, req):
        bid = req.path.split("/")[4]
        if req.path.endswith("/results"):
            return 200, "\n".join(json.dumps(x) for x in self._results(bid)).encode(), {"content-type":
                                                                                         "application/binary"}
        self.polls[bid] = self.polls.get(bid, 0) + 1
        return 200, self._batch(bid, self.polls[bid] > 1)
