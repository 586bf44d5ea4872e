"""What an OpenAI-compatible server says about the model it serves: its context window, its
output limit, whether its chat template takes tools. Local servers each say it their own way:

- llama.cpp's llama-server: `GET /props` → default_generation_settings.n_ctx (the context of a
  slot), .params.n_predict (or .n_predict in older builds; -1 = no limit), and
  chat_template_caps.supports_tools / supports_tool_calls (when false, llama-server drops
  `tools` without an error).
- Ollama: `POST /api/show {"model"}` → capabilities (lists "tools" when the template takes
  them), parameters (`num_ctx N` when the Modelfile sets it), model_info["<arch>.context_length"]
  (what the model was trained for); `GET /api/ps` → context_length of a loaded model, which is
  what Ollama really runs with (it truncates a longer prompt in silence).
- vLLM, LM Studio, OpenRouter and others: the model's entry in `GET /v1/models`, when it
  carries max_model_len, context_length or context_window.

Each probe is bounded by one overall deadline; a server that answers none of them is taken at
the settings' word. Nothing here raises: an unreachable server is the chat call's to report.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PROBE_S = 5.0  # the most seconds one probe may take, all its requests together


@dataclass(frozen=True)
class ServerFacts:
    """What the server said. `server`: llama.cpp, ollama, openai-compatible (answered none of
    the probes that say more) or unreachable. None: the server did not say."""

    server: str
    context_tokens: int | None = None
    output_tokens: int | None = None
    tools: bool | None = None
    source: str = "settings"  # the endpoint the figures come from

    @property
    def reachable(self) -> bool:
        return self.server != "unreachable"


Fetch = Callable[[str, str, dict[str, Any] | None], tuple[int, Any]]


def server_root(base_url: str) -> str:
    """The server's root: the base URL without its OpenAI `/v1` (where /props and /api live)."""
    root = base_url.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def read_facts(fetch: Fetch, base_url: str, model: str) -> ServerFacts:
    """Ask llama.cpp's, then Ollama's, then the OpenAI models endpoint, with `fetch(method,
    url, json_body) -> (status, parsed JSON or None)` (status 0: no connection)."""
    root = server_root(base_url)
    status, props = fetch("GET", f"{root}/props", None)
    if status == 0:
        return ServerFacts("unreachable")
    if status == 200 and isinstance(props, dict) and "default_generation_settings" in props:
        return _llama_cpp(props)
    # "name" for Ollama releases older than the "model" field
    status, show = fetch("POST", f"{root}/api/show", {"model": model, "name": model})
    if status == 200 and isinstance(show, dict) and ("model_info" in show
                                                      or "capabilities" in show):
        return _ollama(show, fetch, root, model)
    status, listing = fetch("GET", f"{base_url.rstrip('/')}/models", None)
    if status == 200 and isinstance(listing, dict):
        return _listed(listing, model)
    return ServerFacts("openai-compatible")


def _llama_cpp(props: dict[str, Any]) -> ServerFacts:
    settings = _dict(props.get("default_generation_settings"))
    params = _dict(settings.get("params"))
    n_predict = _int(params.get("n_predict", settings.get("n_predict")))
    caps = props.get("chat_template_caps")
    tools = None
    if isinstance(caps, dict) and "supports_tools" in caps:
        tools = caps.get("supports_tools") is True and caps.get("supports_tool_calls",
                                                                True) is True
    return ServerFacts("llama.cpp", _int(settings.get("n_ctx")),
                       n_predict if n_predict and n_predict > 0 else None, tools, "/props")


def _ollama(show: dict[str, Any], fetch: Fetch, root: str, model: str) -> ServerFacts:
    caps = show.get("capabilities")
    tools = ("tools" in caps) if isinstance(caps, list) else None
    match = re.search(r"^\s*num_ctx\s+(\d+)", str(show.get("parameters") or ""), re.M)
    context, source = (int(match.group(1)), "/api/show num_ctx") if match else (None, "")
    if context is None:
        context = _loaded_context(fetch, root, model)
        source = "/api/ps" if context else ""
    if context is None:  # Ollama runs with its own default, never more than the model knows
        trained = [_int(v) for k, v in _dict(show.get("model_info")).items()
                   if k.endswith(".context_length")]
        context = next((n for n in trained if n), None)
        source = "/api/show context_length (trained; Ollama may run with less)"
    return ServerFacts("ollama", context, None, tools, source)


