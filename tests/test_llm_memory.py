"""What a server refused, kept across runs beside the answer cache (issue 36, item 2): one
refused request per server, not one per run, even with --no-cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llmfix.llm import LlmConfig, make_provider
from llmfix.llm.providers.memory import FILE_NAME, MAX_BYTES, MAX_ENTRIES, ServerMemory
from tests.llm_server import LlmServer, error_reply, openai_reply

FAKE_KEY = "sk-test-FAKEKEY1234567890abcdef"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
VALID = {"name": "Ada", "age": 36}
# llama-cpp-python's server answers a json_schema response_format with HTTP 500
REFUSED = "response_format type json_schema is not supported by this server"


def formats(server: LlmServer) -> list[str]:
    return [r.body["response_format"]["type"] for r in server.requests]


def ask(server: LlmServer, cache_dir: Path, **changes: Any) -> None:
    settings: dict[str, Any] = {"model": "test-model", **changes}
    config = LlmConfig(
        base_url=server.openai_base,
        cache=False,
        cache_dir=str(cache_dir),
        max_retries=0,
        **settings,
    )
    provider = make_provider(config)
    try:
        provider.complete_json(
            [{"role": "user", "content": "fix"}], PERSON, temperature=0, max_tokens=64, timeout=5
        )
    finally:
        provider.close()


def test_a_refused_mode_is_not_asked_for_again_by_a_later_provider(
    server: LlmServer, tmp_path: Path
) -> None:
    server.enqueue(error_reply(500, REFUSED), openai_reply(VALID), openai_reply(VALID))
    ask(server, tmp_path)
    ask(server, tmp_path)
    assert formats(server) == ["json_schema", "json_object", "json_object"]
    record = json.loads((tmp_path / FILE_NAME).read_text(encoding="utf-8"))
    assert server.url not in json.dumps(record)  # the host is hashed, never written


def test_another_model_on_the_same_server_learns_for_itself(
    server: LlmServer, tmp_path: Path
) -> None:
    server.enqueue(error_reply(500, REFUSED), openai_reply(VALID), openai_reply(VALID))
    ask(server, tmp_path)
    ask(server, tmp_path, model="other-model")
    assert formats(server) == ["json_schema", "json_object", "json_schema"]


def test_remember_servers_off_keeps_nothing(server: LlmServer, tmp_path: Path) -> None:
    server.enqueue(error_reply(500, REFUSED), openai_reply(VALID))
    server.enqueue(error_reply(500, REFUSED), openai_reply(VALID))
    ask(server, tmp_path, remember_servers=False)
    ask(server, tmp_path, remember_servers=False)
    assert formats(server) == ["json_schema", "json_object"] * 2
    assert not (tmp_path / FILE_NAME).exists()


@pytest.mark.parametrize(
    "content",
    [b"{not json", b'{"v": 1, "servers": []}', b'{"v": 99, "servers": {}}', b"\xff\xfe"],
    ids=["damaged", "wrong-shape", "other-version", "not-utf8"],
)
def test_a_bad_file_is_starting_from_nothing(tmp_path: Path, content: bytes) -> None:
    (tmp_path / FILE_NAME).write_bytes(content)
    memory = ServerMemory(tmp_path)
    assert memory.recall("k") == {}
    memory.keep("k", {"refused_modes": ["json_schema"]})
    assert memory.recall("k") == {"refused_modes": ["json_schema"]}


def test_values_of_the_wrong_type_are_dropped(tmp_path: Path) -> None:
    record = {"refused_modes": ["json_schema", 7, "x" * 100], "no_prefill": "yes"}
    (tmp_path / FILE_NAME).write_text(json.dumps({"v": 1, "servers": {"k": record}}))
    assert ServerMemory(tmp_path).recall("k") == {"refused_modes": ["json_schema"]}


def test_the_file_is_bounded(tmp_path: Path) -> None:
    memory = ServerMemory(tmp_path)
    for i in range(MAX_ENTRIES + 20):
        memory.keep(f"k{i}", {"no_prefill": True})
    servers = json.loads((tmp_path / FILE_NAME).read_text())["servers"]
    assert len(servers) == MAX_ENTRIES
    big = tmp_path / "big"
    big.mkdir()
    (big / FILE_NAME).write_text(" " * (MAX_BYTES + 1))
    assert ServerMemory(big).recall("k") == {}


def test_a_link_in_place_of_the_file_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"v": 1, "servers": {"k": {"no_prefill": True}}}))
    (tmp_path / FILE_NAME).symlink_to(target)
    assert ServerMemory(tmp_path).recall("k") == {}


def test_no_cache_runs_pay_the_refusal_once(server: LlmServer, tmp_path: Path) -> None:
    """Two `llmfix repair --llm --no-cache` runs: the second starts from the mode that
    worked (the bench's 24 calls for 11 answers where 14 would do)."""
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps(PERSON), encoding="utf-8")
    answer = tmp_path / "answer.txt"
    answer.write_text('{"name": "Ada"}', encoding="utf-8")
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LLMFIX_CONFIG_DIR": str(tmp_path / "config"),
    }
    args = [
        sys.executable,
        "-m",
        "llmfix",
        "repair",
        str(answer),
        "-s",
        str(schema),
        "--llm",
        "--model",
        "test-model",
        "--base-url",
        server.openai_base,
        "--no-cache",
    ]
    server.enqueue(error_reply(500, REFUSED), openai_reply(VALID), openai_reply(VALID))
    runs = [
        subprocess.run(args, capture_output=True, text=True, env=env, timeout=60, check=False)
        for _ in "ab"
    ]
    assert [r.returncode for r in runs] == [0, 0]
    assert formats(server) == ["json_schema", "json_object", "json_object"]
    assert ["llm: 2 model calls" in runs[0].stderr, "llm: 1 model call," in runs[1].stderr] == [
        True,
        True,
    ]
