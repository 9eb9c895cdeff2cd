"""The HTTP side of the providers: one request with retries, a deadline for the whole
answer and a size cap (:class:`HttpTransport`), failures described in one line, and
:class:`HttpProvider`, the base the built-in providers share."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from llmfix.llm.config import LlmConfig
from llmfix.llm.providers.base import (
    MAX_ANSWER_BYTES,
    USER_AGENT,
    BudgetSpent,
    Meter,
    ProviderBadResponse,
    ProviderRefused,
    ProviderUnavailable,
    json_or_none,
)
from llmfix.llm.providers.memory import ServerMemory, server_key
from llmfix.llm.redact import redact
from llmfix.llm.retry import RetryPolicy, is_retryable_status, parse_retry_after

if TYPE_CHECKING:
    import ssl

    import httpx


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    text: str
    data: Any  # the body parsed as JSON, or None
    retries: int = 0
    unreached: int = 0  # tries that never reached the server (see _Tried)
    rate_limited: int = 0  # tries answered HTTP 429


@dataclass(frozen=True)
class _Received:
    """A whole HTTP answer, read within the request's deadline."""

    status: int
    text: str
    content_type: str
    headers: Mapping[str, str]


class _Overdue(Exception):
    """The answer was still arriving when the request's time was up."""

    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


class _Oversized(Exception):
    """The answer grew past :attr:`HttpTransport.max_bytes`."""


class HttpTransport:
    """POST JSON with the retry policy; a new ``httpx.Client`` on first use, reused after.

    Each try has ``timeout`` seconds in all: httpx's timeout bounds each read, so an answer
    that trickles in a byte at a time would never trip it; the body is read in chunks and
    given up when the deadline has passed, so a try ends within about ``timeout`` seconds
    (at most ``timeout`` more when the server stalls on a read right at the deadline).
    """

    max_bytes = MAX_ANSWER_BYTES

    def __init__(
        self,
        provider: str,
        policy: RetryPolicy,
        *,
        secrets: Sequence[str | None] = (),
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.provider = provider
        self.policy = policy
        self.secrets = tuple(s for s in secrets if s)
        self.sleep = sleep
        self.rand = rand
        self._client: httpx.Client | None = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            self._client = httpx.Client(headers={"user-agent": USER_AGENT}, verify=_ssl_context())
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def post(
        self,
        url: str,
        headers: Mapping[str, str],
        body: Any,
        timeout: float,
        *,
        keep: Callable[[int, str], bool] = lambda status, text: False,
        meter: Meter | None = None,
    ) -> HttpAnswer:
        """The first answer that is a success, a non-retryable error, or one ``keep`` wants.

        ``meter`` is asked before each request, retries included; when it says no, the
        request is not sent and :class:`BudgetSpent` is raised.

        Retryable failures (see :mod:`llmfix.llm.retry`) are retried per the policy; when
        they run out, :class:`ProviderUnavailable` (:class:`ProviderBadResponse` when the
        last one was a success answer that is not JSON). A success answer that is an HTML
        page, or larger than :attr:`max_bytes`, is :class:`ProviderBadResponse` at once.
        """
        tally = _Tally()
        try:
            return self._post(url, headers, body, timeout, keep, meter, tally)
        except (ProviderRefused, ProviderUnavailable, BudgetSpent) as error:
            error.unreached, error.rate_limited = tally.unreached, tally.rate_limited
            raise

    def _post(
        self,
        url: str,
        headers: Mapping[str, str],
        body: Any,
        timeout: float,
        keep: Callable[[int, str], bool],
        meter: Meter | None,
        tally: _Tally,
    ) -> HttpAnswer:
        import httpx

        client = self._http()
        retries = 0
        while True:
            retry_after: float | None = None
            bad = False  # the server answered, but not with JSON
            if meter is not None and not meter():
                raise BudgetSpent(
                    f"{self.provider}: the limit of model requests for this run is reached"
                )
            try:
                got = self._exchange(client, url, headers, body, timeout)
            except _Overdue as late:
                problem = (
                    f"the answer from {url} did not finish within {timeout:g} s "
                    f"(still arriving: {late.received} bytes so far)"
                )
            except _Oversized:
                raise ProviderBadResponse(
                    self._clean(
                        f"{self.provider}: the answer from {url} is larger than "
                        f"{self.max_bytes} bytes; not read further"
                    )
                ) from None
            except httpx.ConnectTimeout:
                problem = f"cannot connect to {url} within {timeout:g} s"
                tally.unreached += 1
            except httpx.TimeoutException:
                problem = f"no answer within {timeout:g} s from {url}"
            except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError) as error:
                problem = (
                    f"the connection to {url} broke before the answer was complete "
                    f"({type(error).__name__}: {_one_line(str(error))})"
                )
            except httpx.TransportError as error:
                problem = f"cannot reach {url} ({type(error).__name__}: {_one_line(str(error))})"
                if isinstance(error, _not_sent()):
                    tally.unreached += 1
            except httpx.DecodingError as error:  # a compressed body that does not decompress
                problem = f"the answer from {url} cannot be decoded ({_one_line(str(error))})"
                bad = True
            except httpx.RequestError as error:
                problem = f"the request to {url} failed ({type(error).__name__}: {error})"
                problem = _one_line(problem, 400)
            except httpx.InvalidURL as error:
                raise ProviderRefused(f"{self.provider}: invalid URL {url!r}: {error}") from None
            else:
                status, text = got.status, got.text
                if status == 429:
                    tally.rate_limited += 1
                data = json_or_none(text)
                if status < 300 and data is None:
                    if _is_html(text, got.content_type):
                        raise ProviderBadResponse(
                            self._clean(
                                f"{self.provider}: HTTP {status} from {url} is "
                                f"{_describe_html(text)}, not an API answer: check the base URL"
                            )
                        )
                    problem = f"HTTP {status} from {url} is not JSON ({_describe_body(got)})"
                    bad = True
                elif status < 300 or not is_retryable_status(status) or keep(status, text):
                    return HttpAnswer(
                        status, text, data, retries, tally.unreached, tally.rate_limited
                    )
                else:
                    problem = f"HTTP {status} from {url}"
                    message = error_message(data, text)
                    if message:
                        problem += f": {message}"
                    retry_after = parse_retry_after(got.headers)
            failure = ProviderBadResponse if bad else ProviderUnavailable
            if retries >= self.policy.max_retries:
                tries = "1 try" if retries == 0 else f"{retries + 1} tries"
                raise failure(self._clean(f"{self.provider}: {problem} ({tries})"))
            wait = self.policy.wait(retries, retry_after, self.rand)
            if wait is None:
                raise failure(
                    self._clean(
                        f"{self.provider}: {problem}; the server asks to retry after "
                        f"{retry_after:g} s, longer than the {self.policy.max_wait:g} s allowed"
                    )
                )
            self.sleep(wait)
            retries += 1

    def _exchange(
        self,
        client: httpx.Client,
        url: str,
        headers: Mapping[str, str],
        body: Any,
        timeout: float,
    ) -> _Received:
        """One try: the request sent and the whole answer read, by the deadline."""
        deadline = time.monotonic() + timeout
        with client.stream(
            "POST", url, headers=dict(headers), json=body, timeout=timeout
        ) as response:
            received = bytearray()
            for chunk in response.iter_bytes():
                received += chunk
                if len(received) > self.max_bytes:
                    raise _Oversized
                if time.monotonic() > deadline:
                    raise _Overdue(len(received))
            text = bytes(received).decode(response.encoding or "utf-8", errors="replace")
            return _Received(
                response.status_code,
                text,
                response.headers.get("content-type", ""),
                response.headers,
            )

    def _clean(self, message: str) -> str:
        return redact(message, self.secrets)


