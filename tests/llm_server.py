"""The tests' one local server: a real HTTP server on 127.0.0.1 (the ``server`` fixture of
``tests/conftest.py``). Mocks would hide wire bugs; this is the wire.

``POST`` plays a model provider in the two wire formats llmfix uses — OpenAI-style
``POST /v1/chat/completions`` and Anthropic-style ``POST /v1/messages`` — answering from a
script of :class:`Reply` objects (status, JSON body, headers, content type, an optional
delay) in order. ``GET`` serves documents (a remote ``$ref``: :meth:`LlmServer.serve`, with
an optional delay or a slow drip of bytes) and recorded streams sent a few bytes per HTTP
chunk (:meth:`LlmServer.stream`; :attr:`LlmServer.hold` pauses one halfway). Every request
is recorded (path, headers, parsed body); :attr:`LlmServer.paths` lists just the paths.

A reply can also be a fault, played on the real socket (see :data:`FAULTS`):

- ``truncate`` — the headers promise the whole body, half of it is sent, the connection closes;
- ``reset`` — no answer at all: the socket is closed with ``SO_LINGER`` 0, so the client
  gets a TCP reset (``ECONNRESET``) while it waits;
- ``trickle`` — the headers, then one byte of body every ``interval`` seconds, never finishing:
  it goes on until the client goes away or the server stops (or, a safety net so that a client
  without a deadline fails its test rather than hangs the suite, ``trickle_for`` seconds).

A garbage body, an HTML page and a JSON body labelled ``text/html`` need no fault: see
:func:`garbage_reply` and :func:`html_reply`, or give a :class:`Reply` a ``content_type``.

A reply can also be made from the request (``Reply.respond``): :func:`continuing` plays a
model that would write a given answer and is asked to continue it — the rest after an
assistant prefill (Anthropic messages; OpenAI-compatible with ``continue_final_message: true``
and ``add_generation_prompt: false``, as vLLM and llama.cpp's ``llama-server`` take it), or
after the prefix shown in a prompt; a server that does not take the prefill either refuses
it (HTTP 400, as OpenAI's own API does) or ignores it and starts the answer over
(llama-cpp-python's server).

    def test_x(server: LlmServer) -> None:
        server.enqueue(openai_reply('{"name": "Ada"}'))
        ... LlmConfig(base_url=server.openai_base, ...) ...
        url = server.serve("/defs.json", {"$defs": {}})  # for a remote $ref
        assert server.requests[0].body["temperature"] == 0

When the script runs out it answers 500, so a test that asks more than it scripted fails
visibly. A delayed reply and a trickle wait on an event that :meth:`LlmServer.stop` sets, so a
timed-out slow answer never holds the test up.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
RESPONSES_PATH = "/v1/responses"  # the OpenAI Responses API (answered like the other two)
FAULTS = ("truncate", "reset", "trickle")


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # dict/list → JSON; str → sent as is
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering
    content_type: str = "application/json"
    fault: str | None = None  # one of FAULTS
    interval: float = 0.2  # seconds between the bytes of a trickle
    trickle_for: float = 30.0  # then the trickle stops and the connection closes
    respond: Callable[[Recorded], Reply] | None = None  # the reply made from the request
    piece: int = 0  # > 0: the body sent with chunked transfer encoding, this many bytes a chunk

    def __post_init__(self) -> None:
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}; expected one of {FAULTS}")


@dataclass
class Route:
    """What a ``GET`` of one path answers (:meth:`LlmServer.serve`, :meth:`LlmServer.stream`)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    delay: float = 0.0  # seconds before the first byte of the body
    drip: float = 0.0  # seconds between body bytes
    piece: int = 0  # > 0: sent with chunked transfer encoding, this many bytes per chunk


NOT_FOUND = Route(404, b"not found", "text/plain")


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: Mapping[str, str]  # lower-case names
    body: Any  # the JSON body, parsed (None if it was not JSON)
    raw: str

    def user_prompt(self) -> str:
        """The text of the user message(s) sent, in either wire format."""
        messages = self.body.get("messages", []) if isinstance(self.body, dict) else []
        return "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")


def openai_reply(
    content: str | Any,
    *,
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
    model: str = "test-model",
    finish_reason: str = "stop",
) -> Reply:
    """A chat completion whose message content is ``content`` (non-strings as JSON)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return Reply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def anthropic_tool_reply(
    tool_input: Any,
    *,
    name: str = "answer",
    input_tokens: int = 13,
    output_tokens: int = 5,
    model: str = "claude-test",
) -> Reply:
    """A messages response holding one ``tool_use`` block with ``tool_input``."""
    return Reply(
        body={
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [
                {"type": "tool_use", "id": "toolu_test", "name": name, "input": tool_input}
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    )


def anthropic_text_reply(text: str) -> Reply:
    return Reply(
        body={
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 2},
        }
    )


def error_reply(
    status: int,
    message: str,
    *,
    style: str = "openai",
    headers: Mapping[str, str] | None = None,
    delay: float = 0.0,
) -> Reply:
    """An error in the provider's own shape (``style`` ``openai`` or ``anthropic``)."""
    if style == "anthropic":
        body: Any = {"type": "error", "error": {"type": "api_error", "message": message}}
    else:
        body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return Reply(status=status, body=body, headers=dict(headers or {}), delay=delay)


