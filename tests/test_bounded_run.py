"""Issue 27, items 8, 10 and 12: a run's work stays bounded whatever the repository says.

- 8: an untrusted project file may only tighten limits; flags and the user config may loosen
  them up to hard ceilings the code honours (no ``RecursionError`` in any writer).
- 10: the stream reader costs linear work on strings full of escaped quotes.
- 12: ``check -j N`` pool workers end with their parent, even when it is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import llmfix
from llmfix.options import Limits
from llmfix.stream import reader

# ------------------------------------------------------------------ 10: linear stream reading


def _escaped_quotes_answer(size: int) -> str:
    return '{"a": "' + '\\"x' * (size // 3) + '"}'


def _scanned_characters(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any]:
    """Characters the reader's JSON scanners were pointed at (from where a scan starts to
    the end of the buffer: what a scan may read) when ``text`` is fed one at a time."""
    work = [0]
    scan_string, scan_value = reader.scanstring, reader._SCAN

    def counted_string(buf: str, start: int, strict: bool) -> tuple[str, int]:
        work[0] += len(buf) - start
        return scan_string(buf, start, strict)

    def counted_value(buf: str, start: int) -> tuple[Any, int]:
        work[0] += len(buf) - start
        return scan_value(buf, start)  # type: ignore[no-any-return]

    monkeypatch.setattr(reader, "scanstring", counted_string)
    monkeypatch.setattr(reader, "_SCAN", counted_value)
    parser = llmfix.stream()
    for char in text:
        parser.feed(char)
    parser.flush()
    return work[0], parser


def test_escaped_quotes_fed_one_at_a_time_cost_linear_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = _escaped_quotes_answer(3_000)
    large = _escaped_quotes_answer(12_000)
    small_work, _ = _scanned_characters(small, monkeypatch)
    large_work, parser = _scanned_characters(large, monkeypatch)
    # each escaped quote sent the reader back over the whole string: ~n²/6 characters
    assert small_work <= 20 * len(small)
    assert large_work <= 20 * len(large)
    assert large_work / small_work < 6  # 4x the text: linear is 4, quadratic 16
    assert parser.close().value == json.loads(large)


def test_many_tool_calls_fed_one_character_at_a_time_cost_linear_checking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each tool call's end used to run the tool-call check on the whole text so far."""
    from llmfix.stream.calls import ToolCallStream

    checked = [0]
    check = ToolCallStream._check_tools

    def counted(self: Any, text: str, *, structured: bool = False) -> Any:
        checked[0] += len(text)
        return check(self, text, structured=structured)

    monkeypatch.setattr(ToolCallStream, "_check_tools", counted)
    call = '<tool_call>{"name": "f", "arguments": {"a": "\\"x\\"x"}}</tool_call>\n'
    text = call * 300
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    parser = llmfix.stream(tools=tools)
    events = [event for char in text for event in parser.feed(char)] + parser.flush()
    assert len([e for e in events if e.kind == "tool_call"]) == 300
    assert checked[0] <= 20 * len(text)  # was 37 times here, growing with the calls


@pytest.mark.parametrize(
    "answer",
    [
        '{"a": "x\\\\", "b": 1}',  # an escaped backslash right before the closing quote
        '{"a": "\\\\\\"", "b": 1}',  # an escaped backslash, then an escaped quote
        '{"a": "\\"\\\\\\\\\\"", "b": "y"}',
        '{"a": "\\u0022\\"", "b": [1]}',
    ],
)
def test_strings_with_escapes_close_where_they_end(answer: str) -> None:
    """The escape state carried from chunk to chunk finds the real closing quote."""
    expected = json.loads(answer)
    for size in (1, 2, 3):
        parser = llmfix.stream()
        shown: list[Any] = []
        for start in range(0, len(answer), size):
            shown += [e.value for e in parser.feed(answer[start : start + size]) if e.value]
        shown += [e.value for e in parser.flush() if e.value]
        assert shown[-1] == expected
        assert parser.close().value == expected


# ------------------------------------------------------------------ 12: workers end with the run


