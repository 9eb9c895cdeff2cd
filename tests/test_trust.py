"""A checked-out repository must not make llmfix send secrets or data anywhere (issue 18).

Each test builds a temporary "cloned repository" whose config (``llmfix.yaml``,
``[tool.llmfix]`` in a ``pyproject.toml``, or a file in a parent directory) turns LLM repair
on against a real HTTP server on 127.0.0.1, names a secret environment variable as the API
key and allows remote ``$ref``s to that server. The installed ``llmfix`` runs in the
repository as a subprocess; "nothing sent" means no request reached the server and no
secret appears in stdout, stderr or any report. Trusting the file (``llmfix config trust``,
``--trust-config``, ``LLMFIX_TRUST_CONFIG=1``) makes the same file work, until it changes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from llmfix.errors import ConfigError
from llmfix.llm import LlmConfig, llm_repair
from llmfix.pipeline.core import repair_text
from llmfix.run.trust import file_digest, is_trusted, trust_file, untrust_file, user_config_dir
from llmfix.schema.load import schema_from_value
from llmfix.schema.validate import SchemaValidator
from tests.llm_server import LlmServer, openai_reply

CLOUD_SECRET = "cloud-secret-AKIA0123456789SECRET"  # what the hostile file asks to send
OPENAI_SECRET = "sk-user-own-key-0123456789abcdef"  # the user's own key
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
VALID = {"name": "Ada", "age": 36}
LLMFIX = Path(sys.executable).with_name("llmfix")  # the installed console script


def hostile_llm(server: LlmServer) -> dict[str, object]:
    return {
        "provider": "openai",
        "model": "x",
        "base-url": server.openai_base,
        "api-key-env": "MY_CLOUD_SECRET",
        "max-retries": 0,
        "cache": False,
    }


def hostile_yaml(server: LlmServer) -> str:
    lines = ["schema: person.json", "allow-remote-refs: true", "llm:"]
    lines += [f"  {key}: {json.dumps(value)}" for key, value in hostile_llm(server).items()]
    return "\n".join(lines) + "\n"


def hostile_pyproject(server: LlmServer) -> str:
    lines = ["[tool.llmfix]", 'schema = "person.json"', "allow-remote-refs = true", ""]
    lines += ["[tool.llmfix.llm]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in hostile_llm(server).items()]
    return "\n".join(lines) + "\n"


@dataclass
class Clone:
    """A checked-out repository: ``root`` holds the config, ``work`` is where llmfix runs."""

    root: Path
    work: Path
    config: Path
    env: dict[str, str]
    server: LlmServer

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(LLMFIX), *args],
            cwd=self.work,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def seen(self, *done: subprocess.CompletedProcess[str]) -> str:
        """Everything llmfix showed or wrote: output, errors and every report in the clone."""
        reports = [p.read_text(encoding="utf-8") for p in self.root.rglob("report*.json")]
        return "".join(d.stdout + d.stderr for d in done) + "".join(reports)

    def assert_nothing_sent(self, *done: subprocess.CompletedProcess[str]) -> None:
        seen = self.seen(*done)
        assert (self.server.requests, CLOUD_SECRET in seen, OPENAI_SECRET in seen) == (
            [],
            False,
            False,
        )


def make_clone(tmp_path: Path, server: LlmServer, layout: str) -> Clone:
    server.serve("/defs.json", {"$defs": {"age": {"type": "integer", "minimum": 0}}})
    root = tmp_path / "clone"
    work = root / "answers" if layout == "parent" else root
    work.mkdir(parents=True)
    if layout == "pyproject":
        config = root / "pyproject.toml"
        config.write_text(hostile_pyproject(server), encoding="utf-8")
        work = root / "src"  # found upward too
        work.mkdir()
    else:
        config = root / "llmfix.yaml"
        config.write_text(hostile_yaml(server), encoding="utf-8")
    (root / "person.json").write_text(json.dumps(PERSON), encoding="utf-8")
    (work / "ans.txt").write_text('{"name": "Ada"}\n', encoding="utf-8")  # "age" missing
    env = {
        **os.environ,
        "MY_CLOUD_SECRET": CLOUD_SECRET,
        "OPENAI_API_KEY": OPENAI_SECRET,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
    }
    env.pop("LLMFIX_CONFIG", None)
    return Clone(root, work, config, env, server)


@pytest.fixture(params=["llmfix.yaml", "pyproject", "parent"])
def clone(request: pytest.FixtureRequest, tmp_path: Path, server: LlmServer) -> Clone:
    """The hostile config as ``llmfix.yaml``, as ``[tool.llmfix]`` found upward, and as an
    ``llmfix.yaml`` in the parent of the working directory."""
    return make_clone(tmp_path, server, request.param)


def repair(
    clone: Clone, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    schema = str(clone.root / "person.json")
    command = ["repair", "ans.txt", "-s", schema, "--report", "report-repair.json", *extra]
    return clone.run(*command, env=env)


def check(clone: Clone, *extra: str) -> subprocess.CompletedProcess[str]:
    command = ["check", "ans.txt", "-f", "json", "-o", "report-check.json", "--no-progress"]
    return clone.run(*command, *extra)


# ------------------------------------------------------------------ an untrusted file


def test_repair_in_a_cloned_repository_sends_nothing(clone: Clone) -> None:
    done = repair(clone)
    clone.assert_nothing_sent(done)
    assert done.returncode == 1  # the rules' verdict: "age" is missing


def test_check_in_a_cloned_repository_sends_nothing(clone: Clone) -> None:
    done = check(clone)
    clone.assert_nothing_sent(done)
    assert done.returncode == 1


def test_config_in_a_cloned_repository_sends_nothing(clone: Clone) -> None:
    done = clone.run("config")
    clone.assert_nothing_sent(done)
    assert (done.returncode, "trusted: false" in done.stdout) == (0, True)


def test_a_remote_ref_is_not_fetched_because_the_file_allows_it(clone: Clone) -> None:
    schema = {**PERSON, "properties": {"age": {"$ref": f"{clone.server.url}/defs.json"}}}
    (clone.root / "person.json").write_text(json.dumps(schema), encoding="utf-8")
    done = check(clone)
    clone.assert_nothing_sent(done)
    assert (done.returncode, "--allow-remote-refs" in done.stderr) == (2, True)


def test_the_ignored_keys_are_named_once_on_stderr_with_how_to_trust(clone: Clone) -> None:
    done = repair(clone)
    [note] = [line for line in done.stderr.splitlines() if "not trusted" in line]
    named = ["llm.base-url", "llm.api-key-env", "allow-remote-refs", "llmfix config trust"]
    assert [key for key in named if key not in note] == []


def test_the_file_still_sets_the_schema(clone: Clone) -> None:
    done = check(clone)
    report = json.loads((clone.work / "report-check.json").read_text(encoding="utf-8"))
    codes = [d["code"] for d in report["items"][0]["diagnostics"]]
    assert (done.returncode, "schema.required" in codes) == (1, True)


def test_with_the_users_llm_flags_the_files_host_and_secret_are_still_not_used(
    clone: Clone,
) -> None:
    """--llm and the user's own server: the model name comes from the file, the host and
    the key variable do not."""
    with LlmServer() as own:
        own.enqueue(openai_reply(VALID))
        done = repair(clone, "--llm", "--base-url", own.openai_base, "--no-cache")
        [sent] = own.requests
    clone.assert_nothing_sent(done)
    assert (done.returncode, sent.body["model"], sent.headers["authorization"]) == (
        0,
        "x",
        f"Bearer {OPENAI_SECRET}",
    )


# ------------------------------------------------------------------ trusting it


def test_after_config_trust_the_same_file_works(clone: Clone) -> None:
    trusted = clone.run("config", "trust")
    clone.server.enqueue(openai_reply(VALID))
    done = repair(clone)
    [sent] = clone.server.requests
    assert (trusted.returncode, done.returncode, json.loads(done.stdout)) == (0, 0, VALID)
    assert sent.headers["authorization"] == f"Bearer {CLOUD_SECRET}"


def test_a_trusted_file_that_changes_is_untrusted_again(clone: Clone) -> None:
    clone.run("config", "trust")
    with clone.config.open("a", encoding="utf-8") as handle:
        handle.write("# one more line\n")
    done = repair(clone)
    clone.assert_nothing_sent(done)
    assert "not trusted" in done.stderr


def test_trust_config_works_in_ci(clone: Clone) -> None:
    clone.server.enqueue(openai_reply(VALID))
    done = repair(clone, "--trust-config")
    assert (done.returncode, len(clone.server.requests)) == (0, 1)


def test_the_trust_variable_works_in_ci(clone: Clone) -> None:
    clone.server.enqueue(openai_reply(VALID))
    done = repair(clone, env={"LLMFIX_TRUST_CONFIG": "1"})
    assert (done.returncode, len(clone.server.requests)) == (0, 1)


def test_a_trusted_file_allows_remote_refs_for_check(clone: Clone) -> None:
    schema = {**PERSON, "properties": {"age": {"$ref": f"{clone.server.url}/defs.json#/$defs/age"}}}
    (clone.root / "person.json").write_text(json.dumps(schema), encoding="utf-8")
    (clone.work / "ans.txt").write_text('{"name": "Ada", "age": 3}', encoding="utf-8")
    done = check(clone, "--trust-config")
    assert (done.returncode, [r.path for r in clone.server.requests]) == (0, ["/defs.json"])


def test_untrust_forgets_the_file(clone: Clone) -> None:
    clone.run("config", "trust")
    forgotten = clone.run("config", "untrust")
    done = repair(clone)
    clone.assert_nothing_sent(done)
    assert "no longer trusted" in forgotten.stdout


# ------------------------------------------------------------------ the user's own settings


def write_user_config(text: str) -> Path:
    path = user_config_dir() / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_user_configs_llm_section_is_trusted(tmp_path: Path, server: LlmServer) -> None:
    clone = make_clone(tmp_path, server, "llmfix.yaml")
    clone.config.write_text("schema: person.json\n", encoding="utf-8")
    write_user_config(
        f"llm:\n  model: m\n  base-url: {server.openai_base}\n  api-key-env: MY_CLOUD_SECRET\n"
        "  cache: false\n"
    )
    server.enqueue(openai_reply(VALID))
    done = repair(clone)
    [sent] = server.requests
    assert (done.returncode, sent.headers["authorization"]) == (0, f"Bearer {CLOUD_SECRET}")


def test_a_user_llm_section_that_is_not_enabled_waits_for_the_flag(
    tmp_path: Path, server: LlmServer
) -> None:
    clone = make_clone(tmp_path, server, "llmfix.yaml")
    clone.config.write_text("schema: person.json\n", encoding="utf-8")
    write_user_config(f"llm:\n  enabled: false\n  model: m\n  base-url: {server.openai_base}\n")
    server.enqueue(openai_reply(VALID))
    without = repair(clone)
    asked = len(server.requests)
    with_flag = repair(clone, "--llm", "--no-cache")
    assert (without.returncode, asked, with_flag.returncode, len(server.requests)) == (1, 0, 0, 1)


def test_an_unknown_key_in_the_user_config_is_one_line(tmp_path: Path, server: LlmServer) -> None:
    clone = make_clone(tmp_path, server, "llmfix.yaml")
    path = write_user_config("schema: x.json\n")
    done = repair(clone)
    assert (done.returncode, done.stderr.count("\n"), str(path) in done.stderr) == (2, 1, True)


# ------------------------------------------------------------------ the library


def test_a_default_key_is_not_sent_to_a_host_from_an_untrusted_mapping(
    server: LlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_SECRET)
    config = LlmConfig.from_mapping(
        {"model": "m", "base_url": server.openai_base, "cache": False}, trusted=False
    )
    validator = SchemaValidator(schema_from_value(PERSON))
    first = repair_text('{"name": "Ada"}', validator=validator)
    with pytest.raises(ConfigError, match="not sending the OPENAI_API_KEY key") as raised:
        llm_repair('{"name": "Ada"}', first, validator=validator, config=config)
    assert (server.requests, OPENAI_SECRET in str(raised.value)) == ([], False)


def test_a_flag_base_url_is_the_callers_own(server: LlmServer) -> None:
    config = LlmConfig.from_mapping({"model": "m", "base_url": "http://h/v1"}, trusted=False)
    assert config.with_overrides(base_url=server.openai_base).base_url_trusted is True


@pytest.mark.parametrize("key", ["api_key_env", "cache_dir", "save_prompts", "redact"])
def test_an_untrusted_mapping_cannot_choose_a_secret_or_where_records_go(key: str) -> None:
    value = False if key == "redact" else "X"
    with pytest.raises(ConfigError, match="untrusted source"):
        LlmConfig.from_mapping({key: value}, trusted=False)


def test_trust_is_recorded_by_path_and_content(tmp_path: Path) -> None:
    config = tmp_path / "llmfix.yaml"
    config.write_text("schema: s.json\n", encoding="utf-8")
    before = is_trusted(config)
    digest = trust_file(config)
    trusted = is_trusted(config)
    config.write_text("schema: t.json\n", encoding="utf-8")
    assert (before, digest == file_digest(config), trusted, is_trusted(config)) == (
        False,
        False,
        True,
        False,
    )
    assert untrust_file(config) is True


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"LLMFIX_CONFIG_DIR": "/a/llmfix"}, "/a/llmfix"),
        ({"XDG_CONFIG_HOME": "/x"}, "/x/llmfix"),
        ({"XDG_CONFIG_HOME": "relative"}, "~/.config/llmfix"),
    ],
)
def test_the_user_config_directory(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], expected: str
) -> None:
    monkeypatch.delenv("LLMFIX_CONFIG_DIR")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert user_config_dir() == Path(expected).expanduser()


def test_llmfix_variables_are_the_users_own_settings(tmp_path: Path, server: LlmServer) -> None:
    """LLMFIX_LLM, LLMFIX_BASE_URL, LLMFIX_API_KEY_ENV beat an untrusted file's llm: keys."""
    clone = make_clone(tmp_path, server, "llmfix.yaml")
    with LlmServer() as own:
        own.enqueue(openai_reply(VALID))
        variables = {
            "LLMFIX_LLM": "1",
            "LLMFIX_BASE_URL": own.openai_base,
            "LLMFIX_API_KEY_ENV": "MY_CLOUD_SECRET",
        }
        done = repair(clone, "--no-cache", env=variables)
        [sent] = own.requests
    assert (done.returncode, server.requests, sent.headers["authorization"]) == (
        0,
        [],
        f"Bearer {CLOUD_SECRET}",
    )


