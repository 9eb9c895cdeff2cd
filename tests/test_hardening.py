"""Hardening (issue 8): bounded work, bad files, nothing lost, nothing leaked or executed.

CLI cases run the installed program as a subprocess, the way users do, so that "no
traceback" and the exit code are what a shell sees.
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
from llmfix.files import read as filebytes
from llmfix.inputs import ReadOptions, items_from_file
from llmfix.model import Status
from llmfix.toolcalls import extract_tool_calls

FAKE_KEY = "sk-FAKEKEY-hardening-0123456789abcdef"
REPAIRABLE = "{'a': 1, 'b': [1, 2,],}"  # repaired to {"a": 1, "b": [1, 2]}


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    merged = {**os.environ, **(env or {})}
    merged.pop("LLMFIX_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "llmfix", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=merged,
        timeout=60,
        check=False,
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("llmfix: error:")]


def assert_no_traceback(proc: Any) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout


# -------------------------------------------------------------------------- bounded work


def test_nesting_100k_deep_ends_with_a_depth_diagnostic_quickly() -> None:
    start = time.perf_counter()
    result = llmfix.repair("[" * 100_000)
    elapsed = time.perf_counter() - start
    assert ([d.code for d in result.errors], elapsed < 5) == (["limits.depth"], True)


def test_10_mb_of_braces_ends_with_a_size_diagnostic_quickly() -> None:
    start = time.perf_counter()
    result = llmfix.repair("{" * (10 * 1024 * 1024))
    elapsed = time.perf_counter() - start
    assert ([d.code for d in result.errors], elapsed < 5) == (["limits.size"], True)


def test_strict_json_over_the_size_limit_is_still_read() -> None:
    text = json.dumps({"a": "x" * 100})
    assert llmfix.repair(text, max_size=10).status is Status.VALID


def test_the_time_budget_interrupts_the_default_parser() -> None:
    text = "[" + "{'a': 1, 'b': [1, 2,], c: 'x'}," * 20_000 + "]"
    result = llmfix.repair(text, time_budget=0.01)
    assert [d.code for d in result.errors] == ["limits.time"]


@pytest.mark.parametrize(
    "text",
    ["/" * 5000 + "x", "/**/" * 5000 + "x", "/*" * 5000, "{ " + "/**/" * 5000 + "x"],
    ids=["slashes", "block-comments", "openers", "comments-in-object"],
)
def test_comment_like_runs_do_not_backtrack_exponentially(text: str) -> None:
    start = time.perf_counter()
    llmfix.repair(text)
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize(
    ("command", "code", "exit_code"),
    [("repair", "over 40,000,004 bytes; not read", 2), ("check", "input.too_large", 1)],
)
def test_a_100_mb_single_line_is_refused_quickly(
    tmp_path: Path, command: str, code: str, exit_code: int
) -> None:
    # Over what 10,000,000 characters can take (4 bytes each): not even read.
    with (tmp_path / "big.txt").open("w") as handle:
        handle.write('{"a": "' + "x" * 100_000_000)
    start = time.perf_counter()
    proc = run_cli(
        command, "big.txt", "--no-progress" if command == "check" else "-v", cwd=tmp_path
    )
    elapsed = time.perf_counter() - start
    assert (proc.returncode, code in proc.stdout + proc.stderr, elapsed < 20) == (
        exit_code,
        True,
        True,
    )


@pytest.mark.parametrize(
    "text",
    ["~~~" * 10_000, "<invoke name=" * 10_000, "to=functions." * 5_000],
    ids=["tilde-run", "invoke-fragments", "harmony-recipients"],
)
def test_repeated_openers_take_linear_time(text: str) -> None:
    start = time.perf_counter()
    llmfix.repair(text)
    extract_tool_calls(text)
    assert time.perf_counter() - start < 5


def test_a_limit_is_reported_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "deep.txt").write_text("[" * 2000)
    proc = run_cli("repair", "deep.txt", "--max-depth", "100", cwd=tmp_path)
    assert (proc.returncode, "limits.depth" in proc.stderr) == (1, True)


# ----------------------------------------------------------------------------- bad files


@pytest.fixture
def bad_files(tmp_path: Path) -> Path:
    """A directory of inputs, each broken in its own way, between two good ones."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "a_ok.txt").write_text(REPAIRABLE)
    (d / "b_invalid_utf8.txt").write_bytes(b'{"name": "caf\xe9"}')
    (d / "c_utf16.json").write_bytes(b"\xff\xfe" + '{"name": "Zoë"}'.encode("utf-16-le"))
    (d / "d_binary.bin").write_bytes(bytes(range(256)) * 8 + b"\0" * 64)
    (d / "e_empty.txt").write_bytes(b"")
    (d / "f_broken_link.txt").symlink_to(d / "nowhere")
    (d / "z_ok.txt").write_text(REPAIRABLE)
    return d


