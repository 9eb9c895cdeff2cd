"""Hardening (issue 8): ``kill -9`` while llmfix writes its output or a report.

Each case runs the installed program on an input large enough that writing takes tens of
milliseconds, once to the end (what a complete target looks like, and how long the write
takes), then again several times, killed with SIGKILL: mostly just after the temp file
starts filling (spread over the measured write window), and at random moments of the run.
After every kill the target is either its old content or complete, and nothing but a
``.NAME.*.tmp`` temp file is left behind. At least one kill must have landed mid-write (it
left a temp file), so the test cannot pass without exercising the window it is about.
"""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_hardening import run_cli

SEED = 8
OLD_OUTPUT = '{"old": true}\n'
OLD_JSON_REPORT = '{"version": "old", "items": []}\n'
OLD_JUNIT_REPORT = '<testsuites name="old" />\n'
DURING_WRITE = 4  # kills spread over the write window
AT_RANDOM = 2  # kills at a random moment of the run
CHECK_ITEMS = 1000


@dataclass
class Case:
    args: list[str]
    target: str
    old: str
    complete: Callable[[str], bool]  # set from the full run for outputs that never change


@dataclass
class Trial:
    delay: float
    content: str
    mid_write: bool  # the kill left a temp file: it came between creating and renaming it
    strays: list[str]  # files left that are neither inputs, the target nor temp files


