"""`llmfix proxy` as a user starts it: the installed command in a process of its own, and
its one-line errors for bad flags and files."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.llm_server import LlmServer
from tests.proxy_wire import chat_completion

pytest.importorskip("aiohttp")
pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[1]
PERSON = ROOT / "samples" / "person.schema.json"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _llmfix(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", "llmfix", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_until_up(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            httpx.get(f"{url}/metrics", timeout=0.5)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("the proxy did not start")


def test_the_two_line_set_up(server: LlmServer, tmp_path: Path) -> None:
    """`llmfix proxy --upstream URL` in one terminal, the base URL in the app's."""
    port = _free_port()
    log = tmp_path / "exchanges.jsonl"
    process = _llmfix(
        "proxy",
        "--upstream",
        server.url,
        "--listen",
        f"127.0.0.1:{port}",
        "--schema-for",
        f"gpt-person={PERSON}",
        "--log",
        str(log),
        cwd=tmp_path,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process)
        server.enqueue(chat_completion('```json\n{"name": "Ada", "age": "36"}\n```'))
        client = openai.OpenAI(api_key="sk-x", base_url=f"{url}/v1", max_retries=0)
        answer = client.chat.completions.create(
            model="gpt-person", messages=[{"role": "user", "content": "Who?"}]
        )
        metrics = httpx.get(f"{url}/metrics").text
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    assert json.loads(answer.choices[0].message.content) == {"name": "Ada", "age": 36}
    assert 'llmfix_proxy_requests_total{route="/v1/chat/completions",status="repaired"} 1' in (
        metrics
    )
    assert f"llmfix proxy: {url} -> {server.url}" in stderr
    assert json.loads(log.read_text(encoding="utf-8"))["llmfix"]["status"] == "repaired"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--listen", "8787"], "--listen takes HOST:PORT"),
        (["--on-failure", "maybe"], "--on-failure must be pass or error, not 'maybe'"),
        (["--schema-for", "gpt-4o"], "--schema-for takes KEY=FILE, not 'gpt-4o'"),
        (["--schema-for", "m=missing.json"], "missing.json"),
        (["--tools-for", "*=missing.json"], "missing.json"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(tmp_path: Path, args: list[str], said: str) -> None:
    process = _llmfix("proxy", "--upstream", "http://127.0.0.1:9", *args, cwd=tmp_path)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert said in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert "Traceback" not in stderr


def test_workers_count_together_and_log_whole_lines(server: LlmServer, tmp_path: Path) -> None:
    """`--workers 2`: each request on a connection of its own (the kernel spreads them over
    the workers); /metrics counts all of them whichever worker answers it, and the log
    holds one whole line per exchange."""
    port = _free_port()
    log = tmp_path / "exchanges.jsonl"
    process = _llmfix(
        "proxy", "--upstream", server.url, "--listen", f"127.0.0.1:{port}",
        "--workers", "2", "--log", str(log),
        cwd=tmp_path,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    asks = 12
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "p", "schema": json.loads(PERSON.read_text())},
    }
    try:
        _wait_until_up(url, process)
        server.enqueue(*(chat_completion('{"name": "Ada", "age": "36"}') for _ in range(asks)))
        for _ in range(asks):
            with httpx.Client() as client:  # a new connection each time
                answer = client.post(
                    f"{url}/v1/chat/completions",
                    json={"model": "m", "messages": [], "response_format": fmt},
                    headers={"authorization": "Bearer sk-x"},
                )
                assert answer.headers["x-llmfix-status"] == "repaired"
        scraped = []
        for _ in range(6):
            with httpx.Client() as client:
                scraped.append(client.get(f"{url}/metrics").text)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert "(2 workers)" in stderr
    line = 'llmfix_proxy_requests_total{route="/v1/chat/completions",status="repaired"}'
    for text in scraped:
        assert f"{line} {asks}" in text
        assert f'llmfix_proxy_repairs_total{{rule="coerce_integer"}} {asks}' in text
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == asks
    assert {json.loads(line)["llmfix"]["status"] for line in lines} == {"repaired"}
    assert len({json.loads(line)["custom_id"] for line in lines}) == asks
    assert process.returncode == 0