# ------------------------------------------------------------------ files outside the clone


def test_an_untrusted_file_cannot_write_a_report_outside_its_directory(
    tmp_path: Path, server: LlmServer
) -> None:
    clone = make_clone(tmp_path, server, "llmfix.yaml")
    victim = tmp_path / "home" / ".bashrc"
    victim.parent.mkdir()
    victim.write_text("# mine\n", encoding="utf-8")
    clone.config.write_text(f"schema: person.json\noutput: {victim}\n", encoding="utf-8")
    done = clone.run("check", "ans.txt", "--no-progress")
    assert (victim.read_text(encoding="utf-8"), "output (outside" in done.stderr) == (
        "# mine\n",
        True,
    )


def test_an_untrusted_file_cannot_rewrite_files_outside_its_directory(
    tmp_path: Path, server: LlmServer
) -> None:
    clone = make_clone(tmp_path, server, "llmfix.yaml")
    outside = tmp_path / "elsewhere" / "data.json"
    outside.parent.mkdir()
    outside.write_text("{'a': 1,}", encoding="utf-8")
    (clone.root / "link.json").symlink_to(outside)
    clone.config.write_text(
        "in-place: true\npaths: [../elsewhere/data.json, link.json]\n"
        "checks:\n  - files: '../elsewhere/*.json'\n",
        encoding="utf-8",
    )
    done = clone.run("check", "--no-progress")
    note = [line for line in done.stderr.splitlines() if "not trusted" in line]
    assert (outside.read_text(encoding="utf-8"), len(note)) == ("{'a': 1,}", 1)
    assert ("paths outside" in note[0], "checks[0].files outside" in note[0]) == (True, True)


def test_the_user_config_allows_remote_refs_for_repair(tmp_path: Path, server: LlmServer) -> None:
    clone = make_clone(tmp_path, server, "llmfix.yaml")
    clone.config.write_text("schema: person.json\n", encoding="utf-8")
    schema = {**PERSON, "properties": {"age": {"$ref": f"{server.url}/defs.json#/$defs/age"}}}
    (clone.root / "person.json").write_text(json.dumps(schema), encoding="utf-8")
    write_user_config("allow-remote-refs: true\n")
    done = clone.run("repair", "ans.txt")
    assert (done.returncode, [r.path for r in server.requests]) == (1, ["/defs.json"])


def test_a_link_to_a_trusted_file_is_not_trusted(tmp_path: Path, server: LlmServer) -> None:
    """Another repository cannot borrow the trust of your own project's config."""
    clone = make_clone(tmp_path, server, "llmfix.yaml")
    mine = tmp_path / "mine" / "llmfix.yaml"
    mine.parent.mkdir()
    mine.write_text(hostile_yaml(server), encoding="utf-8")
    trust_file(mine)
    clone.config.unlink()
    clone.config.symlink_to(mine)
    done = repair(clone)
    clone.assert_nothing_sent(done)
