"""Remote ``$ref`` (issue 8): refused unless ``--allow-remote-refs``, then fetched with limits.

The local server (``server``, a real HTTP server on 127.0.0.1) serves the referenced
documents and records every request, so "refused" means no request reached it. CLI cases
run the program as a subprocess.
"""

from __future__ import annotations

import json
import pickle
import socket
import time
from pathlib import Path
from typing import Any

import pytest

import llmfix
from llmfix.batch.core import BatchLimits, Profile
from llmfix.batch.pool import run_items
from llmfix.errors import SchemaError
from llmfix.inputs import Item
from llmfix.schema import validate
from llmfix.schema.load import load_schema, schema_from_value
from llmfix.schema.validate import SchemaValidator
from tests.llm_server import LlmServer
from tests.test_hardening import assert_no_traceback, error_lines, run_cli

DEFS = {"$defs": {"age": {"type": "integer", "minimum": 0}}}
DEFS_YAML = "$defs:\n  age:\n    type: integer\n    minimum: 0\n"
GOOD = '{"age": 30}'
BAD = '{"age": -1}'  # valid without the remote definition's "minimum"
NO_PROXY = {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}


def schema_referring_to(url: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"age": {"$ref": url}}, "required": ["age"]}


def write_case(tmp_path: Path, url: str) -> None:
    (tmp_path / "s.json").write_text(json.dumps(schema_referring_to(url)))
    (tmp_path / "good.txt").write_text(GOOD)
    (tmp_path / "bad.txt").write_text(BAD)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# ------------------------------------------------------------------------------ the CLI


@pytest.mark.parametrize("command", ["repair", "check"])
def test_without_the_flag_a_remote_ref_is_refused_before_any_request(
    server: LlmServer, tmp_path: Path, command: str
) -> None:
    url = server.serve("/defs.json", DEFS)
    write_case(tmp_path, url + "#/$defs/age")
    proc = run_cli(command, "good.txt", "-s", "s.json", cwd=tmp_path, env=NO_PROXY)
    [error] = error_lines(proc.stderr)
    assert_no_traceback(proc)
    assert (proc.returncode, url in error, "--allow-remote-refs" in error, server.paths) == (
        2,
        True,
        True,
        [],
    )


@pytest.mark.parametrize(("name", "code"), [("good.txt", 0), ("bad.txt", 1)])
def test_repair_with_the_flag_validates_with_the_remote_definition(
    server: LlmServer, tmp_path: Path, name: str, code: int
) -> None:
    write_case(tmp_path, server.serve("/defs.json", DEFS) + "#/$defs/age")
    proc = run_cli(
        "repair", name, "-s", "s.json", "--allow-remote-refs", "--report", "r.json",
        cwd=tmp_path, env=NO_PROXY,
    )  # fmt: skip
    report = json.loads((tmp_path / "r.json").read_text())
    diagnostics = [d for item in report["items"] for d in item["diagnostics"]]
    codes = [d["code"] for d in diagnostics if d["severity"] == "error"]
    expected = [] if code == 0 else ["schema.minimum"]
    assert (proc.returncode, codes, server.paths) == (code, expected, ["/defs.json"])


def test_check_with_the_flag_validates_with_the_remote_definition_fetched_once(
    server: LlmServer, tmp_path: Path
) -> None:
    write_case(tmp_path, server.serve("/defs.json", DEFS) + "#/$defs/age")
    proc = run_cli(
        "check", "good.txt", "bad.txt", "-s", "s.json", "--allow-remote-refs",
        "--no-progress", "-f", "json", cwd=tmp_path, env=NO_PROXY,
    )  # fmt: skip
    report = json.loads(proc.stdout)
    found = {
        i["id"]: (i["status"], [d["code"] for d in i["diagnostics"] if d["severity"] == "error"])
        for i in report["items"]
    }
    assert (proc.returncode, found, server.paths) == (
        1,
        {"good.txt": ("valid", []), "bad.txt": ("invalid", ["schema.minimum"])},
        ["/defs.json"],
    )


def test_a_trusted_config_file_key_allows_remote_refs_for_check(
    server: LlmServer, tmp_path: Path
) -> None:
    write_case(tmp_path, server.serve("/defs.json", DEFS) + "#/$defs/age")
    (tmp_path / "llmfix.yaml").write_text("allow-remote-refs: true\nschema: s.json\n")
    command = ["check", "bad.txt", "--no-progress", "-f", "json", "--trust-config"]
    proc = run_cli(*command, cwd=tmp_path, env=NO_PROXY)
    [item] = json.loads(proc.stdout)["items"]
    assert (proc.returncode, item["status"], server.paths) == (1, "invalid", ["/defs.json"])


