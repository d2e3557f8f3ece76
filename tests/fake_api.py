"""A scripted HTTP server on 127.0.0.1 that answers in the exact wire format of the OpenAI and Anthropic APIs,
for the endpoints and failures we cannot reach from here (hosted APIs, batch APIs, 429s, 5xx, partial batch
failures). Each route is a function (request) -> (status, json body or bytes[, headers]); every request is
recorded (method, path, headers, body) so tests can count calls and check what was sent.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


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
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", headers.pop("content-type", "application/json"))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def route(self, method: str, path: str, handler: Route) -> None:
        self.routes[(method, path)] = handler

    def __enter__(self) -> "FakeAPI":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def calls(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.path.startswith(path)]


def sequence(*responses: tuple) -> Route:
    """A route answering with `responses` in turn, then repeating the last one."""
    state = {"i": 0}

    def handler(req: Request) -> tuple:
        out = responses[min(state["i"], len(responses) - 1)]
        state["i"] += 1
        return out(req) if callable(out) else out

    return handler