@dataclass
class _Tally:
    """The tries of one request that never reached the server, and those answered 429."""

    unreached: int = 0
    rate_limited: int = 0


def _not_sent() -> tuple[type[Exception], ...]:
    """httpx's failures before the request reached the server: no connection (refused,
    DNS, TLS), a proxy that failed, a URL scheme it cannot send to."""
    import httpx

    return (httpx.ConnectError, httpx.ProxyError, httpx.UnsupportedProtocol)


_SSL_CONTEXT: ssl.SSLContext | None = None


def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process: loading the CA bundle costs ~0.1 s each time."""
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        import httpx

        _SSL_CONTEXT = httpx.create_ssl_context()
    return _SSL_CONTEXT


def _one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line, control characters escaped (it goes to a terminal), cut."""
    text = " ".join(text.split())
    if not text.isprintable():
        text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _is_html(text: str, content_type: str) -> bool:
    """Whether a body that is not JSON is a web page (by its label or its first tag)."""
    if "html" in content_type.lower():
        return True
    head = text.lstrip("\ufeff \t\r\n")[:20].lower()
    return head.startswith(("<!doctype html", "<html"))


def _describe_html(text: str) -> str:
    """``an HTML page ("its title")``."""
    import html

    found = _TITLE.search(text[:65536])
    title = _one_line(html.unescape(found.group(1)), 80) if found else ""
    return f'an HTML page ("{title}")' if title else "an HTML page"


def _describe_body(got: _Received) -> str:
    """What a body that is not JSON looks like: its type, size and first characters."""
    label = got.content_type.split(";")[0].strip() or "no content type"
    if not got.text.strip():
        return f"{label}, empty"
    return f'{label}, {len(got.text)} characters: "{_one_line(got.text, 60)}"'


def error_message(data: Any, text: str) -> str:
    """The human message of an error body (OpenAI, Anthropic and most compatible servers)."""
    if data is None and _is_html(text, ""):
        return _describe_html(text)  # a gateway's or proxy's error page
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail") or error.get("type")
            if message:
                return _one_line(str(message))
        elif isinstance(error, str):
            return _one_line(error)
        detail = data.get("detail")
        if detail:
            return _one_line(json.dumps(detail) if not isinstance(detail, str) else detail)
    return _one_line(text)


