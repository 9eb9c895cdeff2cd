"""`llmfix proxy` under load: what it adds to a request, against the upstream direct.

Run: ``nice -n 10 .venv/bin/python bench/bench_proxy.py [--requests N] [--paced-requests N]
[--pace-ms MS] [--memory N] [--workers N]``. Prints markdown tables and the load average.

Three processes: an upstream (a bare ASGI app under uvicorn streaming the same answer of
about 1 KB in 40 chunks), ``llmfix proxy`` in front of it (the command a user runs), and
this one, the clients: 50 concurrent streaming clients (aiohttp on uvloop, the cheapest
client at hand: they share the cores with what they measure), each sending requests one
after the other. Rounds alternate between the upstream direct and the proxy, so that
whatever else the machine does slows both sides alike.

The upstream keeps an idle connection ``--upstream-keep-alive`` seconds (60): long enough
for the proxy's pooled connections to outlive a round of the upstream direct, as they do
under steady use (``5``, uvicorn's default, makes the first request of every client in
every proxy round open a new upstream connection).

Two paces: ``burst``, every chunk sent at once (the 50 clients then queue for the CPU, and
the figures say how much CPU each request takes more than how long the proxy delays it),
and ``paced``, one chunk every ``--pace-ms`` (50 ms: a 1 KB answer in about two seconds,
some 130 tokens a second, as a fast hosted model streams), the clients' first requests
spread over one answer's time as independent users' are.

Four answers, streamed as the OpenAI chat API streams (one SSE chunk per delta):

- ``pass-through``: the JSON text answer to a request that asks for no JSON: nothing to
  check, the proxy relays the bytes (what the HTTP hops alone cost);
- ``tool call, valid``: a ``get_weather``-like call whose 1 KB of arguments arrive in 40
  deltas: the proxy holds the call, checks it once complete, releases it, and sends the
  verdict chunk;
- ``tool call, repaired``: the same with ``days`` a string where the schema wants an
  integer: the call is released repaired (one delta carrying the whole arguments);
- ``json text, repaired``: a 1 KB JSON answer to a ``response_format`` json_schema request,
  with the same damage: the text deltas pass at once; the verdict comes at the end.

Per request: the latency (request sent to last byte) and the time to first byte (TTFB).
"added" is the proxy's median (p99) minus the direct median (p99), both measured in the
same rounds. ``own`` is the proxy's own measure of its added time (its
``llmfix_proxy_added_seconds`` histogram: reading, checking, rewriting, not the network
hops), wall time, so it grows when the machine is busy; ``proxy CPU`` is the CPU time the
proxy's processes used per request (HTTP in and out included). Memory: the resident set
size of the proxy's processes after each tenth of ``--memory`` requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import markdown_table

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 50
PIECES = 40  # the answer's deltas: 1 KB in 40 chunks of about 26 bytes
PACE_MS = 50.0  # the paced upstream's wait between two chunks
# How long the upstream keeps an idle connection open. uvicorn's default, 5 s, is shorter
# than one round of the upstream direct: the proxy's pooled connections were closed while
# the direct round ran, and the first request of every client in every proxy round paid a
# new upstream connection (half the requests of a 100-request round). A proxy in steady
# use keeps its connections busy; ``--upstream-keep-alive 5`` measures the other case.
KEEP_ALIVE = 60

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city", "days"],
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
FORMAT = {"type": "json_schema", "json_schema": {"name": "forecast", "schema": WEATHER}}


def _answer(valid: bool = False) -> str:
    """About 1 KB of arguments, ``days`` a string (a ``coerce_integer`` repair) unless
    ``valid``."""
    notes = [f"note {i}: light wind from the west, dry" for i in range(24)]
    return json.dumps({"city": "Paris", "days": 3 if valid else "3", "notes": notes})


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    record = {
        "id": "chatcmpl-b",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench",
        "choices": [choice],
    }
    return f"data: {json.dumps(record)}\n\n".encode()


def _stream(kind: str) -> list[bytes]:
    text = _answer(valid=kind == "valid")
    size = -(-len(text) // PIECES)
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    out = [_chunk({"role": "assistant", "content": ""})]
    if kind in ("tool", "valid"):
        call = {"index": 0, "id": "call_1", "type": "function"}
        head = {**call, "function": {"name": "get_weather", "arguments": ""}}
        out.append(_chunk({"tool_calls": [head]}))
        for p in pieces:
            out.append(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}))
        out.append(_chunk({}, "tool_calls"))
    else:
        out += [_chunk({"content": p}) for p in pieces]
        out.append(_chunk({}, "stop"))
    out.append(b"data: [DONE]\n\n")
    return out


# ---------------------------------------------------------------------- the upstream


def serve_upstream(port: int, keep_alive: int = KEEP_ALIVE) -> None:
    """The upstream: every chat completion streamed chunk by chunk, at once, or with
    ``bench_pace_ms`` milliseconds between two chunks when the request says so (a model
    writing its answer). A bare ASGI app, so that it costs the shared cores little."""
    import uvicorn

    streams = {kind: _stream(kind) for kind in ("tool", "valid", "text")}
    start = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"text/event-stream")],
    }

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        body = json.loads(raw) if raw else {}
        kind = "text" if not body.get("tools") else "tool"
        chunks = streams["valid" if body.get("model") == "valid" else kind]
        pace = float(body.get("bench_pace_ms") or 0) / 1000
        await send(start)
        loop = asyncio.get_running_loop()
        began = loop.time()
        for i, chunk in enumerate(chunks):
            if pace and i:  # chunk i at i paces from the first: no drift from late wakes
                await asyncio.sleep(max(0.0, began + i * pace - loop.time()))
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=keep_alive,
    )


# ---------------------------------------------------------------------- the clients


ERRORS: list[str] = []  # requests that failed (a dropped connection under load, ...)


async def _one(session, url: str, body: bytes) -> tuple[float, float] | None:  # type: ignore[no-untyped-def]
    import aiohttp

    started = time.perf_counter()
    first = None
    headers = {"authorization": "Bearer sk-bench", "content-type": "application/json"}
    try:
        async with session.post(url, data=body, headers=headers) as response:
            async for _ in response.content.iter_any():
                if first is None:
                    first = time.perf_counter()
    except (aiohttp.ClientError, asyncio.TimeoutError) as error:
        ERRORS.append(f"{url}: {type(error).__name__}")
        return None
    ended = time.perf_counter()
    return ended - started, (first or ended) - started


async def _clients(
    base: str, body: dict[str, object], count: int, clients: int = CLIENTS
) -> list[tuple[float, float]]:
    """``clients`` concurrent clients sending ``count`` requests in all, each the next
    as soon as its last one ended (paced: the first ones spread over an answer's time;
    aiohttp: the clients must cost less than what they
    measure on the shared cores)."""
    import aiohttp

    url = f"{base}/v1/chat/completions"
    data = json.dumps(body).encode()
    # paced streams: the clients start spread over one answer's time, as independent
    # users do, rather than all in the same millisecond
    stagger = float(str(body.get("bench_pace_ms") or 0)) * PIECES / 1000 / clients
    results: list[tuple[float, float]] = []
    left = [count]
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def worker(k: int) -> None:
            await asyncio.sleep(k * stagger)
            while left[0] > 0:
                left[0] -= 1
                found = await _one(session, url, data)
                if found is not None:
                    results.append(found)

        await asyncio.gather(*(worker(k) for k in range(clients)))
    return results


def _round(
    base: str, body: dict[str, object], count: int, clients: int = CLIENTS
) -> list[tuple[float, float]]:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        return asyncio.run(_clients(base, body, count, clients))
    return uvloop.run(_clients(base, body, count, clients))


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process has used (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own(base: str) -> tuple[float, int]:
    """The proxy's own added seconds (sum) and request count, from its /metrics."""
    import httpx

    total, count = 0.0, 0
    for line in httpx.get(f"{base}/metrics").text.splitlines():
        if line.startswith("llmfix_proxy_added_seconds_sum"):
            total += float(line.rsplit(" ", 1)[1])
        elif line.startswith("llmfix_proxy_added_seconds_count"):
            count += int(float(line.rsplit(" ", 1)[1]))
    return total, count