@pytest.mark.parametrize(
    "config",
    ["allow-remote-refs: 1\n", "options: {allow_remote_refs: 'yes'}\n"],
    ids=["top-level", "options"],
)
def test_a_config_value_that_is_not_a_boolean_is_one_line(tmp_path: Path, config: str) -> None:
    (tmp_path / "llmfix.yaml").write_text(config)
    (tmp_path / "good.txt").write_text(GOOD)
    proc = run_cli("check", "good.txt", "--no-progress", cwd=tmp_path)
    [error] = error_lines(proc.stderr)
    assert (proc.returncode, "allow-remote-refs must be true or false" in error) == (2, True)


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/defs.yaml", "text/plain"), ("/defs", "application/yaml")],
    ids=["yaml-suffix", "yaml-content-type"],
)
def test_a_yaml_body_is_read(
    server: LlmServer, tmp_path: Path, path: str, content_type: str
) -> None:
    write_case(tmp_path, server.serve(path, DEFS_YAML, content_type) + "#/$defs/age")
    proc = run_cli(
        "repair", "bad.txt", "-s", "s.json", "--allow-remote-refs", cwd=tmp_path, env=NO_PROXY
    )
    assert (proc.returncode, "schema.minimum" in proc.stderr) == (1, True)


@pytest.mark.parametrize(
    ("route", "message"),
    [
        ("/missing.json", "HTTP 404"),
        ("/page.json", "invalid JSON at line 1, column 1"),
        ("unreachable", "Connection refused"),
    ],
    ids=["404", "not-json", "unreachable"],
)
@pytest.mark.parametrize("command", ["repair", "check"])
def test_a_failed_fetch_is_one_line_naming_the_url(
    server: LlmServer, tmp_path: Path, command: str, route: str, message: str
) -> None:
    server.serve("/page.json", "<html>hello</html>", "text/html")
    if route == "unreachable":
        url = f"http://127.0.0.1:{free_port()}/defs.json"
    else:
        url = server.url + route
    write_case(tmp_path, url + "#/$defs/age")
    proc = run_cli(
        command, "good.txt", "-s", "s.json", "--allow-remote-refs", cwd=tmp_path, env=NO_PROXY
    )
    [error] = error_lines(proc.stderr)
    assert_no_traceback(proc)
    assert (proc.returncode, url in error, message in error) == (2, True, True)


def test_a_file_ref_outside_the_schema_directory_is_still_refused_with_the_flag(
    tmp_path: Path,
) -> None:
    (tmp_path / "outside.json").write_text(json.dumps(DEFS))
    (tmp_path / "schemas").mkdir()
    schema = schema_referring_to("../outside.json#/$defs/age")
    (tmp_path / "schemas" / "s.json").write_text(json.dumps(schema))
    (tmp_path / "good.txt").write_text(GOOD)
    proc = run_cli(
        "repair", "good.txt", "-s", "schemas/s.json", "--allow-remote-refs", cwd=tmp_path
    )
    [error] = error_lines(proc.stderr)
    assert (proc.returncode, "outside the schema's directory" in error) == (2, True)


def test_a_remote_document_cannot_reach_local_files(server: LlmServer, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(DEFS))
    url = server.serve("/defs.json", {"$ref": secret.as_uri() + "#/$defs/age"})
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "s.json").write_text(json.dumps(schema_referring_to(url)))
    (tmp_path / "good.txt").write_text(GOOD)
    proc = run_cli(
        "repair", "good.txt", "-s", "schemas/s.json", "--allow-remote-refs",
        cwd=tmp_path, env=NO_PROXY,
    )  # fmt: skip
    [error] = error_lines(proc.stderr)
    assert (proc.returncode, "outside the schema's directory" in error) == (2, True)


# -------------------------------------------------------------------------- the library


def test_the_library_option_and_the_validator_cache_keep_the_flag_apart(
    server: LlmServer,
) -> None:
    schema = schema_referring_to(server.serve("/defs.json", DEFS) + "#/$defs/age")
    allowed = llmfix.repair(BAD, schema, allow_remote_refs=True)
    with pytest.raises(SchemaError, match=r"remote reference \S+ refused"):
        llmfix.repair(BAD, schema)  # the same schema again, without the flag
    assert ([d.code for d in allowed.errors], server.paths) == (
        ["schema.minimum"],
        ["/defs.json"],
    )


