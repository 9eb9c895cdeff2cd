"""``llmfix repair --stream``, reading real streams: the local server (``server``) sends
each recorded stream (``tests/data/streams/``) with chunked transfer encoding, a real HTTP
client (httpx, in its own process, like ``curl -N``) writes what arrives to a pipe, and the
installed ``llmfix`` reads that pipe.

Also: saved streams checked by ``llmfix check`` (reassembled into the final message).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import llmfix
from tests.llm_server import LlmServer

STREAMS = Path(__file__).parent / "data" / "streams"
SCHEMA = STREAMS / "person.schema.json"
TOOLS = STREAMS / "tools.json"
PERSON = {"name": "Ada Lovelace", "age": 36, "languages": ["en", "fr"], "employed": True}

# The client: what `curl -N URL` does, with httpx: every piece written out as it arrives.
CLIENT = """
import sys, httpx
with httpx.stream("GET", sys.argv[1], timeout=30) as response:
    response.raise_for_status()
    for piece in response.iter_raw():
        sys.stdout.buffer.write(piece)
        sys.stdout.buffer.flush()
"""


def _llmfix() -> list[str]:
    exe = shutil.which("llmfix", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "llmfix"]


def pipe(server: LlmServer, name: str, *args: str) -> tuple[subprocess.Popen[bytes], Any]:
    """``client URL | llmfix repair --stream ARGS``: the two processes, started."""
    kind = "application/x-ndjson" if name.endswith(".ndjson") else "text/event-stream"
    url = server.stream(f"/{name}", (STREAMS / name).read_bytes(), kind)
    client = subprocess.Popen([sys.executable, "-c", CLIENT, url], stdout=subprocess.PIPE)
    assert client.stdout is not None
    command = subprocess.Popen(
        [*_llmfix(), "repair", "--stream", *args],
        stdin=client.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    client.stdout.close()  # llmfix holds the read end now
    return command, client


def run_pipe(server: LlmServer, name: str, *args: str) -> tuple[int, list[dict[str, Any]]]:
    command, client = pipe(server, name, *args)
    out, err = command.communicate(timeout=60)
    assert client.wait(timeout=30) == 0
    assert f"/{name}" in server.chunked
    lines = [json.loads(line) for line in out.decode().splitlines()]
    assert lines, err.decode()
    return command.returncode, lines


def events(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["event"] == kind]


@pytest.mark.parametrize(
    ("name", "fmt", "stop"),
    [
        ("raw.txt", "raw", None),
        ("openai_chat.sse", "openai-chat", "stop"),
        ("ollama.ndjson", "ollama", "stop"),
    ],
)
def test_content_streams_give_snapshots_then_the_repaired_result(
    server: LlmServer, name: str, fmt: str, stop: str | None
) -> None:
    code, lines = run_pipe(server, name, "--schema", str(SCHEMA))
    result = lines[-1]
    assert result["event"] == "result"
    assert (result["format"], result["stop_reason"]) == (fmt, stop)
    snapshots = [line["value"] for line in events(lines, "value")]
    assert snapshots[-1] == {**PERSON, "age": "36"}  # as written; schema repair at the end
    assert result["value"] == PERSON
    assert result["status"] == "repaired"
    if name == "ollama.ndjson":  # its tool call, whole, without --tools: released as is
        assert events(lines, "tool_call")[0]["call"]["arguments"] == {"city": "Rome"}
    assert code == 0


def test_responses_and_anthropic_streams_release_their_tool_calls(server: LlmServer) -> None:
    for name, fmt, stop, city in [
        ("openai_responses.sse", "openai-responses", "completed", "Oslo"),
        ("anthropic.sse", "anthropic", "tool_use", "Lima"),
    ]:
        code, lines = run_pipe(server, name, "--tools", str(TOOLS))
        result = lines[-1]
        assert (result["format"], result["stop_reason"]) == (fmt, stop)
        calls = events(lines, "tool_call")
        assert [c["call"]["arguments"] for c in calls] == [{"city": city}]
        assert result["value"] == [c["call"] for c in calls]
        assert code == 0
        prose = "".join(e["text"] for e in events(lines, "text"))
        assert prose.startswith("Here is the person:")
        if name == "anthropic.sse":  # thinking arrives as reasoning, never as the answer
            reasoning = events(lines, "reasoning")
            assert reasoning[0]["text"] == 'The user wants {"name": ...} as JSON.'


def test_a_call_cut_off_by_the_token_limit_is_reported_not_released(
    server: LlmServer,
) -> None:
    code, lines = run_pipe(server, "openai_chat_tools.sse", "--tools", str(TOOLS))
    assert [c["call"]["id"] for c in events(lines, "tool_call")] == ["call_a"]
    cut = [a for a in events(lines, "arguments") if a["index"] == 1]
    assert [(a["value"], a["complete"]) for a in cut] == [({}, False)]  # "Ber... never shown
    result = lines[-1]
    assert result["stop_reason"] == "length"
    assert "tools.truncated_call" in {d["code"] for d in result["diagnostics"]}
    assert code == 1


def test_final_prints_only_the_result(server: LlmServer) -> None:
    command, client = pipe(server, "anthropic.sse", "--final", "--schema", str(SCHEMA), "-q")
    out, _ = command.communicate(timeout=60)
    client.wait(timeout=30)
    assert json.loads(out) == PERSON
    assert command.returncode == 0


def test_snapshots_come_out_of_the_pipe_before_the_stream_ends(server: LlmServer) -> None:
    server.hold = "/openai_chat.sse"
    command, client = pipe(server, "openai_chat.sse")
    assert command.stdout is not None
    seen = []
    while True:  # the server is holding the second half back: these lines came flushed
        line = json.loads(command.stdout.readline())
        seen.append(line)
        if line["event"] == "value":
            break
    assert "result" not in {line["event"] for line in seen}
    assert server.chunked == []  # the stream really is still open
    server.release.set()
    out, _ = command.communicate(timeout=60)
    rest = [json.loads(line) for line in out.decode().splitlines()]
    client.wait(timeout=30)
    assert rest[-1]["event"] == "result"
    assert rest[-1]["value"] == {**PERSON, "age": "36"}


def test_stream_needs_one_input_and_stdout(tmp_path: Path) -> None:
    answer = tmp_path / "a.txt"
    answer.write_text('{"a": 1}')
    done = subprocess.run(
        [*_llmfix(), "repair", "--stream", str(answer), str(answer)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "--stream reads one input" in done.stderr
    done = subprocess.run(
        [*_llmfix(), "repair", "--stream", "--final", "--compact", str(answer)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, '{"a":1}\n')


# ----------------------------------------------------------- saved streams in `check`


def check_report(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [*_llmfix(), "check", *args, "-f", "json", "--no-progress"],
        capture_output=True,
        text=True,
        check=False,
    )
    report: dict[str, Any] = json.loads(done.stdout)
    report["exit"] = done.returncode
    return report


def test_check_reassembles_saved_streams_into_the_final_message(tmp_path: Path) -> None:
    for name in ("openai_chat.sse", "openai_responses.sse", "anthropic.sse", "ollama.ndjson"):
        shutil.copy(STREAMS / name, tmp_path / name)
    shutil.copy(STREAMS / "ollama.ndjson", tmp_path / "ollama.jsonl")
    report = check_report(str(tmp_path), "--schema", str(SCHEMA))
    items = {item["id"]: item for item in report["items"]}
    for name in ("openai_chat.sse", "openai_responses.sse", "anthropic.sse", "ollama.ndjson"):
        content = items[f"{tmp_path / name}#msg0"]
        assert content["value"] == PERSON, name
        assert content["status"] == "repaired"
    assert items[f"{tmp_path / 'ollama.jsonl'}#msg0"]["value"] == PERSON
    assert items[f"{tmp_path / 'anthropic.sse'}#msg0.call0"]["value"] == {"city": "Lima"}
    assert items[f"{tmp_path / 'ollama.ndjson'}#msg0.call0"]["value"] == {"city": "Rome"}


def test_check_warns_when_a_saved_stream_stopped_at_the_token_limit(tmp_path: Path) -> None:
    target = tmp_path / "cut.sse"
    shutil.copy(STREAMS / "openai_chat_tools.sse", target)
    report = check_report(str(target), "--tools", str(TOOLS))
    codes = {d["code"] for item in report["items"] for d in item["diagnostics"]}
    assert "stream.cut_off" in codes
    ids = [item["id"] for item in report["items"]]
    assert ids == [f"{target}#msg0.call0", f"{target}#msg0.call1"]


def test_the_library_reads_a_saved_stream_like_the_cli() -> None:
    from llmfix.stream.wire import reassemble

    decoder = reassemble((STREAMS / "openai_responses.sse").read_text())
    message = decoder.message()
    choice = message["choices"][0]
    assert choice["finish_reason"] == "completed"
    assert llmfix.repair(choice["message"]["content"]).value == {**PERSON, "age": "36"}
    assert choice["message"]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Oslo"}',
    }


def test_llm_repair_runs_once_on_the_closed_result_never_on_the_stream(
    server: LlmServer, tmp_path: Path
) -> None:
    """An answer missing a required property: snapshots come from the stream alone, then one
    model request repairs the final result."""
    import os

    from tests.llm_server import LlmServer, openai_reply

    answer = tmp_path / "answer.sse"
    chunk = {"choices": [{"index": 0, "delta": {"content": '{"name": "Ada Lovelace"}'}}]}
    answer.write_text(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n")
    fixed = {**PERSON, "languages": ["en"], "employed": False}
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-test-FAKEKEY1234567890abcdef",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    with LlmServer() as model:
        model.enqueue(openai_reply(json.dumps(fixed)))
        llm = ["--llm", "--model", "m", "--base-url", model.openai_base, "--no-cache"]
        done = subprocess.run(
            [*_llmfix(), "repair", "--stream", str(answer), "--schema", str(SCHEMA), *llm],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        requests = list(model.requests)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["value"] for e in events(lines, "value")][-1] == {"name": "Ada Lovelace"}
    assert events(lines, "value")[-1]["missing"] == ["/age"]
    assert len(requests) == 1  # once, after close(); the stream itself asked nothing
    assert lines[-1]["status"] == "llm_repaired"
    assert lines[-1]["value"] == fixed
    assert done.returncode == 0


def test_a_reader_that_goes_away_ends_the_stream_without_a_traceback() -> None:
    command = subprocess.Popen(
        [*_llmfix(), "repair", "--stream"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert command.stdin is not None
    assert command.stdout is not None
    command.stdin.write(b'{"a": 1}\n')
    command.stdin.flush()
    assert json.loads(command.stdout.readline())["value"] == {"a": 1}
    command.stdout.close()  # `| head -1`
    try:
        for k in range(2, 2000):
            command.stdin.write(b'{"a": %d}\n' % k)
            command.stdin.flush()
        command.stdin.close()
    except BrokenPipeError:
        pass  # llmfix already stopped
    assert command.wait(timeout=60) == 1
    assert command.stderr is not None
    assert b"Traceback" not in command.stderr.read()
    command.stderr.close()


def test_repair_reads_a_saved_stream_as_the_message_it_reassembles() -> None:
    done = subprocess.run(
        [*_llmfix(), "repair", str(STREAMS / "openai_chat.sse"), "--schema", str(SCHEMA), "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == PERSON
