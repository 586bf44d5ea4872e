"""A small OpenAI-compatible chat-completions server for tests: 127.0.0.1, no network.

Each chat request is answered by the next queued responder: a dict (the JSON body of a 200
answer), an int (an HTTP error status), a `Status` (a status with its own JSON body), or a
callable(request_json) -> one of those. Chat requests are recorded in `requests`; the other
endpoints are answered from what the test set, and recorded in `probes`:

- `props`: the body of llama.cpp's `GET /props` (None: 404), see `llama_props`;
- `ollama_show` / `ollama_ps`: the bodies of Ollama's `POST /api/show` / `GET /api/ps`;
- `models`: the body of `GET /v1/models`.

Behaviours of real local servers, each switched on by the test: `drop_tools` (llama-server
whose template has no tools: `tools` are ignored, and the queued answer is sent without its
tool calls), `context_limit` (a prompt of more tokens, counted as llama.cpp would at ~3 chars
a token, gets llama.cpp's 400 `exceed_context_size_error`), `trickle_s` (the body goes out a
byte every so many seconds).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Status:
    """An HTTP answer with a status and a JSON body (an error's, usually)."""

    code: int
    body: dict[str, Any]


Answer = dict[str, Any] | int | str | Status
Responder = Answer | Callable[[dict[str, Any]], Answer]


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


def llama_props(n_ctx: int = 8192, n_predict: int = -1,
                supports_tools: bool | None = True) -> dict[str, Any]:
    """A `GET /props` body as llama-server sends it (the fields memvault reads)."""
    props: dict[str, Any] = {
        "default_generation_settings": {"n_ctx": n_ctx, "params": {"n_predict": n_predict}},
        "total_slots": 1, "model_path": "models/tiny.gguf", "build_info": "b0000-fake",
    }
    if supports_tools is not None:
        props["chat_template_caps"] = {"supports_tools": supports_tools,
                                       "supports_tool_calls": supports_tools}
    return props


def ollama_show(context_length: int = 32768, num_ctx: int | None = None,
                tools: bool = True) -> dict[str, Any]:
    """A `POST /api/show` body as Ollama sends it (the fields memvault reads)."""
    return {"parameters": f"num_ctx {num_ctx}\nstop \"<|im_end|>\"" if num_ctx else "",
            "model_info": {"general.architecture": "qwen2",
                           "qwen2.context_length": context_length},
            "capabilities": ["completion", "tools"] if tools else ["completion"]}


def llama_tokens(body: dict[str, Any]) -> int:
    """A prompt's tokens as the fake's llama.cpp counts them: ~3 characters a token, more
    than the engine's estimate of 4 (as real tokenizers on JSON-heavy prompts do)."""
    return len(json.dumps(body.get("messages"), ensure_ascii=False)
               + json.dumps(body.get("tools") or "")) // 3


class FakeOpenAI:
    """Start with `with FakeOpenAI() as server:`; `server.base_url` ends in /v1."""

    def __init__(self) -> None:
        self.responders: list[Responder] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.probes: list[str] = []  # "GET /props", "POST /api/show", …
        self.props: dict[str, Any] | None = None
        self.ollama_show: dict[str, Any] | None = None
        self.ollama_ps: dict[str, Any] | None = None
        self.models: dict[str, Any] | None = None
        self.drop_tools = False
        self.context_limit: int | None = None
        self.trickle_s: float | None = None
        self.stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path = self.path.split("?")[0]
                fake.probes.append(f"GET {path}")
                body = {"/props": fake.props, "/api/ps": fake.ollama_ps,
                        "/v1/models": fake.models}.get(path)
                self._send(Status(404, {"error": "not found"}) if body is None else body)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    fake.probes.append(f"POST {self.path}")
                    shown = fake.ollama_show if self.path == "/api/show" else None
                    self._send(Status(404, {"error": "not found"}) if shown is None else shown)
                    return
                fake.requests.append(body)
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                self._send(fake.answer(body))

            def _send(self, answer: Answer) -> None:
                if isinstance(answer, int):
                    answer = Status(answer, {"error": {"message": "fake failure"}})
                status, body = ((answer.code, answer.body) if isinstance(answer, Status)
                                else (200, answer))
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if fake.trickle_s is None or status != 200:
                    self.wfile.write(data)
                    return
                try:
                    for i in range(len(data)):
                        if fake.stop.wait(fake.trickle_s):
                            return
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                except OSError:  # the client hung up, as a deadline makes it do
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, body: dict[str, Any]) -> Answer:
        """The answer to one chat request, through the behaviours switched on."""
        if self.context_limit is not None and (n := llama_tokens(body)) > self.context_limit:
            return Status(400, {"error": {
                "code": 400, "type": "exceed_context_size_error",
                "message": f"request ({n} tokens) exceeds the available context size "
                           f"({self.context_limit} tokens), try increasing it",
                "n_prompt_tokens": n, "n_ctx": self.context_limit}})
        responder = self.responders.pop(0) if self.responders else 500
        answer = responder(body) if callable(responder) else responder
        if self.drop_tools and isinstance(answer, dict):
            for choice in answer.get("choices", []):
                choice["message"].pop("tool_calls", None)
                choice["message"]["content"] = choice["message"].get("content") or \
                    "I will look at the notes and file them."
                choice["finish_reason"] = "stop"
        return answer

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
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()