def test_a_pickled_validator_does_not_fetch_again(server: LlmServer) -> None:
    schema = schema_referring_to(server.serve("/defs.json", DEFS) + "#/$defs/age")
    original = SchemaValidator(schema_from_value(schema), allow_remote=True)
    copy = pickle.loads(pickle.dumps(original))
    assert ([d.code for d in copy.errors({"age": -1})], server.paths) == (
        ["schema.minimum"],
        ["/defs.json"],
    )


def test_batch_workers_use_the_remote_definition(server: LlmServer, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    url = server.serve("/defs.json", DEFS) + "#/$defs/age"
    path.write_text(json.dumps(schema_referring_to(url)))
    spec = load_schema(str(path))
    profiles = {"": Profile(SchemaValidator(spec, allow_remote=True))}
    texts = ['{"age": 1}', '{"age": -1}'] * 20
    items = [Item(f"f:{i}", "f", i + 1, t, "text") for i, t in enumerate(texts)]
    limits = BatchLimits(jobs=2, serial_budget=0.0)
    statuses = [o.status for o in run_items(items, profiles, limits)]
    assert (statuses, server.paths) == (["valid", "invalid"] * 20, ["/defs.json"])


def test_the_size_cap_stops_a_large_body(
    server: LlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(validate, "_REMOTE_MAX_BYTES", 1000)
    url = server.serve("/big.json", {"$defs": {"age": {"description": "x" * 5000}}})
    spec = schema_from_value(schema_referring_to(url + "#/$defs/age"))
    with pytest.raises(SchemaError, match=r"big\.json is larger than 1,000 bytes"):
        SchemaValidator(spec, allow_remote=True)


@pytest.mark.parametrize("slow", ["delay", "drip"])
def test_a_slow_server_is_given_up_on(
    server: LlmServer, monkeypatch: pytest.MonkeyPatch, slow: str
) -> None:
    monkeypatch.setattr(validate, "_REMOTE_TIMEOUT", 0.5)
    url = server.serve("/slow.json", DEFS)
    route = server.routes["/slow.json"]
    if slow == "delay":
        route.delay = 3.0
    else:
        route.drip = 0.05  # each read is quick; the whole answer is not
    spec = schema_from_value(schema_referring_to(url + "#/$defs/age"))
    start = time.monotonic()
    with pytest.raises(SchemaError, match=r"cannot fetch http://127\.0\.0\.1:\d+/slow\.json"):
        SchemaValidator(spec, allow_remote=True)
    assert time.monotonic() - start < 2.5


# ---------------------------------------------------------------------- tool schemas


def write_tool_case(tmp_path: Path, url: str) -> None:
    tool = {
        "type": "function",
        "function": {"name": "set_age", "parameters": schema_referring_to(url)},
    }
    (tmp_path / "tools.json").write_text(json.dumps([tool]))
    call = '<tool_call>{"name": "set_age", "arguments": {"age": -1}}</tool_call>'
    (tmp_path / "call.txt").write_text(call)


def test_tool_schemas_refuse_a_remote_ref_without_the_flag(
    server: LlmServer, tmp_path: Path
) -> None:
    url = server.serve("/defs.json", DEFS)
    write_tool_case(tmp_path, url + "#/$defs/age")
    proc = run_cli("repair", "call.txt", "--tools", "tools.json", cwd=tmp_path, env=NO_PROXY)
    [error] = error_lines(proc.stderr)
    assert_no_traceback(proc)
    assert (proc.returncode, "--allow-remote-refs" in error, server.paths) == (2, True, [])


def test_tool_schemas_use_the_remote_definition_with_the_flag(
    server: LlmServer, tmp_path: Path
) -> None:
    url = server.serve("/defs.json", DEFS)
    write_tool_case(tmp_path, url + "#/$defs/age")
    proc = run_cli(
        "repair",
        "call.txt",
        "--tools",
        "tools.json",
        "--allow-remote-refs",
        "--report",
        "r.json",
        cwd=tmp_path,
        env=NO_PROXY,
    )
    assert_no_traceback(proc)
    report = json.loads((tmp_path / "r.json").read_text())
    codes = [d["code"] for item in report["items"] for d in item["diagnostics"]]
    # -1 breaks the remote definition's "minimum": 0, which only a fetch can know
    assert (proc.returncode, "schema.minimum" in codes, server.paths) == (
        1,
        True,
        ["/defs.json"],
    )