def _refused(
    provider: str,
    answer: HttpAnswer,
    config: LlmConfig,
    url: str,
    secrets: Sequence[str | None],
) -> ProviderRefused:
    message = error_message(answer.data, answer.text) or "(no message)"
    status = answer.status
    if status == 401:
        head = f"authentication failed (HTTP 401): check the key in {config.key_env}"
    elif status == 403:
        head = f"access denied (HTTP 403) to model {config.model!r}"
    elif status == 404:
        head = f"not found (HTTP 404) at {url}: unknown model {config.model!r} or wrong base URL"
    else:
        head = f"request rejected (HTTP {status}) by {url}"
    return ProviderRefused(redact(f"{provider}: {head}: {message}", secrets), status)


@dataclass
class _Adjustments:
    """What a server was found to refuse, remembered for the provider's later requests
    (and, through :class:`~llmfix.llm.providers.memory.ServerMemory`, for later runs)."""

    refused_modes: set[str] = field(default_factory=set)
    max_completion_tokens: bool = False  # OpenAI reasoning models refuse max_tokens
    no_temperature: bool = False  # some models refuse any temperature but their own
    no_prefill: bool = False  # the server refused to continue an assistant message
    no_grammar: bool = False  # the server refused llama.cpp's ``grammar`` field

    def to_record(self) -> dict[str, Any]:
        return {
            "refused_modes": sorted(self.refused_modes),
            "max_completion_tokens": self.max_completion_tokens,
            "no_temperature": self.no_temperature,
            "no_prefill": self.no_prefill,
            "no_grammar": self.no_grammar,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> _Adjustments:
        return cls(
            refused_modes=set(record.get("refused_modes", ())),
            max_completion_tokens=record.get("max_completion_tokens") is True,
            no_temperature=record.get("no_temperature") is True,
            no_prefill=record.get("no_prefill") is True,
            no_grammar=record.get("no_grammar") is True,
        )


class HttpProvider:
    name = ""

    def __init__(self, config: LlmConfig, *, transport: HttpTransport | None = None) -> None:
        config.require_model()
        self.config = config
        self.model: str = config.model or ""
        self.base_url = config.url
        self._key = config.resolve_api_key()
        self.transport = transport or HttpTransport(
            self.name,
            RetryPolicy(
                max_retries=config.max_retries,
                base=config.backoff_base,
                cap=config.backoff_max,
                max_wait=max(config.backoff_max, 60.0),
            ),
            secrets=(self._key,),
        )
        if self._key and self._key not in self.transport.secrets:
            self.transport.secrets = (*self.transport.secrets, self._key)
        self.memory = ServerMemory(config.cache_path) if config.remember_servers else None
        self._memory_key = server_key(self.name, self.base_url, self.model)
        recalled = self.memory.recall(self._memory_key) if self.memory is not None else {}
        self.adjust = _Adjustments.from_record(recalled)
        # what this provider learnt from a refusal (not what it recalled): kept across runs
        self.learnt = False

    def prefill_ignored(self) -> None:
        """The server took an assistant prefill as a finished message and answered anew
        (llama-cpp-python's server does: it drops ``continue_final_message``): ask for
        continuations with the prompt from now on, in this run and later ones."""
        if not self.adjust.no_prefill:
            self.adjust.no_prefill = True
            self.learn()

    def learn(self) -> None:
        """Keep :attr:`adjust` for later runs: called after a refusal taught it something."""
        self.learnt = True
        if self.memory is not None:
            self.memory.keep(self._memory_key, self.adjust.to_record())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        self.transport.close()

    def _refused(self, answer: HttpAnswer, url: str) -> ProviderRefused:
        return _tried(_refused(self.name, answer, self.config, url, (self._key,)), answer)

    def _unusable(self, answer: HttpAnswer, url: str, expected: str) -> ProviderBadResponse:
        """A success answer in JSON that is not ``expected``: another API, not retried."""
        message = error_message(answer.data, answer.text) or "(empty)"
        error = ProviderBadResponse(
            redact(
                f"{self.name}: HTTP {answer.status} from {url} is not {expected}: {message}",
                (self._key,),
            )
        )
        return _tried(error, answer)


_Failure = TypeVar("_Failure", ProviderRefused, ProviderBadResponse)


def _tried(error: _Failure, answer: HttpAnswer) -> _Failure:
    """``error`` with the tries of the request that got ``answer`` (see ``_Tried``)."""
    error.unreached, error.rate_limited = answer.unreached, answer.rate_limited
    return error


def count(usage: Any, key: str) -> int:
    """A token count from an answer's ``usage``; 0 when it is missing or not a count."""
    value = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e15:
        return int(value)
    return 0


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