def _loaded_context(fetch: Fetch, root: str, model: str) -> int | None:
    status, ps = fetch("GET", f"{root}/api/ps", None)
    if status != 200 or not isinstance(ps, dict):
        return None
    for entry in ps.get("models") or []:
        if isinstance(entry, dict) and model in (entry.get("name"), entry.get("model")):
            return _int(entry.get("context_length"))
    return None


def _listed(listing: dict[str, Any], model: str) -> ServerFacts:
    for entry in listing.get("data") or []:
        if not isinstance(entry, dict) or entry.get("id") != model:
            continue
        meta = _dict(entry.get("meta"))  # llama.cpp's /v1/models: the trained context only
        for key in ("max_model_len", "context_length", "context_window", "max_context_length"):
            if (n := _int(entry.get(key))) is not None:
                return ServerFacts("openai-compatible", n, None, None, f"/v1/models {key}")
        if (n := _int(meta.get("n_ctx"))) is not None:
            return ServerFacts("openai-compatible", n, None, None, "/v1/models meta.n_ctx")
    return ServerFacts("openai-compatible")


def bounded(call: Callable[[], ServerFacts], seconds: float) -> ServerFacts:
    """`call()`, or unknown facts once `seconds` have passed: a server that trickles its
    answer cannot hold the probe (its daemon thread ends at its own read timeout)."""
    result: list[ServerFacts] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True,
                              name="memvault-server-probe")
    thread.start()
    thread.join(seconds)
    if not result:
        return ServerFacts("openai-compatible")
    return result[0]


def urllib_fetch(headers: dict[str, str], timeout_s: float) -> Fetch:
    """A `Fetch` over the standard library (no redirects followed: a probe stays on the
    configured host); never raises (status 0 when there is no connection, -1 for a timeout or a
    broken answer, None for a body that is not JSON)."""
    import json
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)

    def fetch(method: str, url: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers={
            **headers, "Content-Type": "application/json", "Accept": "application/json"})
        try:
            with opener.open(request, timeout=timeout_s) as response:
                status, raw = response.status, response.read(2_000_000)
        except urllib.error.HTTPError as exc:
            return exc.code, None
        except urllib.error.URLError as exc:
            refused = isinstance(exc.reason, ConnectionRefusedError | OSError) and not \
                isinstance(exc.reason, TimeoutError)
            return (0 if refused else -1), None
        except Exception:  # a timeout, a reset, a protocol error: this probe says nothing
            return -1, None
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, None

    return fetch


@dataclass(frozen=True)
class Overflow:
    """A request the server refused for its context: its tokens and the context, when said."""

    prompt_tokens: int | None
    context_tokens: int | None


def context_overflow(exc: Exception) -> Overflow | None:
    """The overflow an OpenAI client error reports, if it is one: llama.cpp's 400 with error
    type `exceed_context_size_error` (n_prompt_tokens, n_ctx), OpenAI's code
    `context_length_exceeded`, or a message saying so (vLLM, Ollama, LM Studio)."""
    body = getattr(exc, "body", None)
    error = _dict(body.get("error")) if isinstance(body, dict) and "error" in body else (
        _dict(body))
    kind = f"{error.get('type', '')} {error.get('code', '')}"
    text = str(error.get("message") or exc)
    said = ("exceed_context_size_error" in kind or "context_length_exceeded" in kind
            or re.search(r"context (size|length|window)|maximum context", text, re.I)
            and re.search(r"exceed|too long|greater than|maximum", text, re.I))
    if not said:
        return None
    numbers = [int(n) for n in re.findall(r"(\d[\d,]*) tokens", text.replace(",", ""))]
    prompt = _int(error.get("n_prompt_tokens"))
    context = _int(error.get("n_ctx"))
    if context is None and numbers:  # "maximum context length is 8192 tokens … 9031 tokens"
        context = min(numbers)
        prompt = prompt or (max(numbers) if len(numbers) > 1 else None)
    return Overflow(prompt, context)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