def tokens_of(text: str) -> int:
    """About how many tokens ``text`` is (4 characters a token, as a rule of thumb)."""
    return max(1, (len(text) + 3) // 4)


PROMPT_OPEN, PROMPT_CLOSE = "<<<\n", "\n>>>"


def continuing(
    whole: str,
    *,
    style: str = "openai",
    prefill: str = "honour",
    prompt: bool = True,
    model: str = "test-model",
    grammar: str = "ignore",
) -> Reply:
    """A model that would write ``whole``, asked to continue a cut-off answer.

    ``prefill``: ``honour`` (the last, assistant message is continued: the reply is the rest
    of ``whole`` after it), ``refuse`` (HTTP 400 naming ``continue_final_message``, as an
    API that takes no such field answers), or ``ignore`` (the prefill is taken as a
    finished message and the answer starts over: all of ``whole``). Asked with a prompt
    (no prefill), the reply is the rest after the prefix the prompt shows when ``prompt``,
    else all of ``whole``. Token counts are about 4 characters a token.

    A request with llama.cpp's ``grammar`` field: ``ignore`` (taken and not applied, as a
    server that drops unknown fields does), ``take`` (the reply must match the
    grammar, checked with :mod:`tests.gbnf`; one that does not is answered 500, so the
    test fails), ``refuse`` (HTTP 400 naming the field, as an API without it answers) or
    ``unreadable`` (HTTP 400 "failed to parse grammar", as llama-server answers a
    grammar it cannot read).
    """

    def respond(request: Recorded) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        prefilled = last.get("role") == "assistant"
        if style == "openai" and prefilled:
            prefilled = (
                body.get("continue_final_message") is True
                and body.get("add_generation_prompt") is False
            )
        if prefilled and prefill == "refuse":
            return error_reply(
                400, "Unrecognized request argument supplied: continue_final_message", style=style
            )
        constraint = body.get("grammar") if style == "openai" else None
        if constraint is not None and grammar == "refuse":
            return error_reply(400, "Unrecognized request argument supplied: grammar")
        if constraint is not None and grammar == "unreadable":
            return error_reply(400, "Failed to initialize samplers: failed to parse grammar")
        text = whole
        if prefilled and prefill == "honour":
            prefix = str(last.get("content", ""))
            text = whole[len(prefix) :] if whole.startswith(prefix) else whole
        elif not prefilled and prompt:
            shown = request.user_prompt()
            start = shown.find(PROMPT_OPEN)
            end = shown.find(PROMPT_CLOSE, start + len(PROMPT_OPEN))
            prefix = shown[start + len(PROMPT_OPEN) : end] if 0 <= start < end else ""
            if prefix and whole.startswith(prefix):
                text = whole[len(prefix) :]
        if isinstance(constraint, str) and grammar == "take":
            from tests.gbnf import matches

            if not matches(constraint, text):
                return error_reply(500, f"the reply {text!r} does not match the grammar")
        size = sum(tokens_of(str(m.get("content", ""))) for m in messages)
        if style == "anthropic":
            reply = anthropic_text_reply(text)
            reply.body["usage"] = {"input_tokens": size, "output_tokens": tokens_of(text)}
            reply.body["stop_reason"] = "end_turn"
            return reply
        return openai_reply(
            text, prompt_tokens=size, completion_tokens=tokens_of(text), model=model
        )

    return Reply(respond=respond)


def _payload(reply: Reply) -> bytes:
    if reply.body is None and reply.fault is not None:
        return b""
    text = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
    return text.encode("utf-8")


def garbage_reply(text: str = "\x00\x1bgarbage ¿ {{{ not json ]]", **changes: Any) -> Reply:
    """A 200 whose body is not JSON (labelled ``application/json`` all the same)."""
    return Reply(body=text, **changes)


def html_reply(status: int = 200, title: str = "Sign in to continue", **changes: Any) -> Reply:
    """An HTML page, as a proxy's login page, a captive portal or a web UI serves it."""
    page = (
        "<!DOCTYPE html>\n<html>\n<head><title>"
        f"{title}</title></head>\n<body><h1>{title}</h1>\n<form></form></body>\n</html>\n"
    )
    return Reply(status=status, body=page, content_type="text/html; charset=utf-8", **changes)


def truncated(reply: Reply) -> Reply:
    """``reply`` cut off: its full length announced, half of its body sent, then closed."""
    return replace(reply, fault="truncate")


def reset_reply() -> Reply:
    """No answer: the connection is reset (TCP RST) once the request is read."""
    return Reply(fault="reset")


def trickle_reply(interval: float = 0.2, status: int = 200) -> Reply:
    """Headers, then one byte every ``interval`` seconds, never finishing."""
    return Reply(status=status, fault="trickle", interval=interval)


class LlmServer:
    """The scripted provider; a context manager that starts and stops it."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.routes: dict[str, Route] = {}  # what GET answers, by path
        self.hold: str | None = None  # a streamed path to stop halfway until `release` is set
        self.release = threading.Event()
        self.chunked: list[str] = []  # the streamed paths sent to their end
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> LlmServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace")
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = owner._next(Recorded(self.path, headers, body, raw))
                if reply.delay and owner._stopping.wait(reply.delay):
                    return
                if reply.fault == "reset":
                    self._reset()
                    return
                data = _payload(reply)
                if reply.piece and reply.fault is None:
                    self._chunked_reply(reply, data)
                    return
                length = 10**9 if reply.fault == "trickle" else len(data)
                if reply.fault == "truncate":
                    data = data[: len(data) // 2]
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    self.send_header("content-length", str(length))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                    if reply.fault == "trickle":
                        self._trickle(reply.interval, reply.trickle_for)
                except ConnectionError:  # the client went away (a trickle ends this way)
                    self.close_connection = True
                if reply.fault is not None:
                    self.close_connection = True

            def do_GET(self) -> None:
                """A route (:meth:`LlmServer.serve`, :meth:`LlmServer.stream`), else 404;
                recorded like a POST, so a test can assert that nothing was fetched."""
                headers = {k.lower(): v for k, v in self.headers.items()}
                with owner._lock:
                    owner.requests.append(Recorded(self.path, headers, None, ""))
                    route = owner.routes.get(self.path, NOT_FOUND)
                if route.delay and owner._stopping.wait(route.delay):
                    return
                try:
                    self.send_response(route.status)
                    self.send_header("content-type", route.content_type)
                    if route.piece:
                        self.send_header("transfer-encoding", "chunked")
                    else:
                        self.send_header("content-length", str(len(route.body)))
                    self.end_headers()
                    if route.piece:
                        self._chunks(route.body, route.piece)
                    elif route.drip:
                        self._drip(route.body, route.drip)
                    else:
                        self.wfile.write(route.body)
                except ConnectionError:  # the client gave up
                    self.close_connection = True

            def _chunked_reply(self, reply: Reply, data: bytes) -> None:
                """A reply sent a piece at a time (a stream, as the APIs send theirs)."""
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    self.send_header("transfer-encoding", "chunked")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self._chunks(data, reply.piece)
                except ConnectionError:
                    self.close_connection = True

            def _chunks(self, data: bytes, size: int) -> None:
                for start in range(0, len(data), size):
                    if owner.hold == self.path and start >= len(data) // 2:
                        owner.release.wait(30)
                        owner.hold = None
                    piece = data[start : start + size]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                with owner._lock:
                    owner.chunked.append(self.path)

            def _drip(self, data: bytes, interval: float) -> None:
                for byte in data:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    if owner._stopping.wait(interval):
                        return

            def _reset(self) -> None:
                """Close at once with SO_LINGER 0: the kernel sends RST, not FIN."""
                self.close_connection = True
                self.rfile.close()  # drops the makefile reference, so close() is real
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.close()

            def _trickle(self, interval: float, seconds: float) -> None:
                end = time.monotonic() + seconds
                while time.monotonic() < end and not owner._stopping.wait(interval):
                    self.wfile.write(b" ")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LlmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ script

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base(self) -> str:
        """The base URL in the OpenAI SDK convention (ending in /v1)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base(self) -> str:
        """The base URL in the Anthropic SDK convention (no /v1)."""
        return self.url

    def serve(self, path: str, body: Any, content_type: str = "application/json") -> str:
        """Answer ``GET path`` with ``body`` (bytes or str as is, anything else as JSON);
        the URL. Change :attr:`routes` ``[path]`` for a delay or a drip."""
        if isinstance(body, bytes):
            data = body
        else:
            data = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode()
        self.routes[path] = Route(body=data, content_type=content_type)
        return self.url + path

    def stream(self, path: str, data: bytes, content_type: str, piece: int = 37) -> str:
        """Answer ``GET path`` with ``data``, ``piece`` bytes per HTTP chunk; the URL."""
        self.routes[path] = Route(body=data, content_type=content_type, piece=piece)
        return self.url + path

    @property
    def paths(self) -> list[str]:
        """The path of every request so far, in order."""
        with self._lock:
            return [r.path for r in self.requests]

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def _next(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            if request.path.partition("?")[0] not in (OPENAI_PATH, ANTHROPIC_PATH, RESPONSES_PATH):
                return error_reply(404, f"no route {request.path}")
            if not self._replies:
                return error_reply(500, "the test scripted no more replies")
            reply = self._replies.popleft()
        return reply.respond(request) if reply.respond is not None else reply

    def bodies(self) -> Iterator[Any]:
        return (r.body for r in self.requests)
