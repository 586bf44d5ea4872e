"""A small OpenAI-compatible chat-completions server for tests: 127.0.0.1, no network.

Each request is answered by the next queued responder: a dict (the JSON body of a 200 answer),
an int (an HTTP error status), or a callable(request_json) -> dict. Requests are recorded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = dict[str, Any] | int | str | Callable[[dict[str, Any]], dict[str, Any]]


def completion(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None,
               finish_reason: str = "stop", usage: dict[str, int] | None = None,
               model: str = "fake-model") -> dict[str, Any]:
    """A chat.completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = {**usage, "total_tokens": sum(usage.values())}
    return body


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str = "call_1") -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


class FakeOpenAI:
    """Start with `with FakeOpenAI() as server:`; `server.base_url` ends in /v1."""

    def __init__(self) -> None:
        self.responders: list[Responder] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(body)
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                responder = fake.responders.pop(0) if fake.responders else 500
                if callable(responder):
                    responder = responder(body)
                if isinstance(responder, int):
                    self.send_response(responder)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "fake failure"}}')
                    return
                data = (responder if isinstance(responder, str)
                        else json.dumps(responder)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def queue(self, *responders: Responder) -> None:
        self.responders.extend(responders)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
