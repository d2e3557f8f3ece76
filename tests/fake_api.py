"""A scripted HTTP server on 127.0.0.1 that answers in the exact wire format of the OpenAI, Anthropic and Gemini
APIs, for the endpoints and failures we cannot reach from here (hosted APIs, batch APIs, 429s, 5xx, partial batch
failures). Each route is a function (request) -> (status, json body or bytes[, headers]); every request is
recorded (method, path, headers, body) with the status it was answered, so tests can count calls, check what
was sent and that nothing was rejected (`rejected()`). The error bodies below are each provider's documented
(or measured) shape; the rules that produce them live in fake_openai.py and fake_gemini.py.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw or b"null")


Route = Callable[[Request], tuple]


class FakeAPI:
    """Routes by (method, path prefix); the longest matching prefix wins. Use as a context manager."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Route] = {}
        self.requests: list[Request] = []
        self.statuses: list[int] = []  # the status each request was answered with, in order
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                              self.rfile.read(size) if size else b"")
                api.requests.append(req)
                matches = [k for k in api.routes if k[0] == self.command and self.path.startswith(k[1])]
                if not matches:
                    out: tuple = (404, {"error": {"message": f"no route {self.command} {self.path}"}})
                else:
                    out = api.routes[max(matches, key=lambda k: len(k[1]))](req)
                status, body, headers = out if len(out) == 3 else (*out, {})
                api.statuses.append(status)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", headers.pop("content-type", "application/json"))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _serve

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def route(self, method: str, path: str, handler: Route) -> None:
        self.routes[(method, path)] = handler

    def __enter__(self) -> FakeAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def calls(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.path.startswith(path)]

    def rejected(self) -> list[tuple[int, str, Any]]:
        """(status, path, body) of every request answered 4xx: what a real provider would have refused."""
        return [(s, r.path, r.json if r.raw[:1] == b"{" else r.raw[:80])
                for r, s in zip(self.requests, self.statuses, strict=True)
                if 400 <= s < 500]


def openai_error(status: int, message: str, type_: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None) -> tuple:
    """OpenAI's error: {"error": {"message", "type", "param", "code"}} (openai-python _exceptions.py)."""
    return status, {"error": {"message": message, "type": type_, "param": param, "code": code}}


def vllm_error(message: str, param: str | None = None) -> tuple:
    """vLLM's error (>= 0.10.1, measured on 0.32.0): an int `code` and type BadRequestError."""
    return 400, {"error": {"message": message, "type": "BadRequestError", "param": param, "code": 400}}


def anthropic_error(status: int, message: str, type_: str = "invalid_request_error") -> tuple:
    """Anthropic's error: {"type": "error", "error": {"type", "message"}, "request_id"} (docs: errors)."""
    return status, {"type": "error", "error": {"type": type_, "message": message}, "request_id": "req_fake"}


def gemini_error(status: int, message: str, reason: str = "INVALID_ARGUMENT") -> tuple:
    """Google's error: {"error": {"code", "message", "status"}} (google-genai errors.py)."""
    return status, {"error": {"code": status, "message": message, "status": reason}}


def sequence(*responses: tuple) -> Route:
    """A route answering with `responses` in turn, then repeating the last one."""
    state = {"i": 0}

    def handler(req: Request) -> tuple:
        out = responses[min(state["i"], len(responses) - 1)]
        state["i"] += 1
        return out(req) if callable(out) else out

    return handler