def test_invalid_utf8_is_replaced_and_reported(bad_files: Path) -> None:
    [item] = items_from_file(str(bad_files / "b_invalid_utf8.txt"), ReadOptions())
    codes = [d.code for d in item.diagnostics]
    assert ("\ufffd" in item.text, codes) == (True, ["input.invalid_utf8"])


def test_utf16_with_bom_is_read_right(bad_files: Path) -> None:
    proc = run_cli("repair", "c_utf16.json", "--compact", cwd=bad_files)
    assert (proc.returncode, json.loads(proc.stdout)) == (0, {"name": "Zoë"})


def test_an_explicit_encoding_decodes_latin1(bad_files: Path) -> None:
    proc = run_cli("repair", "b_invalid_utf8.txt", "--encoding", "latin-1", cwd=bad_files)
    assert (proc.returncode, json.loads(proc.stdout)) == (0, {"name": "café"})


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("d_binary.bin", "binary file"),
        ("f_broken_link.txt", "broken symbolic link"),
    ],
)
def test_an_unreadable_file_is_one_line_and_the_batch_goes_on(
    bad_files: Path, name: str, message: str
) -> None:
    proc = run_cli("repair", "a_ok.txt", name, "z_ok.txt", "--compact", cwd=bad_files)
    [error] = error_lines(proc.stderr)
    outputs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert_no_traceback(proc)
    statuses = [(line["source"], line["status"]) for line in outputs]
    assert (proc.returncode, message in error, name in error, statuses) == (
        2,
        True,
        True,
        [("a_ok.txt", "repaired"), (name, "error"), ("z_ok.txt", "repaired")],
    )


def test_an_empty_file_is_unparseable_not_an_error(bad_files: Path) -> None:
    proc = run_cli("repair", "e_empty.txt", cwd=bad_files)
    assert (proc.returncode, "extract.none" in proc.stderr, error_lines(proc.stderr)) == (
        1,
        True,
        [],
    )


def test_check_reports_every_bad_file_and_checks_the_rest(bad_files: Path) -> None:
    # --follow-symlinks: a walk skips links otherwise (with a warning), the broken one too
    args = ("--no-progress", "-f", "json", "--follow-symlinks")
    proc = run_cli("check", str(bad_files), *args, cwd=bad_files)
    report = json.loads(proc.stdout)
    statuses = {Path(i["id"]).name: i["status"] for i in report["items"]}
    assert_no_traceback(proc)
    assert (proc.returncode, statuses) == (
        1,
        {
            "a_ok.txt": "repaired",
            "b_invalid_utf8.txt": "repaired",  # a byte replaced: a change (issue 28.3)
            "c_utf16.json": "valid",
            "d_binary.bin": "error",
            "e_empty.txt": "unparseable",
            "f_broken_link.txt": "error",
            "z_ok.txt": "repaired",
        },
    )


def test_a_permission_error_is_an_item_error(
    bad_files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulated: the suite may run as root, which chmod 000 does not stop.
    def refuse(*args: object, **kwargs: object) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(filebytes.os, "open", refuse)  # the reader's open()
    [item] = items_from_file(str(bad_files / "a_ok.txt"), ReadOptions())
    assert (item.error.code, item.error.message) == ("input.unreadable", "permission denied")


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads a chmod 000 file anyway"
)
def test_a_file_without_read_permission_is_one_line_and_the_batch_goes_on(
    bad_files: Path,
) -> None:
    locked = bad_files / "locked.txt"
    locked.write_text(REPAIRABLE)
    locked.chmod(0)
    proc = run_cli("repair", "a_ok.txt", "locked.txt", "z_ok.txt", "--compact", cwd=bad_files)
    [error] = error_lines(proc.stderr)
    assert (proc.returncode, "permission denied" in error, len(proc.stdout.splitlines())) == (
        2,
        True,
        2,
    )


# ------------------------------------------------------------------- schemas and config

CYCLE = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}
MISSING = {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (None, "is a directory"),
        (CYCLE, "reference cycle"),
        (MISSING, "cannot resolve $ref"),
        ("type: !!python/object/apply:os.system ['touch pwned']\n", "could not determine"),
        ({"$ref": "http://127.0.0.1:9/s.json"}, "remote reference"),
        ({"$ref": "/etc/hostname"}, "outside the schema's directory"),
    ],
    ids=["directory", "ref-cycle", "missing-ref", "python-tag", "remote-ref", "outside-ref"],
)
@pytest.mark.parametrize("command", ["repair", "check"])
def test_a_bad_schema_is_one_line_and_exit_2(
    tmp_path: Path, command: str, schema: Any, message: str
) -> None:
    (tmp_path / "a.txt").write_text(REPAIRABLE)
    if schema is None:
        (tmp_path / "s.json").mkdir()
        name = "s.json"
    elif isinstance(schema, str):
        (tmp_path / "s.yaml").write_text(schema)
        name = "s.yaml"
    else:
        (tmp_path / "s.json").write_text(json.dumps(schema))
        name = "s.json"
    proc = run_cli(command, "a.txt", "--schema", name, cwd=tmp_path)
    [error] = error_lines(proc.stderr)
    assert_no_traceback(proc)
    assert (proc.returncode, message in error, (tmp_path / "pwned").exists()) == (2, True, False)