def _children(parent: int) -> set[int]:
    """The pids of ``parent``'s living child processes (from /proc; a zombie is not living)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == parent and state != "Z":
            found.add(int(entry.name))
    return found


def _living(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            alive.add(pid)
    return alive


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_pool_workers_end_when_check_is_killed(tmp_path: Path) -> None:
    answers = tmp_path / "answers"
    answers.mkdir()
    slow = "[" + ", ".join(f'{{"k{i}": [1, 2, "x",], }}' for i in range(8000)) + "]"
    for k in range(60):  # about 0.25 s each: the pool starts after half a second
        (answers / f"a{k:02}.json").write_text(slow)
    run = subprocess.Popen(
        [sys.executable, "-m", "llmfix", "check", str(answers), "-j", "2", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        workers: set[int] = set()
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
            workers = _children(run.pid)
        assert len(workers) >= 2, "the pool never started"
        time.sleep(0.3)  # the workers are checking
    finally:
        run.kill()
        run.wait()
    deadline = time.monotonic() + 20  # generous: a loaded machine; before, they never ended
    while _living(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _living(workers)
    for pid in left:  # do not leave them behind if the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left


_WATCHED_CHILD = """
import os, signal, sys, time
from llmfix.batch import pool as batch
batch._ask_kernel_to_end_with_parent = lambda: None  # the portable watcher alone
parent = os.getpid()
child = os.fork()
if child == 0:
    os.close(1)  # the test reads the output to its end
    os.close(2)
    try:
        batch._end_with_parent(parent)
    finally:  # the child lives on unless the watcher ends it
        time.sleep(60)
        os._exit(0)
