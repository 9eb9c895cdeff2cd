"""The proxy's ASGI application (Starlette) and its server (uvicorn), with httpx to the
upstream. Needs the ``proxy`` extra.

Requests to the three checked routes (:data:`llmfix.proxy.expect.ROUTES`) are forwarded
and their answers checked: a whole response by :mod:`llmfix.proxy.whole`, a stream by
:mod:`llmfix.proxy.streams`. ``/metrics`` is the proxy's own; every other path is passed
through untouched. The client's headers (its API key among them) go upstream as they came
and are never logged.

What happens to an answer that fails the check is the policy's (``on_failure``):
``pass`` sends it as the model wrote it, marked in the headers (and the stream's last
event); ``error`` answers ``502`` with an error in the API's own shape and
``x-should-retry: false`` (the OpenAI and Anthropic SDKs raise it and do not retry).
A refusal is passed under either: the SDKs have a place for it.

Limits: the request body (``max_request``), the upstream's answer (``max_response``),
the wait for the upstream (``timeout`` between two reads, ``connect_timeout`` to
connect): a slow or failing upstream gives the client a ``504`` or ``502`` in the API's
shape, or the upstream's own error, never a hang.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from llmfix.errors import LlmfixError
from llmfix.proxy.exchanges import ExchangeLog
from llmfix.proxy.expect import ROUTES, Compiled, Configured, Expectation, expectation
from llmfix.proxy.metrics import Metrics
from llmfix.proxy.streams import StreamGuard
from llmfix.proxy.verdict import UNCHECKED, Verdict
from llmfix.proxy.whole import Checked, ModelRepair, check_whole

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from llmfix.run.settings import RepairRun

# Headers that belong to one connection, not to the message (RFC 9110 7.6.1), and those
# the proxy sets itself.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
        "accept-encoding",
    }
)
_SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
# Bodies up to this size are checked on the event loop; larger ones in a worker thread.
_INLINE = 64 * 1024


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
    model: ModelRepair | None = None  # the opt-in LLM repair of failed text answers


class TooLarge(Exception):
    pass


def build_app(settings: ProxySettings) -> Starlette:
    """The ASGI application for ``settings``."""
    proxy = _Proxy(settings)
    routes = [
        Route("/metrics", proxy.metrics_page, methods=["GET"]),
        *(Route(path, proxy.checked, methods=["POST"]) for path in ROUTES),
        Route(
            "/{path:path}",
            proxy.passed,
            methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
        ),
    ]
    app = Starlette(routes=routes, lifespan=proxy.lifespan)
    app.state.proxy = proxy
    return app


class _Proxy:
    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.compiled = Compiled(settings.run.options.allow_remote_refs)
        self.log = (
            ExchangeLog(settings.log, redact_personal=settings.redact) if settings.log else None
        )
        self.client: httpx.AsyncClient | None = None

    def lifespan(self, app: Starlette) -> Any:
        @contextlib.asynccontextmanager
        async def span(app: Starlette) -> AsyncIterator[None]:
            timeout = httpx.Timeout(self.settings.timeout, connect=self.settings.connect_timeout)
            limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
            self.client = httpx.AsyncClient(timeout=timeout, limits=limits)
            try:
                yield
            finally:
                await self.client.aclose()
                if self.log is not None:
                    self.log.close()

        return span(app)

    # ------------------------------------------------------------------ routes

    async def metrics_page(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type="text/plain; version=0.0.4")

    async def passed(self, request: Request) -> Response:
        """Any other path: forwarded as it is, the answer streamed back unchecked."""
        try:
            body = await _read_limited(request, self.settings.max_request)
        except TooLarge:
            return _error(None, 413, "the request body is larger than the proxy's limit")
        try:
            upstream = await self._send(request, body)
        except httpx.TimeoutException:
            return _error(None, 504, "the upstream API did not answer in time")
        except httpx.TransportError as error:
            return _error(None, 502, f"cannot reach the upstream API: {_why(error)}")

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_bytes():
                    yield chunk
            except httpx.HTTPError:
                return
            finally:
                await upstream.aclose()

        return StreamingResponse(
            relay(), status_code=upstream.status_code, headers=_kept(upstream.headers)
        )

    async def checked(self, request: Request) -> Response:
        """One of the checked routes."""
        route = request.url.path
        api = ROUTES[route]
        try:
            raw = await _read_limited(request, self.settings.max_request)
        except TooLarge:
            return _error(api, 413, "the request body is larger than the proxy's limit")
        # the proxy's own time: its work between the reads and writes, never their waits
        started = time.perf_counter()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        try:
            expect = expectation(api, body, self.compiled, self.settings.configured, route)
        except LlmfixError as error:
            return _error(api, 400, f"llmfix cannot use the request's schema: {error}")
        stream = isinstance(body, dict) and body.get("stream") is True
        added = time.perf_counter() - started
        secrets = _secrets(request)
        try:
            upstream = await self._send(request, raw)
        except httpx.TimeoutException:
            self._count(route, "upstream_error", Verdict(), added)
            return _error(api, 504, "the upstream API did not answer in time")
        except httpx.TransportError as error:
            self._count(route, "upstream_error", Verdict(), added)
            return _error(api, 502, f"cannot reach the upstream API: {_why(error)}")
        sse = upstream.headers.get("content-type", "").startswith("text/event-stream")
        if stream and sse and upstream.status_code == 200:
            if not (expect.json or expect.registry is not None):  # nothing to check
                return StreamingResponse(
                    self._relay_unchecked(upstream, route, body, secrets, added),
                    status_code=200,
                    headers={**_kept(upstream.headers), "x-llmfix-status": UNCHECKED},
                )
            guard = StreamGuard(api, expect, self.settings.run, self.settings.on_failure)
            return StreamingResponse(
                self._relay(upstream, guard, route, body, secrets, added),
                status_code=200,
                headers={**_kept(upstream.headers), "x-llmfix-status": "stream"},
            )
        return await self._whole(upstream, api, route, expect, body, secrets, added)

    # ------------------------------------------------------------------ forwarding

    async def _send(self, request: Request, body: bytes) -> httpx.Response:
        assert self.client is not None
        url = _join(self.settings.upstream, request.url.path, request.url.query)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP]
        outgoing = self.client.build_request(request.method, url, headers=headers, content=body)
        return await self.client.send(outgoing, stream=True)

    async def _whole(
        self,
        upstream: httpx.Response,
        api: str,
        route: str,
        expect: Expectation,
        request: Any,
        secrets: list[str],
        added: float,
    ) -> Response:
        try:
            data = await _read_response(upstream, self.settings.max_response)
        except TooLarge:
            self._count(route, "upstream_error", Verdict(), added)
            return _error(api, 502, "the upstream's answer is larger than the proxy's limit")
        except httpx.TimeoutException:
            self._count(route, "upstream_error", Verdict(), added)
            return _error(api, 504, "the upstream API stopped answering")
        except httpx.HTTPError as error:
            self._count(route, "upstream_error", Verdict(), added)
            return _error(api, 502, f"the upstream's answer broke off: {_why(error)}")
        started = time.perf_counter()
        headers = _kept(upstream.headers)
        if upstream.status_code // 100 != 2:  # the upstream's own error, as it came
            headers["x-llmfix-status"] = UNCHECKED
            self._logged(route, request, upstream.status_code, data, Verdict(), secrets, False)
            self._count(route, "upstream_error", Verdict(), added)
            return Response(data, status_code=upstream.status_code, headers=headers)
        text = data.decode("utf-8", "replace")
        checked = Checked(Verdict())
        if expect.json or expect.registry is not None:
            if len(data) <= _INLINE and self.settings.model is None:
                checked = self._check(text, expect)
            else:
                checked = await run_in_threadpool(self._check, text, expect)
        verdict = checked.verdict
        headers.update(verdict.headers())
        status = upstream.status_code
        content = data
        if not verdict.passed and self.settings.on_failure == "error" and not _refused(verdict):
            status, content = 502, _error_body(api, verdict)
            headers["content-type"] = "application/json"
            headers["x-should-retry"] = "false"
        elif checked.body is not None:
            content = json.dumps(checked.body, ensure_ascii=False).encode("utf-8")
        added += time.perf_counter() - started
        headers["x-llmfix-added-ms"] = f"{added * 1000:.2f}"
        self._logged(route, request, upstream.status_code, text, verdict, secrets, False)
        self._count(route, verdict.status, verdict, added)
        return Response(content, status_code=status, headers=headers)

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
        upstream: httpx.Response,
        guard: StreamGuard,
        route: str,
        request: Any,
        secrets: list[str],
        added: float,
    ) -> AsyncIterator[bytes]:
        received = 0
        failed: str | None = None  # the guard's own failure: the rest passes unchecked
        try:
            async for chunk in upstream.aiter_bytes():
                received += len(chunk)
                if received > self.settings.max_response:
                    yield guard.abandon(b"") + _stream_error(guard.api, "the answer is too large")
                    return
                if failed is not None:
                    yield chunk
                    continue
                events = guard.events(chunk)
                while True:
                    started = time.perf_counter()
                    try:
                        out = next(events, None)
                    except Exception as error:  # never break the app's stream on a bug of ours
                        failed = f"llmfix: internal error, stream passed unchecked: {error!r}"
                        out = guard.abandon(b"")
                    added += time.perf_counter() - started
                    if out is None:
                        break
                    yield out
                    if failed is not None:
                        break
            if failed is None:
                started = time.perf_counter()
                try:
                    out = guard.close()
                except Exception as error:
                    failed = f"llmfix: internal error, stream passed unchecked: {error!r}"
                    out = guard.abandon(b"")
                added += time.perf_counter() - started
                if out:
                    yield out
        except httpx.TimeoutException:
            yield _stream_error(guard.api, "the upstream API stopped answering")
        except httpx.HTTPError as error:
            yield _stream_error(guard.api, f"the upstream's stream broke off: {_why(error)}")
        finally:
            await upstream.aclose()
            verdict = guard.verdict or Verdict()
            if failed is not None:
                verdict = Verdict(errors=(failed,))
            self._logged(route, request, 200, guard.message, verdict, secrets, True)
            self._count(route, verdict.status, verdict, added)

    async def _relay_unchecked(
        self,
        upstream: httpx.Response,
        route: str,
        request: Any,
        secrets: list[str],
        added: float,
    ) -> AsyncIterator[bytes]:
        """A stream the request asked nothing checkable of: passed on as it comes (and
        decoded on the side for the log, when there is one)."""
        # (start-up: loaded by the first streamed request)
        from llmfix.stream.wire import WireDecoder

        decoder = WireDecoder() if self.log is not None else None
        try:
            async for chunk in upstream.aiter_bytes():
                if decoder is not None:
                    decoder.feed(chunk)
                yield chunk
        except httpx.HTTPError as error:
            yield _stream_error(ROUTES[route], f"the upstream's stream broke off: {_why(error)}")
        finally:
            await upstream.aclose()
            if decoder is not None:
                decoder.close()
                self._logged(route, request, 200, decoder.message(), Verdict(), secrets, True)
            self._count(route, UNCHECKED, Verdict(), added)

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


# ---------------------------------------------------------------------- helpers


def _join(base: str, path: str, query: str) -> str:
    """The upstream URL of ``path``: ``base`` + ``path`` (one ``/v1`` when both have it)."""
    base = base.rstrip("/")
    if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
        path = path[3:]
    return f"{base}{path}" + (f"?{query}" if query else "")


def _kept(headers: httpx.Headers) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _HOP}


def _secrets(request: Request) -> list[str]:
    found = []
    for name in _SECRET_HEADERS:
        value = request.headers.get(name)
        if value:
            found.append(value)
            found.append(value.split(" ", 1)[-1])  # the token of "Bearer TOKEN"
    return found


def _why(error: Exception) -> str:
    return str(error) or type(error).__name__


def _refused(verdict: Verdict) -> bool:
    return verdict.status == "refused"


async def _read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge
        parts.append(chunk)
    return b"".join(parts)


async def _read_response(upstream: httpx.Response, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in upstream.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise TooLarge
            parts.append(chunk)
    finally:
        await upstream.aclose()
    return b"".join(parts)


def _error_payload(api: str | None, message: str, kind: str, code: str | None) -> dict[str, Any]:
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": code}}


def _error(api: str | None, status: int, message: str) -> Response:
    """An error the proxy itself answers, in the API's own shape."""
    kinds = {400: "invalid_request_error", 413: "request_too_large", 502: "api_error"}
    payload = _error_payload(api, f"llmfix proxy: {message}", kinds.get(status, "api_error"), None)
    headers = {"x-llmfix-status": UNCHECKED, "x-should-retry": "false" if status < 500 else "true"}
    return Response(json.dumps(payload), status, headers=headers, media_type="application/json")


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


def serve(settings: ProxySettings, host: str, port: int) -> None:
    """Run the proxy on ``host:port`` until interrupted (uvicorn takes httptools and uvloop,
    of the ``proxy`` extra, when they are installed)."""
    import uvicorn

    uvicorn.run(build_app(settings), host=host, port=port, log_level="warning", access_log=False)