def in_process() -> list[list[str]]:
    """The proxy's work on one stream, timed in this process (best of several rounds): the
    stream guard fed the upstream's chunks, against decoding the same stream alone."""
    from llmfix.proxy.expect import Compiled, Configured, expectation
    from llmfix.proxy.streams import StreamGuard
    from llmfix.run.settings import RepairFlags, repair_run
    from llmfix.stream.wire import WireDecoder

    run = repair_run(RepairFlags())
    compiled = Compiled()
    route = "/v1/chat/completions"
    rows = []
    cases = {
        "tool call, valid": ("valid", {"tools": TOOLS}),
        "tool call, repaired": ("tool", {"tools": TOOLS}),
        "json text, repaired": ("text", {"response_format": FORMAT}),
    }
    for name, (kind, asked) in cases.items():
        chunks = _stream(kind)
        expect = expectation("openai-chat", asked, compiled, Configured(), route)

        def guard(expect: Any = expect, chunks: list[bytes] = chunks) -> None:
            g = StreamGuard("openai-chat", expect, run)
            for chunk in chunks:
                g.feed(chunk)
            g.close()

        def decode(chunks: list[bytes] = chunks) -> None:
            d = WireDecoder()
            for chunk in chunks:
                d.feed(chunk)
            d.close()

        best = {}
        for label, fn in (("guard", guard), ("decode", decode)):
            fn()
            timings = []
            for _ in range(7):
                started = time.perf_counter()
                for _ in range(20):
                    fn()
                timings.append((time.perf_counter() - started) / 20)
            best[label] = min(timings)
        ratio = best["guard"] / best["decode"]
        rows.append([name, _ms(best["guard"]), _ms(best["decode"]), f"{ratio:.1f}x"])
    return rows


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str) -> None:
    import httpx

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=0.5)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise SystemExit(f"{url} did not start")


