"""The proxy's ASGI application, run by uvicorn, with aiohttp to the upstream. Needs the
``proxy`` extra.

Requests to the three checked routes (:data:`llmfix.proxy.expect.ROUTES`) are forwarded
and their answers checked: a whole response by :mod:`llmfix.proxy.whole`, a stream by
:mod:`llmfix.proxy.streams`. ``/metrics`` is the proxy's own; every other path is passed
through untouched. The client's headers (its API key among them) go upstream as they came
and are never logged.

The application speaks ASGI itself rather than through a framework: it serves three
routes and a page, and on a streamed answer its work is per chunk, where a framework's
routing, request objects and response classes cost more than the check of a valid answer
(``bench/bench_proxy.py``). The upstream client is aiohttp, whose compiled HTTP parser
reads a stream at a third of httpx's CPU time and hands over everything that has arrived
in one read: what arrived together is sent on together.

What happens to an answer that fails the check is the policy's (``on_failure``):
``pass`` sends it as the model wrote it, marked in the headers (and the stream's last
event); ``error`` answers ``502`` with an error in the API's own shape and
``x-should-retry: false`` (the OpenAI and Anthropic SDKs raise it and do not retry).
A refusal is passed under either: the SDKs have a place for it.

Limits: the request body (``max_request``), the upstream's answer (``max_response``),
the wait for the upstream (``timeout`` between two reads, ``connect_timeout`` to
connect): a slow or failing upstream gives the client a ``504`` or ``502`` in the API's
shape, or the upstream's own error, never a hang. A client that goes away mid-stream
closes the upstream connection, so that the model stops writing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
from yarl import URL

from llmfix.errors import LlmfixError
from llmfix.proxy.exchanges import ExchangeLog
from llmfix.proxy.expect import ROUTES, Compiled, Configured, Expectation, expectation
from llmfix.proxy.metrics import Metrics
from llmfix.proxy.streams import StreamGuard
from llmfix.proxy.verdict import UNCHECKED, Verdict
from llmfix.proxy.whole import Checked, ModelRepair, check_whole

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from llmfix.proxy.metrics import Peers
    from llmfix.run.settings import RepairRun

    Scope = dict[str, Any]
    Receive = Callable[[], Awaitable[dict[str, Any]]]
    Send = Callable[[dict[str, Any]], Awaitable[None]]

# Headers that belong to one connection, not to the message (RFC 9110 7.6.1), and those
# the proxy sets itself. The client's accept-encoding is not forwarded: the proxy reads
# the answers, so it asks for them uncompressed.
_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
        b"content-encoding",
        b"accept-encoding",
    }
)
# Headers aiohttp would add to a request of its own accord: the client's go as they came.
_NOT_ADDED = frozenset({"User-Agent", "Accept", "Accept-Encoding", "Content-Type"})
_SECRET_HEADERS = (b"authorization", b"x-api-key", b"api-key", b"x-goog-api-key")
# Bodies up to this size are checked on the event loop; larger ones in a worker thread.
_INLINE = 64 * 1024
_JSON = (b"content-type", b"application/json")


@dataclass
class ProxySettings:
    """How one proxy runs (built by the command from its flags, see ``llmfix proxy``)."""

    upstream: str
    run: RepairRun
    configured: Configured = field(default_factory=Configured)
    on_failure: str = "pass"
    max_request: int = 10_000_000
    max_response: int = 50_000_000
    timeout: float = 600.0
    connect_timeout: float = 10.0
    log: str | None = None
    redact: bool = True
    model: ModelRepair | None = None  # the opt-in LLM repair of failed answers


class TooLarge(Exception):
    pass


class Disconnected(Exception):
    """The client went away."""


def build_app(settings: ProxySettings, peers: Peers | None = None) -> ProxyApp:
    """The ASGI application for ``settings`` (``peers``: the other worker processes,
    whose counters ``/metrics`` adds to this one's)."""
    return ProxyApp(settings, peers)


class ProxyApp:
    """The proxy as an ASGI application (HTTP and lifespan)."""

    def __init__(self, settings: ProxySettings, peers: Peers | None = None) -> None:
        self.settings = settings
        self.peers = peers
        self.metrics = Metrics()
        self.compiled = Compiled(settings.run.options.allow_remote_refs)
        self.log = (
            ExchangeLog(settings.log, redact_personal=settings.redact) if settings.log else None
        )
        self.session: aiohttp.ClientSession | None = None
        self._upstream = settings.upstream.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=settings.connect_timeout, sock_read=settings.timeout
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            path, method = scope["path"], scope["method"]
            api = ROUTES.get(path)
            try:
                if api is not None and method == "POST":
                    await self._checked(scope, receive, send, api)
                elif path == "/metrics" and method == "GET":
                    await self._metrics_page(send)
                else:
                    await self._passed(scope, receive, send)
            except Disconnected:
                return
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    # ------------------------------------------------------------------ life

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as error:  # the server says it and stops
                    await send({"type": "lifespan.startup.failed", "message": str(error)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def startup(self) -> None:
        self._session()
        if self.peers is not None:
            await self.peers.start(self.metrics)

    async def shutdown(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None
        if self.peers is not None:
            await self.peers.stop()
        if self.log is not None:
            self.log.close()

    def _session(self) -> aiohttp.ClientSession:
        """The upstream client: one pool of kept-alive connections; no cookies kept
        (one client's must never reach another's request); an HTTP(S) proxy of the
        environment used as httpx uses it."""
        if self.session is None:
            connector = aiohttp.TCPConnector(
                limit=1000, limit_per_host=0, ttl_dns_cache=300, ssl=_ssl_context()
            )
            self.session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                skip_auto_headers=_NOT_ADDED,
                timeout=self._timeout,
                max_field_size=65536,
                max_line_size=65536,
                proxy=_env_proxy(self._upstream),
            )
        return self.session

    # ------------------------------------------------------------------ routes

    async def _metrics_page(self, send: Send) -> None:
        others = await self.peers.snapshots() if self.peers is not None else []
        body = self.metrics.render(others).encode()
        headers = [(b"content-type", b"text/plain; version=0.0.4")]
        await _respond(send, 200, headers, body)

    async def _passed(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Any other path: forwarded as it is, the answer streamed back unchecked."""
        try:
            body = await _read_body(scope, receive, self.settings.max_request)
        except TooLarge:
            await _error(send, None, 413, "the request body is larger than the limit")
            return
        try:
            upstream = await self._send_upstream(scope, body)
        except asyncio.TimeoutError:
            await _error(send, None, 504, "the upstream API did not answer in time")
            return
        except aiohttp.ClientError as error:
            await _error(send, None, 502, f"cannot reach the upstream API: {_why(error)}")
            return
        try:
            await send(_start(upstream.status, _kept(upstream, keep_length=True)))
            watch = _Watch(receive)
            try:
                async for data in upstream.content.iter_any():
                    if watch.gone():
                        return
                    await send({"type": "http.response.body", "body": data, "more_body": True})
            except (aiohttp.ClientError, asyncio.TimeoutError):
                pass
            finally:
                watch.stop()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            upstream.close()

    async def _checked(self, scope: Scope, receive: Receive, send: Send, api: str) -> None:
        """One of the checked routes."""
        route = scope["path"]
        try:
            raw = await _read_body(scope, receive, self.settings.max_request)
        except TooLarge:
            await _error(send, api, 413, "the request body is larger than the limit")
            return
        # the proxy's own time: its work between the reads and writes, never their waits
        started = time.perf_counter()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        try:
            expect = expectation(api, body, self.compiled, self.settings.configured, route)
        except LlmfixError as error:
            message = f"llmfix cannot use the request's schema: {error}"
            await _error(send, api, 400, message)
            return
        stream = isinstance(body, dict) and body.get("stream") is True
        added = time.perf_counter() - started
        try:
            upstream = await self._send_upstream(scope, raw)
        except asyncio.TimeoutError:
            self._count(route, "upstream_error", Verdict(), added)
            await _error(send, api, 504, "the upstream API did not answer in time")
            return
        except aiohttp.ClientError as error:
            self._count(route, "upstream_error", Verdict(), added)
            await _error(send, api, 502, f"cannot reach the upstream API: {_why(error)}")
            return
        try:
            secrets = _secrets(scope)
            sse = upstream.content_type == "text/event-stream"
            if stream and sse and upstream.status == 200:
                if not (expect.json or expect.registry is not None):  # nothing to check
                    await self._relay_unchecked(
                        upstream, route, body, secrets, added, send, receive
                    )
                    return
                guard = StreamGuard(
                    api, expect, self.settings.run, self.settings.on_failure, self.settings.model
                )
                await self._relay(upstream, guard, route, body, secrets, added, send, receive)
                return
            await self._whole(upstream, api, route, expect, body, secrets, added, send)
        finally:
            upstream.close()

    # ------------------------------------------------------------------ forwarding

    async def _send_upstream(self, scope: Scope, body: bytes) -> aiohttp.ClientResponse:
        path = scope.get("raw_path") or scope["path"].encode()
        url = _join(self._upstream, path.decode("latin-1"), scope["query_string"])
        headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"] if k not in _HOP
        ]
        return await self._session().request(
            scope["method"],
            URL(url, encoded=True),
            headers=headers,
            data=body or None,
            allow_redirects=False,
        )

    async def _whole(
        self,
        upstream: aiohttp.ClientResponse,
        api: str,
        route: str,
        expect: Expectation,
        request: Any,
        secrets: list[str],
        added: float,
        send: Send,
    ) -> None:
        try:
            data = await _read_response(upstream, self.settings.max_response)
        except TooLarge:
            self._count(route, "upstream_error", Verdict(), added)
            await _error(send, api, 502, "the upstream's answer is larger than the limit")
            return
        except asyncio.TimeoutError:
            self._count(route, "upstream_error", Verdict(), added)
            await _error(send, api, 504, "the upstream API stopped answering")
            return
        except aiohttp.ClientError as error:
            self._count(route, "upstream_error", Verdict(), added)
            message = f"the upstream's answer broke off: {_why(error)}"
            await _error(send, api, 502, message)
            return
        started = time.perf_counter()
        headers = _kept(upstream)
        if upstream.status // 100 != 2:  # the upstream's own error, as it came
            headers.append((b"x-llmfix-status", UNCHECKED.encode()))
            self._logged(route, request, upstream.status, data, Verdict(), secrets, False)
            self._count(route, "upstream_error", Verdict(), added)
            await _respond(send, upstream.status, headers, data)
            return
        text = data.decode("utf-8", "replace")
        checked = Checked(Verdict())
        if expect.json or expect.registry is not None:
            if len(data) <= _INLINE and self.settings.model is None:
                checked = self._check(text, expect)
            else:
                loop = asyncio.get_running_loop()
                checked = await loop.run_in_executor(None, self._check, text, expect)
        verdict = checked.verdict
        headers += [(k.encode(), v.encode()) for k, v in verdict.headers().items()]
        status = upstream.status
        content = data
        if not verdict.passed and self.settings.on_failure == "error" and not _refused(verdict):
            status, content = 502, _error_body(api, verdict)
            headers = [h for h in headers if h[0].lower() != b"content-type"]
            headers += [_JSON, (b"x-should-retry", b"false")]
        elif checked.body is not None:
            content = json.dumps(checked.body, ensure_ascii=False).encode("utf-8")
        added += time.perf_counter() - started
        headers.append((b"x-llmfix-added-ms", f"{added * 1000:.2f}".encode()))
        self._logged(route, request, upstream.status, text, verdict, secrets, False)
        self._count(route, verdict.status, verdict, added)
        await _respond(send, status, headers, content)

    def _check(self, text: str, expect: Expectation) -> Checked:
        """The answer's check; a failure of the check itself (a provider failing the LLM
        repair, a bug of ours) leaves the answer unchecked, sent as it came."""
        try:
            return check_whole(text, expect, self.settings.run, self.settings.model)
        except LlmfixError as error:
            return Checked(Verdict(errors=(str(error),)))
        except Exception as error:
            return Checked(
                Verdict(errors=(f"llmfix: internal error, answer unchecked: {error!r}",))
            )

    async def _relay(
        self,
        upstream: aiohttp.ClientResponse,
        guard: StreamGuard,
        route: str,
        request: Any,
        secrets: list[str],
        added: float,
        send: Send,
        receive: Receive,
    ) -> None:
        """A checked stream: each read from the upstream goes through the guard, and what
        it gives is sent on at once, in one write. With the LLM repair on, the guard works
        in a thread (its end may wait for the model)."""
        headers = _kept(upstream)
        headers.append((b"x-llmfix-status", b"stream"))
        await send(_start(200, headers))
        received = 0
        failed: str | None = None  # the guard's own failure: the rest passes unchecked
        loop = asyncio.get_running_loop()
        threaded = self.settings.model is not None
        watch = _Watch(receive)
        try:
            async for data in upstream.content.iter_any():
                if watch.gone():
                    return
                received += len(data)
                if received > self.settings.max_response:
                    out = guard.abandon(b"") + _stream_error(guard.api, "the answer is too large")
                    await _body(send, out)
                    break
                if failed is not None:
                    await _body(send, data)
                    continue
                started = time.perf_counter()
                try:
                    if threaded:
                        out = await loop.run_in_executor(None, guard.feed, data)
                    else:
                        out = guard.feed(data)
                except Exception as error:  # never break the app's stream on a bug of ours
                    failed = f"llmfix: internal error, stream passed unchecked: {error!r}"
                    out = guard.abandon(b"")
                if out:
                    await _body(send, out)
                if not threaded:
                    guard.prepare()  # work ahead, once what arrived has gone out
                added += time.perf_counter() - started
            else:
                if failed is None:
                    started = time.perf_counter()
                    try:
                        if threaded:
                            out = await loop.run_in_executor(None, guard.close)
                        else:
                            out = guard.close()
                    except Exception as error:
                        failed = f"llmfix: internal error, stream passed unchecked: {error!r}"
                        out = guard.abandon(b"")
                    added += time.perf_counter() - started
                    if out:
                        await _body(send, out)
        except asyncio.TimeoutError:
            await _body(send, _stream_error(guard.api, "the upstream API stopped answering"))
        except aiohttp.ClientError as error:
            message = f"the upstream's stream broke off: {_why(error)}"
            await _body(send, _stream_error(guard.api, message))
        finally:
            watch.stop()
            verdict = guard.verdict or Verdict()
            if failed is not None:
                verdict = Verdict(errors=(failed,))
            self._logged(route, request, 200, guard.message, verdict, secrets, True)
            self._count(route, verdict.status, verdict, added)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _relay_unchecked(
        self,
        upstream: aiohttp.ClientResponse,
        route: str,
        request: Any,
        secrets: list[str],
        added: float,
        send: Send,
        receive: Receive,
    ) -> None:
        """A stream the request asked nothing checkable of: passed on as it comes (and
        decoded on the side for the log, when there is one)."""
        # (start-up: loaded by the first streamed request)
        from llmfix.stream.wire import WireDecoder

        headers = _kept(upstream)
        headers.append((b"x-llmfix-status", UNCHECKED.encode()))
        await send(_start(200, headers))
        decoder = WireDecoder() if self.log is not None else None
        watch = _Watch(receive)
        try:
            async for data in upstream.content.iter_any():
                if watch.gone():
                    return
                await _body(send, data)
                if decoder is not None:
                    decoder.feed(data)
        except (aiohttp.ClientError, asyncio.TimeoutError) as error:
            message = f"the upstream's stream broke off: {_why(error)}"
            await _body(send, _stream_error(ROUTES[route], message))
        finally:
            watch.stop()
            if decoder is not None:
                decoder.close()
                self._logged(route, request, 200, decoder.message(), Verdict(), secrets, True)
            self._count(route, UNCHECKED, Verdict(), added)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    # ------------------------------------------------------------------ records

    def _count(self, route: str, status: str, verdict: Verdict, added: float) -> None:
        action = None
        if status != "upstream_error" and not verdict.passed:
            error = self.settings.on_failure == "error" and status != "refused"
            action = "error" if error else "passed"
        self.metrics.record(route, status, verdict.repairs, added, action)

    def _logged(
        self,
        route: str,
        request: Any,
        status_code: int,
        body: Any,
        verdict: Verdict,
        secrets: list[str],
        stream: bool,
    ) -> None:
        if self.log is None:
            return
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        if isinstance(body, str):
            with contextlib.suppress(ValueError):
                body = json.loads(body)
        said = verdict.to_dict()
        if status_code // 100 != 2:
            said["status"] = "upstream_error"
        self.log.write(
            route=route,
            request=request,
            status_code=status_code,
            body=body,
            verdict=said,
            secrets=secrets,
            stream=stream,
        )


class _Watch:
    """Whether the client went away while its answer streams: one pending ``receive()``
    (ASGI says ``http.disconnect`` there), looked at after each read of the upstream."""

    __slots__ = ("_waiting",)

    def __init__(self, receive: Receive) -> None:
        self._waiting: asyncio.Future[dict[str, Any]] = asyncio.ensure_future(receive())

    def gone(self) -> bool:
        if not self._waiting.done():
            return False
        return self._waiting.cancelled() or self._waiting.result()["type"] == "http.disconnect"

    def stop(self) -> None:
        self._waiting.cancel()


# ---------------------------------------------------------------------- helpers


def _join(base: str, path: str, query: bytes) -> str:
    """The upstream URL of ``path``: ``base`` + ``path`` (one ``/v1`` when both have it)."""
    if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
        path = path[3:]
    return f"{base}{path}" + (f"?{query.decode('latin-1')}" if query else "")


def _kept(upstream: aiohttp.ClientResponse, *, keep_length: bool = False) -> list[Any]:
    """The upstream's response headers the client gets (``keep_length``: its
    content-length too, for a body passed on as it came, uncompressed)."""
    kept = []
    compressed = False
    length = None
    for name, value in upstream.raw_headers:
        lower = name.lower()
        if lower == b"content-length":
            length = value
        elif lower == b"content-encoding":
            compressed = compressed or value.strip().lower() != b"identity"
        if lower not in _HOP:
            kept.append((lower, value))
    if keep_length and length is not None and not compressed:
        kept.append((b"content-length", length))
    return kept


def _start(status: int, headers: list[Any]) -> dict[str, Any]:
    return {"type": "http.response.start", "status": status, "headers": headers}


async def _body(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def _respond(send: Send, status: int, headers: list[Any], body: bytes) -> None:
    headers.append((b"content-length", str(len(body)).encode()))
    await send(_start(status, headers))
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _secrets(scope: Scope) -> list[str]:
    found = []
    for name, raw in scope["headers"]:
        if name in _SECRET_HEADERS and raw:
            value = raw.decode("latin-1")
            found.append(value)
            found.append(value.split(" ", 1)[-1])  # the token of "Bearer TOKEN"
    return found


def _why(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _refused(verdict: Verdict) -> bool:
    return verdict.status == "refused"


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    for name, value in scope["headers"]:
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            raise TooLarge
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge
        parts.append(chunk)
        if not message.get("more_body", False):
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)


async def _read_response(upstream: aiohttp.ClientResponse, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in upstream.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise TooLarge
        parts.append(chunk)
    return b"".join(parts)


def _error_payload(api: str | None, message: str, kind: str, code: str | None) -> dict[str, Any]:
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": code}}


async def _error(send: Send, api: str | None, status: int, message: str) -> None:
    """An error the proxy itself answers, in the API's own shape."""
    kinds = {400: "invalid_request_error", 413: "request_too_large", 502: "api_error"}
    payload = _error_payload(api, f"llmfix proxy: {message}", kinds.get(status, "api_error"), None)
    headers = [
        _JSON,
        (b"x-llmfix-status", UNCHECKED.encode()),
        (b"x-should-retry", b"false" if status < 500 else b"true"),
    ]
    await _respond(send, status, headers, json.dumps(payload).encode())


def _error_body(api: str, verdict: Verdict) -> bytes:
    why = "; ".join(verdict.failures + verdict.errors[:3])
    message = f"llmfix: the model's answer failed the check ({verdict.status}): {why}"
    payload = _error_payload(api, message, "llmfix_invalid_response", verdict.status)
    payload["llmfix"] = verdict.to_dict()
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


def _stream_error(api: str, message: str) -> bytes:
    payload = _error_payload(api, f"llmfix proxy: {message}", "api_error", None)
    if api == "anthropic":
        return f"event: error\ndata: {json.dumps(payload)}\n\n".encode()
    if api == "openai-responses":
        payload = {"type": "error", "message": message, "code": None, "param": None, **payload}
        return f"event: error\ndata: {json.dumps(payload)}\n\n".encode()
    return f"data: {json.dumps(payload)}\n\n".encode()


def _ssl_context() -> Any:
    """The certificates httpx (and so the rest of llmfix) trusts: certifi's."""
    import ssl

    try:
        import certifi
    except ImportError:  # pragma: no cover - httpx depends on it
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


def _env_proxy(upstream: str) -> str | None:
    """The HTTP(S) proxy the environment names for the upstream (``HTTPS_PROXY``,
    ``NO_PROXY``, ...), as httpx finds it; read once."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(upstream)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)
