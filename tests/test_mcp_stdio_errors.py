"""`memvault mcp` answers every bad frame on stdio (issue "Trust", item 7).

The SDK's stdio reader turns a frame it cannot parse (a lone surrogate, nesting past its parser's
limit, a 5,000-digit integer, broken JSON) into an exception its session only logs: the host
waited until its own timeout. Now each request gets a JSON-RPC error naming the problem, with its
id when one can be read (id null otherwise), and the server goes on serving.

The real command runs as a subprocess; a reply that never comes fails the test after a generous
READ_TIMEOUT_S (it is a hang detector, not a measurement: replies come in milliseconds).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memvault.service.stdio_frames import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    frame_problem,
)

CLI = [sys.executable, "-c", "import sys; from memvault.cli import main; sys.exit(main())"]
READ_TIMEOUT_S = 60.0


class StdioServer:
    """`memvault --home H mcp` with its stdout read on a thread (so reads can give up)."""

    def __init__(self, home: Path, stderr: Path) -> None:
        self._err = stderr.open("wb")
        self.proc = subprocess.Popen([*CLI, "--home", str(home), "mcp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err,
                                     env={**os.environ, "MEMVAULT_HOME": str(home)})
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, frame: str | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((frame.encode() if isinstance(frame, str) else frame) + b"\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=READ_TIMEOUT_S)
        except queue.Empty:
            raise AssertionError(f"no reply within {READ_TIMEOUT_S:.0f}s") from None
        return json.loads(line)

    def replies_for(self, ids: list[Any]) -> dict[Any, dict[str, Any]]:
        """Read until each of `ids` has its reply (None: a reply with id null); by id."""
        wanted = list(ids)
        found: dict[Any, dict[str, Any]] = {}
        while wanted:
            message = self.reply()
            found[message.get("id")] = message
            if message.get("id") in wanted:
                wanted.remove(message.get("id"))
        return found

    def stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        finally:
            self._err.close()


@pytest.fixture
def server(home: Path, tmp_path: Path) -> Iterator[StdioServer]:
    srv = StdioServer(home, tmp_path / "mcp-stderr.log")
    try:
        srv.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}))
        assert "result" in srv.reply()
        srv.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield srv
    finally:
        srv.stop()


def append_frame(request_id: Any, arguments: str) -> str:
    """A tools/call of memory_append with `arguments` spliced in as raw JSON text."""
    return ('{"jsonrpc":"2.0","id":' + json.dumps(request_id) + ',"method":"tools/call",'
            '"params":{"name":"memory_append","arguments":' + arguments + "}}")


DEEP = '{"a":' * 600 + "1" + "}" * 600
BAD_REQUESTS = [  # id, frame, code, words the message must hold
    (1, append_frame(1, r'{"text":"\ud800"}'), INVALID_PARAMS,
     ["params.arguments.text", "lone UTF-16 surrogate"]),
    (2, append_frame(2, r'{"text":"ok","meta":{"note":"x\udfffy"}}'), INVALID_PARAMS,
     ["params.arguments.meta.note", "surrogate"]),
    (3, append_frame(3, r'{"text":"ok","source":"\ud800"}'), INVALID_PARAMS,
     ["params.arguments.source", "surrogate"]),
    (4, append_frame(4, r'{"text":"ok","meta":{"\ud800":1}}'), INVALID_PARAMS,
     ["params.arguments.meta", "key", "surrogate"]),
    (5, append_frame(5, '{"text":"ok","meta":' + DEEP + "}"), INVALID_PARAMS,
     ["params", "nested more than 200 levels"]),
    (6, append_frame(6, '{"text":"ok","meta":{"n":' + "9" * 5_000 + "}}"), INVALID_PARAMS,
     ["params.arguments.meta.n", "more than 4,300 digits"]),
    (7, '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":', PARSE_ERROR,
     ["Parse error"]),
    ("req-8", append_frame("req-8", r'{"text":"\ud800"}'), INVALID_PARAMS, ["surrogate"]),
    (9, '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"memory_append",'
        '"arguments":{"text":"ok","meta":' + DEEP + '}},"id":9}', INVALID_PARAMS,
     ["nested more than 200 levels"]),  # the id after the deep part
    (10, r'{"jsonrpc":"2.0","id":10,"method":"tools/\ud800call"}', INVALID_REQUEST,
     ["method", "surrogate"]),
    (11, append_frame(11, '{"text":"caf"}').encode().replace(b"caf", b"caf\xff"),
     INVALID_PARAMS, ["params.arguments.text", "not UTF-8"]),  # raw bytes, not an escape
]


def test_every_bad_request_gets_an_error_reply_with_its_id(server: StdioServer) -> None:
    for _, frame, _, _ in BAD_REQUESTS:
        server.send(frame)
    replies = server.replies_for([request_id for request_id, _, _, _ in BAD_REQUESTS])
    for request_id, _, code, words in BAD_REQUESTS:
        error = replies[request_id]["error"]
        assert error["code"] == code, (request_id, error)
        for word in words:
            assert word in error["message"], (request_id, error)
    # Nothing of a refused frame was stored, and the server still serves.
    server.send(append_frame(20, '{"text":"the good one"}'))
    assert server.replies_for([20])[20]["result"]["structuredContent"] == {"event_id": 1}


def test_unreadable_frames_are_answered_with_id_null_and_serving_goes_on(
    server: StdioServer,
) -> None:
    for frame in (b"not json", b'{"jsonrpc":"2.0","id":', b"\xff\xfe{", b"[1,2]", b"{}"):
        server.send(frame)
        error = server.replies_for([None])[None]["error"]
        assert error["code"] in (PARSE_ERROR, INVALID_REQUEST), (frame, error)
        assert error["message"], frame
    # A bad notification is not answered (JSON-RPC forbids it); the next request is.
    server.send(r'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"\ud800"}}')
    server.send('{"jsonrpc":"2.0","id":21,"method":"tools/call","params":'
                '{"name":"memory_status","arguments":{}}}')
    reply = server.reply()
    assert reply["id"] == 21 and reply["result"]["structuredContent"]["events"]["total"] == 0


def test_a_request_whose_id_is_an_object_is_answered_with_id_null(server: StdioServer) -> None:
    # The SDK reads it as a notification (it ignores the id) and would never answer.
    server.send('{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}')
    error = server.replies_for([None])[None]["error"]
    assert error["code"] == INVALID_REQUEST and "id" in error["message"]
    server.send('{"jsonrpc":"2.0","id":22,"method":"ping"}')
    assert server.reply()["id"] == 22


# -- frame_problem, in process ------------------------------------------------------------------


@pytest.mark.parametrize("frame", [
    append_frame(1, '{"text":"ok \\ud83d\\ude00"}'),  # a surrogate pair is one valid character
    append_frame(1, '{"text":"ok","meta":{"n":' + "9" * 4_300 + "}}"),
    append_frame(1, '{"text":"ok","meta":{"l":' + "[" * 150 + "]" * 150 + "}}"),
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
])
def test_frames_the_sdk_reads_pass(frame: str) -> None:
    assert frame_problem(frame) is None


@pytest.mark.parametrize(("frame", "code", "request_id", "reply"), [
    ("{}", INVALID_REQUEST, None, True),
    ("[]", INVALID_REQUEST, None, True),
    ('{"jsonrpc":"1.0","id":3,"method":"ping"}', INVALID_REQUEST, 3, True),
    (r'{"jsonrpc":"2.0","method":"x","params":{"a":"\ud800"}}', INVALID_PARAMS, None, False),
    ('{"jsonrpc":"2.0","method":"x","params":' + DEEP + "}", INVALID_PARAMS, None, False),
    ('{"jsonrpc":"2.0","params":{"id":5},', PARSE_ERROR, None, True),  # not the top-level id
    ('{"jsonrpc":"2.0","id":"a\\"b","method":', PARSE_ERROR, 'a"b', True),
    ('{"jsonrpc":"2.0","id":' + "9" * 5_000 + ',"method":', PARSE_ERROR, None, True),
    ('{"jsonrpc":"2.0","method":"x","params":{"q":"unterminated \\"id\\": 4', PARSE_ERROR,
     None, True),
    ("[" * 100_000, INVALID_REQUEST, None, True),  # no recursion on the way
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', INVALID_REQUEST, None, True),
    ('{"jsonrpc":"2.0","id":[1],"method":"tools/list"}', INVALID_REQUEST, None, True),
    ('{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST, None, True),
    ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID_REQUEST, None, True),
    ('{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST, None, True),
])
def test_frame_problem(frame: str, code: int, request_id: Any, reply: bool) -> None:
    problem = frame_problem(frame)
    assert problem is not None
    assert (problem.code, problem.request_id, problem.reply) == (code, request_id, reply)
    assert problem.message and "\n" not in problem.message
    problem.message.encode("utf-8")  # never a surrogate of the frame's own in the reply