@pytest.mark.parametrize(
    ("config", "where", "message"),
    [
        ("fail-on: [repaired\n  x: 1\n", "llmfix.yaml:2:4:", "not valid YAML"),
        (
            "schema: !!python/object/apply:os.system ['touch pwned']\n",
            "llmfix.yaml:1:9:",
            "could not determine a constructor",
        ),
    ],
    ids=["syntax-error", "python-tag"],
)
def test_a_bad_config_names_file_and_line(
    tmp_path: Path, config: str, where: str, message: str
) -> None:
    (tmp_path / "llmfix.yaml").write_text(config)
    (tmp_path / "a.txt").write_text(REPAIRABLE)
    proc = run_cli("check", "a.txt", "--no-progress", cwd=tmp_path)
    [error] = error_lines(proc.stderr)
    assert_no_traceback(proc)
    assert (proc.returncode, where in error, message in error) == (2, True, True)
    assert not (tmp_path / "pwned").exists()


# ------------------------------------------------------------------------- nothing lost


def test_sigkill_during_in_place_leaves_no_partial_file(tmp_path: Path) -> None:
    originals = {}
    body = "{'items': [" + ", ".join(f"{{'n': {n}, 'tag': 'x',}}" for n in range(2000)) + "]}"
    for n in range(300):
        path = tmp_path / f"f{n:03}.txt"
        path.write_text(body)
        originals[path.name] = body
    expected = llmfix.repair(body).value
    names = sorted(originals)
    proc = subprocess.Popen(
        [sys.executable, "-m", "llmfix", "repair", "--in-place", "-q", *names],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Kill once some files are rewritten and others are not.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if sum((tmp_path / n).read_text() != body for n in names[:50]) >= 5:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    rewritten = 0
    for name in names:
        text = (tmp_path / name).read_text()
        if text != originals[name]:
            assert json.loads(text) == expected, name
            rewritten += 1
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in originals]
    # A temp file (".NAME.*.tmp") may outlive SIGKILL; it is never a target file.
    assert (0 < rewritten < len(names), all(n.endswith(".tmp") for n in leftovers)) == (
        True,
        True,
    )


# ----------------------------------------------------------- nothing leaked or executed


@pytest.mark.parametrize("command", ["repair", "check", "config"])
def test_an_api_key_never_appears_in_help(tmp_path: Path, command: str) -> None:
    env = {"OPENAI_API_KEY": FAKE_KEY, "ANTHROPIC_API_KEY": FAKE_KEY}
    proc = run_cli(command, "--help", cwd=tmp_path, env=env)
    assert (proc.returncode, FAKE_KEY in proc.stdout + proc.stderr) == (0, False)


def test_an_api_key_never_appears_in_errors_or_reports(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "string", "pattern": "^[a-z]+$"}}}
    (tmp_path / "s.json").write_text(json.dumps(schema))
    (tmp_path / "a.txt").write_text('{"n": 1}')
    env = {"OPENAI_API_KEY": FAKE_KEY, "LLMFIX_CACHE_DIR": str(tmp_path / "cache")}
    proc = run_cli(
        "repair", "a.txt", "-s", "s.json", "--llm", "--model", "m", "--no-cache",
        "--base-url", "http://127.0.0.1:9/v1", "--report", "r.json",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    report = (tmp_path / "r.json").read_text()
    assert ("llm.provider_unavailable" in proc.stderr, FAKE_KEY in proc.stderr + report) == (
        True,
        False,
    )


@pytest.mark.parametrize(
    "answer",
    [
        "[__import__('os').system('touch pwned')]",
        "[f(a=__import__('os').system('touch pwned'))]",
        "<|python_start|>[f(a=open('pwned', 'w'))]<|python_end|>",
    ],
)
def test_pythonic_tool_calls_are_never_evaluated(tmp_path: Path, answer: str) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    (tmp_path / "a.txt").write_text(answer)
    proc = run_cli("repair", "a.txt", "--tools", "tools.json", cwd=tmp_path)
    assert_no_traceback(proc)
    assert not (tmp_path / "pwned").exists()