def start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "LLMFIX_CONFIG"}
    return subprocess.Popen(
        [sys.executable, "-m", "llmfix", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # its own process group: a kill reaches any worker too
    )


def temp_files(directory: Path, target: str) -> list[Path]:
    return [
        p for p in directory.iterdir() if p.name.startswith(f".{target}.") and p.suffix == ".tmp"
    ]


def writing(directory: Path, target: str) -> bool:
    """Whether the output has started: a temp file for ``target`` has received bytes (or,
    from a writer that is not atomic, the target itself has; the old contents are tiny)."""
    try:
        if (directory / target).stat().st_size > 100:
            return True
    except FileNotFoundError:
        pass
    for path in temp_files(directory, target):
        try:
            if path.stat().st_size > 0:
                return True
        except FileNotFoundError:  # renamed into place meanwhile
            pass
    return False


def wait_for_write(proc: subprocess.Popen[bytes], directory: Path, target: str) -> bool:
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if writing(directory, target):
            return True
        time.sleep(0.0005)
    return False


def measure(case: Case, cwd: Path) -> tuple[float, float, str]:
    """One full run: (seconds in all, seconds from the first byte written to exit, target)."""
    (cwd / case.target).write_text(case.old)
    begin = time.monotonic()
    proc = start(case.args, cwd)
    seen = wait_for_write(proc, cwd, case.target)
    first = time.monotonic()
    proc.wait(timeout=60)
    end = time.monotonic()
    assert seen, "the write was never seen: make the input larger"
    return end - begin, end - first, (cwd / case.target).read_text()


def killed(case: Case, cwd: Path, delay: float, after_first_byte: bool) -> Trial:
    for path in temp_files(cwd, case.target):
        path.unlink()
    (cwd / case.target).write_text(case.old)
    before = {p.name for p in cwd.iterdir()}
    proc = start(case.args, cwd)
    if after_first_byte:
        wait_for_write(proc, cwd, case.target)
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    temps = temp_files(cwd, case.target)
    strays = [p.name for p in cwd.iterdir() if p.name not in before and p not in temps]
    return Trial(delay, (cwd / case.target).read_text(), bool(temps), strays)


def run_kills(case: Case, cwd: Path) -> list[Trial]:
    total, window, content = measure(case, cwd)
    assert is_complete(case, content), "the full run did not write a complete target"
    rng = random.Random(SEED)
    trials = [
        killed(case, cwd, window * 0.6 * (i + rng.random()) / DURING_WRITE, after_first_byte=True)
        for i in range(DURING_WRITE)
    ]
    trials += [
        killed(case, cwd, rng.uniform(0.1, 1.0) * total, after_first_byte=False)
        for _ in range(AT_RANDOM)
    ]
    return trials


def is_complete(case: Case, text: str) -> bool:
    try:
        return case.complete(text)
    except (ValueError, KeyError, ET.ParseError):  # a cut-off JSON or XML document
        return False


def assert_never_partial(case: Case, trials: list[Trial]) -> None:
    summary = [(t.delay, t.mid_write, t.content == case.old) for t in trials]
    for trial in trials:
        is_old = trial.content == case.old
        assert (is_old or is_complete(case, trial.content), trial.strays) == (True, []), summary
        if trial.mid_write:
            assert is_old, summary
    assert any(t.mid_write for t in trials), f"no kill landed mid-write: {summary}"


# ------------------------------------------------------------------------------ repair


@pytest.fixture(scope="module")
def big_answer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A 5 MB answer (strict JSON: the run's time goes to writing 9 MB back out)."""
    directory = tmp_path_factory.mktemp("big")
    items = [
        {"n": i, "name": f"item {i}", "tags": ["a", "b"], "score": i / 2} for i in range(60_000)
    ]
    value = {"items": items}
    (directory / "big.json").write_text(json.dumps(value))
    return directory, value


def test_sigkill_during_output_leaves_old_or_complete_output(
    big_answer: tuple[Path, object],
) -> None:
    cwd, _ = big_answer
    case = Case(["repair", "big.json", "-o", "out.json", "-q"], "out.json", OLD_OUTPUT, bool)
    _, _, expected = measure(case, cwd)
    case.complete = lambda text: text == expected
    assert_never_partial(case, run_kills(case, cwd))


def test_sigkill_during_repair_report_leaves_old_or_complete_report(
    big_answer: tuple[Path, object],
) -> None:
    cwd, value = big_answer

    def complete(text: str) -> bool:
        [item] = json.loads(text)["items"]
        return bool(item["value"] == value)

    case = Case(
        ["repair", "big.json", "--report", "r.json", "-q"], "r.json", OLD_JSON_REPORT, complete
    )
    assert_never_partial(case, run_kills(case, cwd))


# ------------------------------------------------------------------------------- check


def json_report_complete(text: str) -> bool:
    return len(json.loads(text)["items"]) == CHECK_ITEMS


def junit_report_complete(text: str) -> bool:
    return len(ET.fromstring(text).findall(".//testcase")) == CHECK_ITEMS


@pytest.fixture(scope="module")
def check_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two JSONL logs of repairable answers, ``CHECK_ITEMS`` in all, in ``logs/``."""
    root = tmp_path_factory.mktemp("check")
    (root / "logs").mkdir()
    for n in range(2):
        with (root / "logs" / f"run{n}.jsonl").open("w") as handle:
            for i in range(CHECK_ITEMS // 2):
                answer = f"Sure! {{'a': {i}, 'b': [1, 2,], 'c': 'x' }}"
                handle.write(json.dumps({"id": i, "output": answer}) + "\n")
    return root


@pytest.mark.parametrize(
    ("fmt", "target", "old", "complete"),
    [
        ("json", "report.json", OLD_JSON_REPORT, json_report_complete),
        ("junit", "junit.xml", OLD_JUNIT_REPORT, junit_report_complete),
    ],
    ids=["json", "junit"],
)
def test_sigkill_during_check_report_leaves_old_or_complete_report(
    check_dir: Path, fmt: str, target: str, old: str, complete: Callable[[str], bool]
) -> None:
    args = ["check", "logs", "--field", "output", "--fail-on", "repaired", "-j", "1"]
    args += ["--no-progress", "-q", "-f", fmt, "-o", target]
    case = Case(args, target, old, complete)
    assert_never_partial(case, run_kills(case, check_dir))


# ---------------------------------------------------------------------- permission bits


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("command", ["repair", "check"])
def test_a_replaced_output_keeps_its_mode_and_a_new_one_follows_the_umask(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "a.txt").write_text("{'a': 1,}")
    old = tmp_path / "old.json"
    old.write_text(OLD_JSON_REPORT)
    old.chmod(0o640)
    flag = "-o" if command == "repair" else "--output"
    extra = ["--no-progress", "-f", "json"] if command == "check" else []
    run_cli(command, "a.txt", flag, "old.json", *extra, cwd=tmp_path)
    run_cli(command, "a.txt", flag, "new.json", *extra, cwd=tmp_path)
    modes = [stat.S_IMODE((tmp_path / n).stat().st_mode) for n in ("old.json", "new.json")]
    changed = old.read_text() != OLD_JSON_REPORT
    assert (changed, modes) == (True, [0o640, 0o666 & ~current_umask()])