HEADERS = [
    "answer",
    "requests",
    "direct median",
    "proxy median",
    "added median",
    "added p99",
    "own (mean)",
    "proxy CPU",
    "TTFB direct",
    "TTFB proxy",
    "TTFB added",
]


def _bodies(pace: float) -> dict[str, dict[str, Any]]:
    base: dict[str, Any] = {"messages": [], "stream": True}
    if pace:
        base["bench_pace_ms"] = pace
    return {
        "pass-through": {**base, "model": "bench"},
        "tool call, valid": {**base, "model": "valid", "tools": TOOLS},
        "tool call, repaired": {**base, "model": "bench", "tools": TOOLS},
        "json text, repaired": {**base, "model": "bench", "response_format": FORMAT},
    }


def _table(
    upstream_url: str, proxy_url: str, pids: list[int], pace: float, requests: int, args: Any
) -> list[list[str]]:
    """One row per answer: the upstream direct and through the proxy, in alternating
    rounds of ``requests / rounds`` requests each."""
    rows = []
    for name, body in _bodies(pace).items():
        warm = min(200, requests)
        _round(proxy_url, body, warm, args.clients)  # warm both
        _round(upstream_url, body, warm, args.clients)
        direct: list[tuple[float, float]] = []
        guarded: list[tuple[float, float]] = []
        own_before = _own(proxy_url)
        per_round = max(1, requests // args.rounds)
        cpu = 0.0
        for _ in range(args.rounds):
            direct += _round(upstream_url, body, per_round, args.clients)
            cpu_before = sum(_cpu_seconds(pid) for pid in pids)
            guarded += _round(proxy_url, body, per_round, args.clients)
            cpu += sum(_cpu_seconds(pid) for pid in pids) - cpu_before
        own_after = _own(proxy_url)
        own = (own_after[0] - own_before[0]) / max(1, own_after[1] - own_before[1])
        lat_d, lat_p = [d[0] for d in direct], [g[0] for g in guarded]
        ttfb_d, ttfb_p = [d[1] for d in direct], [g[1] for g in guarded]
        rows.append(
            [
                name,
                str(len(guarded)),
                _ms(statistics.median(lat_d)),
                _ms(statistics.median(lat_p)),
                _ms(statistics.median(lat_p) - statistics.median(lat_d)),
                _ms(_quantile(lat_p, 0.99) - _quantile(lat_d, 0.99)),
                _ms(own),
                _ms(cpu / max(1, len(guarded))),
                _ms(statistics.median(ttfb_d)),
                _ms(statistics.median(ttfb_p)),
                _ms(statistics.median(ttfb_p) - statistics.median(ttfb_d)),
            ]
        )
    return rows


def _workers(pid: int) -> list[int]:
    """The proxy's processes: itself, and its workers when it forked some."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = [int(p) for p in children.read_text().split()] if children.exists() else []
    return [pid, *found]


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000, help="per side and answer, burst")
    parser.add_argument(
        "--paced-requests", type=int, default=400, help="per side and answer, paced"
    )
    parser.add_argument("--pace-ms", type=float, default=PACE_MS, help="between two chunks")
    parser.add_argument("--rounds", type=int, default=4, help="alternations per answer")
    parser.add_argument("--memory", type=int, default=10_000, help="requests for the RSS run")
    parser.add_argument("--clients", type=int, default=CLIENTS, help="concurrent clients")
    parser.add_argument("--workers", type=int, default=1, help="the proxy's --workers")
    parser.add_argument(
        "--upstream-keep-alive",
        type=int,
        default=KEEP_ALIVE,
        help="seconds the upstream keeps an idle connection",
    )
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--in-process-only", action="store_true", help="only the in-process timing")
    args = parser.parse_args(argv)
    if args.serve_upstream:
        serve_upstream(args.serve_upstream, args.upstream_keep_alive)
        return
    print(f"load average at start: {_load()}\n")
    print("the proxy's work on one 1 KB stream, in process (best of 7 x 20):\n")
    print(markdown_table(["answer", "stream guard", "decoding alone", "ratio"], in_process()))
    print()
    if args.in_process_only:
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # BENCH_PROXY_PATH: run the proxy of another checkout (an earlier commit) against the
    # same upstream and clients
    proxy_env = {**env, "PYTHONPATH": os.environ.get("BENCH_PROXY_PATH", str(ROOT))}
    up_port, proxy_port = _free_port(), _free_port()
    upstream_url = f"http://127.0.0.1:{up_port}"
    proxy_url = f"http://127.0.0.1:{proxy_port}"
    here = str(Path(__file__).resolve())
    upstream = subprocess.Popen(
        [sys.executable, here, "--serve-upstream", str(up_port),
         "--upstream-keep-alive", str(args.upstream_keep_alive)],
        env=env,
        cwd=ROOT,
    )  # fmt: skip
    proxy = subprocess.Popen(
        [sys.executable, "-m", "llmfix", "proxy", "--upstream", upstream_url, "--listen",
         f"127.0.0.1:{proxy_port}", "--workers", str(args.workers)],
        env=proxy_env,
        cwd=ROOT,
        stderr=open(os.environ.get("BENCH_PROXY_LOG", os.devnull), "w"),  # noqa: SIM115
    )  # fmt: skip
    try:
        _wait(f"{upstream_url}/")
        _wait(f"{proxy_url}/metrics")
        time.sleep(0.5)
        pids = _workers(proxy.pid)
        workers = f", the proxy in {args.workers} processes" if args.workers > 1 else ""
        if args.requests:
            rows = _table(upstream_url, proxy_url, pids, 0, args.requests, args)
            print(f"burst: the upstream sends its {PIECES} chunks at once; {args.clients} "
                  f"concurrent streaming clients, {args.rounds} alternating rounds{workers} "
                  f"(load average {_load()})\n")  # fmt: skip
            print(markdown_table(HEADERS, rows))
            print()
        if args.paced_requests:
            rows = _table(upstream_url, proxy_url, pids, args.pace_ms, args.paced_requests, args)
            print(f"paced: one chunk every {args.pace_ms:g} ms ({PIECES} chunks); "
                  f"{args.clients} concurrent streaming clients, {args.rounds} alternating "
                  f"rounds{workers} (load average {_load()})\n")  # fmt: skip
            print(markdown_table(HEADERS, rows))
            print()
        body = _bodies(0)["tool call, repaired"]
        marks = []
        done = 0
        step = args.memory // 10
        while done < args.memory and step:
            _round(proxy_url, body, step, args.clients)
            done += step
            marks.append((done, sum(_rss_kib(pid) for pid in pids)))
        if ERRORS:
            print(f"\n{len(ERRORS)} requests failed: {sorted(set(ERRORS))}")
        if marks:
            print(f"proxy RSS over {args.memory} tool-call requests (burst):\n")
            rss = [[str(n), f"{kib / 1024:.1f} MiB"] for n, kib in marks]
            print(markdown_table(["requests", "RSS"], rss))
        print(f"\nload average at the end: {_load()}")
    finally:
        for process in (proxy, upstream):
            process.send_signal(signal.SIGINT)
        for process in (proxy, upstream):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    main()
