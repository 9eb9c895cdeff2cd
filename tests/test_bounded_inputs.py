"""Inputs are read with bounds, and what was not repaired is written back as it was.

Issue 27.11: a FIFO, a device or a socket is never read from a path (it would hang the run
or never end), and no input is read past its limit plus one byte (a gigabyte line, a
gigabyte of stdin). Issue 27.15: `--write-fixed` and `--in-place` copy every byte they did
not repair. Issue 28.3: a byte replaced while decoding is a change, never `valid`. Issue
27.14: a NUL deleted inside a string is a change at risk safe.

Every command here runs in a child with a timeout and a memory cap, so a regression ends
the test instead of hanging the suite or filling the machine's memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import llmfix
from llmfix.files import read as filebytes
from llmfix.files.read import byte_limit
from llmfix.inputs import ReadOptions, items_from_file, read_source
from llmfix.model import Risk, Status

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")

MEMORY_CAP = 1 << 30  # bytes of address space a child may take beyond what it starts with


def _capped() -> None:  # in the child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 * MEMORY_CAP, 2 * MEMORY_CAP))


def run_cli(*args: str, cwd: Path, stdin: Any = None, timeout: float = 60) -> Any:
    env = {**os.environ}
    env.pop("LLMFIX_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "llmfix", *args],
        cwd=cwd,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=timeout,
        check=False,
        preexec_fn=_capped,
    )


def errors(proc: Any) -> list[str]:
    lines = proc.stderr.decode("utf-8", "replace").splitlines()
    return [line for line in lines if line.startswith("llmfix: error:")]


def no_traceback(proc: Any) -> bool:
    return b"Traceback" not in proc.stderr + proc.stdout


def report_items(proc: Any) -> dict[str, dict[str, Any]]:
    report = json.loads(proc.stdout)
    return {Path(item["id"]).name: item for item in report["items"]}


# ------------------------------------------------------------ FIFOs, devices (27.11)


def test_repair_of_a_device_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = run_cli("repair", "/dev/zero", cwd=tmp_path, timeout=30)
    [error] = errors(proc)
    assert (proc.returncode, "/dev/zero" in error, "device" in error, no_traceback(proc)) == (
        2,
        True,
        True,
        True,
    )


def test_check_of_a_device_is_an_error_item_naming_it(tmp_path: Path) -> None:
    proc = run_cli("check", "/dev/urandom", "-f", "json", "--no-progress", cwd=tmp_path)
    [item] = report_items(proc).values()
    [diag] = item["diagnostics"]
    assert (proc.returncode, item["status"], diag["code"], "device" in diag["message"]) == (
        1,
        "error",
        "input.unreadable",
        True,
    )


def test_a_fifo_named_for_repair_is_refused_without_waiting(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "answer.txt")
    proc = run_cli("repair", "answer.txt", cwd=tmp_path, timeout=30)
    [error] = errors(proc)
    assert (proc.returncode, error) == (
        2,
        "llmfix: error: answer.txt: is a FIFO (named pipe), not a regular file; skipped; "
        "pipe it to stdin to read it",
    )


@pytest.mark.parametrize("name", ["b.txt", "b.jsonl", "b.json"])
def test_a_fifo_in_a_checked_folder_is_skipped_by_name_and_the_rest_checked(
    tmp_path: Path, name: str
) -> None:
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / "a.txt").write_text('{"a": 1,}')
    os.mkfifo(answers / name)
    (answers / "c.txt").write_text('{"c": 3}')
    proc = run_cli("check", "answers", "-f", "json", "--no-progress", cwd=tmp_path, timeout=30)
    items = report_items(proc)
    fifo = items[name]["diagnostics"][0]
    statuses = {n: i["status"] for n, i in items.items()}
    assert (proc.returncode, statuses, fifo["code"], "FIFO" in fifo["message"]) == (
        1,
        {"a.txt": "repaired", name: "error", "c.txt": "valid"},
        "input.unreadable",
        True,
    )


def test_a_schema_that_is_a_fifo_is_a_one_line_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "schema.json")
    (tmp_path / "a.json").write_text('{"a": 1}')
    proc = run_cli("repair", "a.json", "-s", "schema.json", cwd=tmp_path, timeout=30)
    assert (proc.returncode, errors(proc)) == (
        2,
        ["llmfix: error: schema schema.json: is a FIFO (named pipe), not a regular file"],
    )


def test_a_schema_in_a_project_config_that_is_a_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"a": 1}')
    proc = run_cli("check", "a.json", "-s", "/dev/zero", "--no-progress", cwd=tmp_path)
    assert (proc.returncode, errors(proc)) == (
        2,
        ["llmfix: error: schema /dev/zero: is a character device, not a regular file"],
    )


def test_a_config_file_that_is_a_fifo_is_a_one_line_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "llmfix.yaml")
    (tmp_path / "a.json").write_text('{"a": 1}')
    proc = run_cli("check", "a.json", "--config", "llmfix.yaml", cwd=tmp_path, timeout=30)
    assert (proc.returncode, errors(proc)) == (
        2,
        ["llmfix: error: llmfix.yaml: is a FIFO (named pipe), not a regular file"],
    )
    found = run_cli("check", "a.json", cwd=tmp_path, timeout=30)  # found upward: not a config
    assert found.returncode == 0, found.stderr


def test_stdin_that_is_a_pipe_is_still_read(tmp_path: Path) -> None:
    stream = _pipe(b'{"a": 1,}')
    proc = run_cli("repair", "--compact", cwd=tmp_path, stdin=stream)
    os.close(stream)
    assert (proc.returncode, proc.stdout) == (0, b'{"a":1}\n')


def _pipe(data: bytes) -> Any:
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    return read


# ------------------------------------------------------------- at most the limit (27.11)


def test_stdin_over_the_limit_is_not_read_past_it(tmp_path: Path) -> None:
    # --max-size 1000: 4,004 bytes at most; /dev/zero never ends, so only a bound stops it.
    with open("/dev/zero", "rb") as zero:
        proc = run_cli("repair", "--max-size", "1000", cwd=tmp_path, stdin=zero, timeout=30)
    assert (proc.returncode, errors(proc), proc.stdout) == (
        2,
        [
            "llmfix: error: <stdin>: over 4,004 bytes; not read (the limit follows "
            "--max-item-size / --max-size)"
        ],
        b"",
    )


def test_a_stream_from_dev_zero_stops_as_binary_at_once(tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as zero:
        proc = run_cli("repair", "--stream", cwd=tmp_path, stdin=zero, timeout=30)
    assert (proc.returncode, errors(proc), proc.stdout) == (
        2,
        ["llmfix: error: <stdin>: looks like a binary file (NUL bytes); stopped reading"],
        b"",
    )


def test_a_stream_stops_at_the_limit(tmp_path: Path) -> None:
    stream = _pipe(b" " * 60_000)  # (a pipe holds 64 KB)
    proc = run_cli("repair", "--stream", "--max-size", "10000", cwd=tmp_path, stdin=stream)
    os.close(stream)
    [error] = errors(proc)
    assert (proc.returncode, "over 40,004 bytes; stopped reading" in error) == (2, True)


def test_a_file_over_the_limit_is_input_too_large_in_check(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text('{"a": "' + "x" * 5000 + '"}')
    (tmp_path / "small.txt").write_text('{"a": "x"}')
    proc = run_cli(
        "check", "big.txt", "small.txt", "--max-item-size", "1000", "-f", "json",
        "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    items = report_items(proc)
    codes = {n: [d["code"] for d in i["diagnostics"]] for n, i in items.items()}
    assert (proc.returncode, codes) == (1, {"big.txt": ["input.too_large"], "small.txt": []})


def test_a_long_jsonl_line_is_input_too_large_and_the_other_lines_are_checked(
    tmp_path: Path,
) -> None:
    lines = [
        json.dumps({"output": '{"a": 1}'}),
        json.dumps({"output": "x" * 3_000_000}),
        json.dumps({"output": '{"c": 3,}'}),
    ]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    proc = run_cli(
        "check", "a.jsonl", "--field", "output", "--max-item-size", "1000", "-f", "json",
        "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    report = json.loads(proc.stdout)
    found = [(i["id"], i["status"], [d["code"] for d in i["diagnostics"]]) for i in report["items"]]
    assert (proc.returncode, found) == (
        1,
        [
            ("a.jsonl:1", "valid", []),
            ("a.jsonl:2", "error", ["input.too_large"]),
            ("a.jsonl:3", "repaired", ["parse.trailing_comma"]),
        ],
    )


def test_reading_a_long_jsonl_line_holds_no_more_than_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with path.open("w") as out:
        out.write(json.dumps({"output": "x" * 32_000_000}) + "\n")
        out.write(json.dumps({"output": "{}"}) + "\n")
    options = ReadOptions(field="output", max_bytes=byte_limit(1000))
    tracemalloc.start()
    try:
        items = list(items_from_file(str(path), options))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    codes = [i.error.code if i.error else i.text for i in items]
    # 32 MB of line, read in 64 KB pieces and dropped: the peak is a few pieces.
    assert (codes, peak < 1_000_000) == (["input.too_large", "{}"], True)


def test_reading_a_large_file_holds_no_more_than_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 32_000_000)
    tracemalloc.start()
    try:
        with pytest.raises(llmfix.errors.InputError, match="over 4,004 bytes"):
            read_source(str(path), limit=4004)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000


# ------------------------------------------------- replaced bytes are a change (28.3)


def test_a_replaced_byte_is_a_change_not_valid(tmp_path: Path) -> None:
    (tmp_path / "l1.json").write_bytes(b'{"a": "\xfc"}')
    proc = run_cli("repair", "l1.json", "--fail-on", "extracted", "-v", cwd=tmp_path)
    stderr = proc.stderr.decode()
    assert (proc.returncode, "invalid UTF-8 at byte 7 (0xfc)" in stderr, "repaired" in stderr) == (
        1,
        True,
        True,
    )


def test_check_reports_a_replaced_byte_with_its_offset_at_risk_safe(tmp_path: Path) -> None:
    (tmp_path / "l1.json").write_bytes(b'{"a": "\xfc"}')
    proc = run_cli("check", "l1.json", "-f", "json", "--no-progress", cwd=tmp_path)
    [item] = report_items(proc).values()
    [diag] = item["diagnostics"]
    assert (item["status"], item["risk"], diag["code"], diag["risk"], diag["data"]) == (
        "repaired",
        "safe",
        "input.invalid_utf8",
        "safe",
        {"offset": 7},
    )


def test_max_risk_lossless_stops_an_answer_with_a_replaced_byte(tmp_path: Path) -> None:
    (tmp_path / "l1.json").write_bytes(b'{"a": "\xfc"}')
    proc = run_cli("check", "l1.json", "--max-risk", "lossless", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 1


def test_a_jsonl_line_with_a_replaced_byte_is_repaired_and_says_where(tmp_path: Path) -> None:
    first = b'{"output": "{\\"a\\": 1}"}\n'
    (tmp_path / "a.jsonl").write_bytes(first + b'{"output": "{\\"b\\": \\"caf\xe9\\"}"}\n')
    proc = run_cli(
        "check", "a.jsonl", "--field", "output", "-f", "json", "--no-progress", cwd=tmp_path
    )
    report = json.loads(proc.stdout)
    found = [(i["status"], [(d["code"], d.get("data")) for d in i["diagnostics"]]) for i in
             report["items"]]  # fmt: skip
    offset = len(first) + len(b'{"output": "{\\"b\\": \\"caf')
    assert found == [("valid", []), ("repaired", [("input.invalid_utf8", {"offset": offset})])]


def test_an_explicit_encoding_is_no_change(tmp_path: Path) -> None:
    (tmp_path / "l1.json").write_bytes(b'{"a": "\xfc"}')
    proc = run_cli(
        "check", "l1.json", "--encoding", "latin-1", "-f", "json", "--no-progress", cwd=tmp_path
    )
    [item] = report_items(proc).values()
    assert (item["status"], item["diagnostics"]) == ("valid", [])


# ------------------------------------------------ bytes not repaired stay (27.15)


def test_a_mirror_copy_of_an_unrepaired_file_is_byte_for_byte(tmp_path: Path) -> None:
    answers = tmp_path / "answers"
    answers.mkdir()
    original = b'{"name": "caf\xe9"}\r\n'  # Latin-1, CRLF: not repaired, only copied
    (answers / "a.txt").write_bytes(original)
    (answers / "b.txt").write_bytes(b'{"b": 1,}')
    proc = run_cli("check", "answers", "--write-fixed", "fixed", "--no-progress", cwd=tmp_path)
    copied = (tmp_path / "fixed" / "answers" / "a.txt").read_bytes()
    repaired = json.loads((tmp_path / "fixed" / "answers" / "b.txt").read_bytes())
    assert (proc.returncode, copied, repaired) == (0, original, {"b": 1})


def test_in_place_leaves_unrepaired_jsonl_lines_byte_for_byte(tmp_path: Path) -> None:
    repairable = b'{"output": "{\\"a\\": 1,}"}\n'
    latin1 = b'{"output": "{\\"b\\": \\"caf\xe9\\"}", "n": 1.50}\r\n'  # valid; E9 and CRLF
    untouched = b'{"output": "{\\"c\\": 3}",   "n": 1e2}\n'
    path = tmp_path / "a.jsonl"
    path.write_bytes(repairable + latin1 + untouched)
    proc = run_cli("check", "a.jsonl", "--field", "output", "--in-place", "--no-progress",
                   cwd=tmp_path)  # fmt: skip
    lines = path.read_bytes().splitlines(keepends=True)
    assert (proc.returncode, json.loads(lines[0]), lines[1:]) == (
        0,
        {"output": '{"a": 1}'},
        [latin1, untouched],
    )


def test_a_repaired_jsonl_line_keeps_its_crlf_and_its_encoding(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"output": "{\\"a\\": \\"caf\xe9\\",}"}\r\n{"output": "{}"}\r\n')
    proc = run_cli(
        "check", "a.jsonl", "--field", "output", "--encoding", "latin-1", "--in-place",
        "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    data = path.read_bytes()
    first, second = data.split(b"\r\n")[:2]
    # ASCII with \u escapes: the same text read as Latin-1 (or as UTF-8).
    value = json.loads(json.loads(first.decode("latin-1"))["output"])
    assert (proc.returncode, data.count(b"\r\n"), first.isascii(), value, second) == (
        0,
        2,
        True,
        {"a": "café"},
        b'{"output": "{}"}',
    )


def test_a_repaired_json_document_keeps_its_crlf(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b'{\r\n  "a": 1,\r\n}\r\n')
    proc = run_cli("check", "a.json", "--in-place", "--no-progress", cwd=tmp_path)
    data = (tmp_path / "a.json").read_bytes()
    assert (proc.returncode, data) == (0, b'{\r\n  "a": 1\r\n}\r\n')


@pytest.mark.parametrize("command", ["check", "repair"])
def test_in_place_writes_nothing_when_only_a_byte_was_replaced(
    tmp_path: Path, command: str
) -> None:
    original = b'{"name": "caf\xe9"}'
    (tmp_path / "a.json").write_bytes(original)
    args = ("--no-progress",) if command == "check" else ()
    proc = run_cli(command, "a.json", "--in-place", *args, cwd=tmp_path)
    assert (proc.returncode, (tmp_path / "a.json").read_bytes()) == (0, original)


# ---------------------------------------------------------- a NUL in a string (27.14)


def test_a_nul_deleted_inside_a_string_is_a_change_at_risk_safe() -> None:
    result = llmfix.repair('{"a": "x\x00y"}')
    [diag] = result.diagnostics
    assert (result.status, result.risk, diag.code, result.value) == (
        Status.REPAIRED,
        Risk.SAFE,
        "normalize.invisible_chars",
        {"a": "xy"},
    )


def test_a_nul_between_tokens_is_still_lossless() -> None:
    result = llmfix.repair('{"a":\x00 "xy"}')
    assert (result.status, result.risk) == (Status.EXTRACTED, Risk.LOSSLESS)


def test_max_risk_lossless_stops_a_nul_deleted_inside_a_string(tmp_path: Path) -> None:
    stream = _pipe(b'{"a": "x\0y"}')
    proc = run_cli("repair", "--max-risk", "lossless", cwd=tmp_path, stdin=stream)
    os.close(stream)
    assert (proc.returncode, proc.stdout) == (1, b"")


def test_repair_jsonl_reads_each_stdin_line_with_the_bound(tmp_path: Path) -> None:
    lines = b'{"output": "{}"}\n{"output": "' + b"x" * 60_000 + b'"}\n{"output": "caf\xe9"}\n'
    with subprocess.Popen(
        [sys.executable, "-m", "llmfix", "repair", "--jsonl", "--field", "output",
         "--max-size", "1000"],
        cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=_capped,
    ) as child:  # fmt: skip
        out, _ = child.communicate(lines, timeout=60)
    found = [json.loads(line) for line in out.splitlines()]
    summary = [(r["line"], r["status"], [d["code"] for d in r["diagnostics"]]) for r in found]
    assert summary == [
        (1, "valid", []),
        (2, "error", ["input.too_large"]),
        (3, "unparseable", ["input.invalid_utf8", "extract.none", "parse.failed"]),
    ]


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 100)
    with pytest.raises(filebytes.TooLarge):
        filebytes.read_regular(str(path), 99)
    assert filebytes.read_regular(str(path), 100) == b"x" * 100


def test_a_file_that_grew_after_its_size_was_read_is_still_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 100)
    fstat = os.fstat

    class Smaller:  # what fstat said before the file grew to 100 bytes
        def __init__(self, found: os.stat_result) -> None:
            self.st_mode, self.st_size = found.st_mode, 10

    monkeypatch.setattr(filebytes.os, "fstat", lambda fd: Smaller(fstat(fd)))
    with pytest.raises(filebytes.TooLarge):
        filebytes.read_regular(str(path), 50)
    assert filebytes.read_regular(str(path), 1000) == b"x" * 100


def test_a_baseline_that_is_a_fifo_is_a_one_line_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "baseline.json")
    (tmp_path / "a.json").write_text('{"a": 1}')
    proc = run_cli(
        "check", "a.json", "--baseline", "baseline.json", "--no-progress", cwd=tmp_path, timeout=30
    )
    assert (proc.returncode, errors(proc)) == (
        2,
        [
            "llmfix: error: baseline baseline.json: cannot read: is a FIFO (named pipe), "
            "not a regular file"
        ],
    )