print(child, flush=True)
time.sleep(0.5)
os.kill(parent, signal.SIGKILL)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_worker_without_the_kernel_signal_still_sees_its_parent_die() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _WATCHED_CHILD], capture_output=True, text=True, timeout=30
    )
    child = {int(run.stdout.split()[0])}
    deadline = time.monotonic() + 15
    while _living(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _living(child)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left


# ------------------------------------------------------------------ 8: limits a project file sets

HOSTILE_LIMITS = """\
jobs: 48
timeout: 1000000000.0
max-item-size: 99999999999
options: {max_depth: 100000, time_budget: 1000000000.0, max_size: 99999999999}
checks:
  - files: "*.json"
    options: {max_depth: 100000}
llm:
  model: m
  max-attempts: 50
  max-retries: 200
  backoff-max: 1000000000.0
  timeout: 1000000000.0
  max-calls: 100
"""


def _user_config(text: str) -> None:
    from llmfix.run.trust import user_config_path

    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_an_untrusted_project_file_may_only_tighten_limits(tmp_path: Path) -> None:
    from llmfix.run.config_file import load_settings

    _user_config("llm:\n  max-calls: 2\n")
    (tmp_path / "llmfix.yaml").write_text(HOSTILE_LIMITS)
    settings = load_settings({}, start=tmp_path)
    assert (settings.jobs, settings.timeout, settings.max_item_size) == (0, 60.0, 10_000_000)
    assert settings.options == {}
    assert settings.checks[0].options == {}
    assert settings.llm == {"model": "m", "max_calls": 2}  # the user's max-calls stands
    named = " ".join(settings.ignored)
    for key in (
        "jobs: 48",
        "timeout: 1000000000.0",
        "max-item-size",
        "options.max-depth: 100000",
        "options.time-budget",
        "options.max-size",
        "checks[0].options.max-depth",
        "llm.max-attempts: 50",
        "llm.max-retries: 200",
        "llm.backoff-max",
        "llm.timeout",
        "llm.max-calls: 100",
    ):
        assert key in named


def test_an_untrusted_project_file_keeps_the_limits_it_tightens(tmp_path: Path) -> None:
    from llmfix.run.config_file import load_settings

    (tmp_path / "llmfix.yaml").write_text(
        "jobs: 1\ntimeout: 5\noptions: {max_depth: 50}\nllm: {max-attempts: 1, max-calls: 3}\n"
    )
    settings = load_settings({}, start=tmp_path)
    assert (settings.jobs, settings.timeout, settings.options) == (1, 5, {"max_depth": 50})
    assert settings.llm == {"max_attempts": 1, "max_calls": 3}
    assert not [key for key in settings.ignored if ":" in key]  # no limit was left out


def test_trusted_sources_loosen_limits_up_to_their_ceilings(tmp_path: Path) -> None:
    from llmfix.run.ceilings import JOBS_PER_CPU, MAX_DEPTH, usable_cpus
    from llmfix.run.config_file import load_settings

    (tmp_path / "llmfix.yaml").write_text(HOSTILE_LIMITS)
    settings = load_settings({"jobs": 48}, start=tmp_path, trust=True)
    assert settings.options["max_depth"] == MAX_DEPTH
    assert settings.checks[0].options["max_depth"] == MAX_DEPTH
    assert settings.timeout == 86_400.0
    assert settings.jobs == min(48, JOBS_PER_CPU * usable_cpus())
    assert any("max-depth 100000 is above its ceiling" in note for note in settings.limited)
    assert settings.llm["max_attempts"] == 50  # trusted: kept, refused when the run starts


def _llmfix(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmfix", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )


def test_llm_limits_above_their_ceilings_are_a_one_line_error(tmp_path: Path) -> None:
    _user_config("llm:\n  model: m\n  max-attempts: 50\n")
    (tmp_path / "a.json").write_text("{'a': 1}")
    done = _llmfix("repair", "a.json", "--llm", cwd=tmp_path)
    assert done.returncode == 2
    assert "max_attempts must be at most 10" in done.stderr
    assert "Traceback" not in done.stderr


def _nested(depth: int) -> str:
    """An answer ``depth`` levels deep (arrays and objects in turn) with a trailing comma."""
    opening = "".join('{"a": ' if level % 2 else "[" for level in range(depth))
    closing = "".join("}" if level % 2 else "]" for level in reversed(range(depth)))
    return opening + "1," + closing


def test_a_3000_deep_answer_with_a_loosened_depth_is_a_diagnostic_not_a_crash(
    tmp_path: Path,
) -> None:
    (tmp_path / "deep.json").write_text(_nested(3000))
    (tmp_path / "llmfix.yaml").write_text("options: {max_depth: 100000}\n")
    repaired = _llmfix("repair", "deep.json", "--max-depth", "5000", cwd=tmp_path)
    checked = _llmfix(
        *("check", "deep.json", "-f", "json", "-o", "r.json", "--write-fixed", "fixed"),
        "--trust-config",
        cwd=tmp_path,
    )
    for done in (repaired, checked):
        assert "Traceback" not in done.stderr
        assert "RecursionError" not in done.stderr
        assert done.returncode == 1
        assert "above its ceiling: 600 is used" in done.stderr
    assert "limits.depth" in repaired.stdout + repaired.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["errors"][0]["code"] == "limits.depth"


@pytest.mark.parametrize("fmt", ["json", "yaml", "html"])
def test_an_answer_as_deep_as_the_ceiling_is_written_by_every_writer(
    tmp_path: Path, fmt: str
) -> None:
    from llmfix.run.ceilings import MAX_DEPTH

    depth = MAX_DEPTH - 10
    (tmp_path / "deep.json").write_text(_nested(depth))
    (tmp_path / "llmfix.yaml").write_text(f"options: {{max_depth: {MAX_DEPTH}}}\n")
    report = f"r.{fmt}"
    done = _llmfix(
        *("check", "deep.json", "-f", fmt, "-o", report, "--write-fixed", "fixed"),
        "--trust-config",
        cwd=tmp_path,
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0
    assert (tmp_path / report).stat().st_size > depth
    fixed = json.loads((tmp_path / "fixed" / "deep.json").read_text())
    assert fixed == json.loads(_nested(depth).replace("1,", "1"))


@pytest.mark.parametrize(
    "wrap",
    [lambda t: t, lambda t: "Here: " + t, lambda t: "```json\n" + t + "\n```", lambda t: t + " ok"],
    ids=["whole", "after-prose", "fenced", "before-prose"],
)
def test_strict_json_nested_past_the_limit_is_limits_depth(wrap: Any) -> None:
    """The stdlib decoder has no depth limit of its own: strict JSON deeper than max_depth
    is refused as the lenient reader refuses it, whichever path reads it (a 3,000-deep
    strict answer passed as valid, then crashed -j's pickles and -f yaml)."""
    limit = Limits().max_depth
    for depth, status in ((limit, {"valid", "extracted"}), (limit + 1, {"unparseable"})):
        result = llmfix.repair(wrap("[" * depth + "1" + "]" * depth))
        assert result.status.value in status
        if depth > limit:
            assert "limits.depth" in {d.code for d in result.diagnostics}


def test_a_deep_strict_answer_in_a_pool_run_is_a_diagnostic_not_a_crash(tmp_path: Path) -> None:
    for index in range(40):
        (tmp_path / f"a{index:02}.json").write_text("[" * 3000 + "1" + "]" * 3000)
    done = subprocess.run(
        [sys.executable, "-m", "llmfix", "check", ".", "-j", "2", "-f", "yaml", "-o", "r.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr
    assert done.returncode == 1
    assert (tmp_path / "r.yaml").read_text().count("limits.depth") >= 40
