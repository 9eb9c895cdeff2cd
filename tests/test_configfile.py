"""Config files: found upward, checked strictly, merged under the flags."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmfix.errors import ConfigError
from llmfix.run.config_file import find_config, load_settings, read_config
from llmfix.run.globs import rule_files, rule_for


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LLMFIX_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_llmfix_yaml_is_found_upward(project: Path) -> None:
    config = write(project / "llmfix.yaml", "fail-on: repaired\n")
    (project / "a" / "b").mkdir(parents=True)
    assert find_config(project / "a" / "b") == config


def test_pyproject_tool_table_is_found(project: Path) -> None:
    config = write(project / "pyproject.toml", '[tool.llmfix]\nfail-on = "repaired"\n')
    assert read_config(config)["fail_on"] == "repaired"


def test_a_pyproject_without_the_table_is_passed_over(project: Path) -> None:
    outer = write(project / "llmfix.yaml", "jobs: 1\n")
    write(project / "sub" / "pyproject.toml", "[tool.black]\nline-length = 100\n")
    assert find_config(project / "sub") == outer


def test_llmfix_yaml_wins_over_pyproject_in_the_same_directory(project: Path) -> None:
    write(project / "pyproject.toml", "[tool.llmfix]\njobs = 2\n")
    config = write(project / "llmfix.yaml", "jobs: 1\n")
    assert find_config(project) == config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fail_onn: repaired\n", "unknown key 'fail-onn' (did you mean 'fail-on'?)"),
        ("format: pdf\n", "format must be one of: text, json"),
        ("jobs: many\n", "jobs must be a whole number"),
        ("options: {pik: best}\n", "unknown option 'pik' (did you mean 'pick'?)"),
        ("checks: [{schema: s.json}]\n", "a rule needs 'files'"),
        ("checks: [{files: '*.txt', scheme: s.json}]\n", "(did you mean 'schema'?)"),
        ("- just a list\n", "must be a mapping"),
        ("a: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_config_is_one_clear_error(project: Path, text: str, message: str) -> None:
    config = write(project / "llmfix.yaml", text)
    with pytest.raises(ConfigError) as caught:
        read_config(config)
    assert message in str(caught.value)


def test_a_bad_toml_file_is_a_config_error(project: Path) -> None:
    config = write(project / "pyproject.toml", "[tool.llmfix]\njobs = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_config(config)


def test_flags_beat_the_file(project: Path) -> None:
    # jobs: 1, as an untrusted file may not ask for more workers than there are CPUs
    write(project / "llmfix.yaml", "fail-on: repaired\njobs: 1\n")
    settings = load_settings({"fail_on": "extracted", "jobs": None})
    assert (settings.fail_on, settings.jobs) == ("extracted", 1)


def test_defaults_fill_what_neither_gives(project: Path) -> None:
    settings = load_settings({}, use_config=False)
    assert (settings.format, settings.fail_on, settings.messages) == ("text", "invalid", "last")


def test_paths_in_the_file_are_relative_to_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project / "cfg" / "llmfix.yaml", "schema: schemas/a.json\n")
    (project / "work").mkdir()
    monkeypatch.chdir(project / "work")
    settings = load_settings({}, config=str(project / "cfg" / "llmfix.yaml"))
    assert Path(settings.schema or "").resolve() == project / "cfg" / "schemas" / "a.json"


def test_builtin_schemas_are_not_paths(project: Path) -> None:
    write(project / "llmfix.yaml", "schema: builtin:tool-call\n")
    assert load_settings({}).schema == "builtin:tool-call"


def test_a_named_config_that_does_not_exist_is_an_error(project: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_settings({}, config="missing.yaml")


def test_the_environment_can_name_the_config(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(project / "ci" / "llmfix-ci.yaml", "format: github\n")
    monkeypatch.setenv("LLMFIX_CONFIG", str(config))
    assert load_settings({}).format == "github"


RULES = """\
schema: schemas/default.json
field: text
checks:
  - files: "evals/goals/*.jsonl"
    field: output
    schema: schemas/goals.json
  - files: ["*.md", "logs/**/*.jsonl"]
    messages: all
    options: {max_risk: safe}
"""


@pytest.fixture
def ruled(project: Path) -> Path:
    write(project / "llmfix.yaml", RULES)
    for name in ("evals/goals/a.jsonl", "evals/other.jsonl", "notes/x.md", "logs/1/y.jsonl"):
        write(project / name, "{}\n")
    return project


def test_the_first_matching_rule_applies(ruled: Path) -> None:
    settings = load_settings({})
    assert [
        rule_for(settings, p) for p in ("evals/goals/a.jsonl", "notes/x.md", "evals/other.jsonl")
    ] == [0, 1, None]


def test_a_rule_overrides_the_top_level(ruled: Path) -> None:
    settings = load_settings({})
    rule = settings.checks[0]
    assert (settings.ruled(rule).field, settings.ruled(rule).schema) == (
        "output",
        "schemas/goals.json",
    )


def test_a_rule_inherits_what_it_leaves_out(ruled: Path) -> None:
    settings = load_settings({})
    assert settings.ruled(settings.checks[1]).field == "text"


def test_a_flag_beats_a_rule(ruled: Path) -> None:
    settings = load_settings({"field": "answer"})
    assert settings.ruled(settings.checks[0]).field == "answer"


def test_rule_options_merge_under_flag_options(ruled: Path) -> None:
    settings = load_settings({"options": {"schema_repair": False}})
    assert settings.ruled(settings.checks[1]).options == {
        "max_risk": "safe",
        "schema_repair": False,
    }


def test_rule_files_lists_what_the_globs_match(ruled: Path) -> None:
    files = [Path(p).as_posix() for p in rule_files(load_settings({}))]
    assert files == ["evals/goals/a.jsonl", "notes/x.md", "logs/1/y.jsonl"]


def test_settings_show_with_dashed_keys(ruled: Path) -> None:
    shown = load_settings({}).to_dict()
    assert (shown["fail-on"], shown["checks"][0]["files"], shown["config"]) == (
        "invalid",
        ["evals/goals/*.jsonl"],
        "llmfix.yaml",
    )


def _llmfix(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("llmfix")), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_config_shows_the_merged_settings_as_json(ruled: Path) -> None:
    import json

    done = _llmfix(ruled, "config", "--format", "json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["config"] == "llmfix.yaml"
    assert shown["checks"][0]["files"] == ["evals/goals/*.jsonl"]


def test_config_format_is_checked_by_the_parser(ruled: Path) -> None:
    done = _llmfix(ruled, "config", "--format", "xml")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "llmfix: error: --format must be yaml or json, not 'xml' (see `llmfix config --help`)\n"
    )


# ------------------------------------------------------------------ `repair` reads the config too


def _repair(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LLMFIX_CONFIG"}
    return subprocess.run(
        [str(Path(sys.executable).with_name("llmfix")), "repair", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def two_schemas(project: Path) -> Path:
    write(project / "schemas" / "person.json", '{"type": "object", "required": ["age"]}')
    write(project / "schemas" / "goal.json", '{"type": "object", "required": ["goal"]}')
    write(
        project / "llmfix.yaml",
        "schema: schemas/person.json\nchecks:\n  - files: 'evals/*.txt'\n"
        "    schema: schemas/goal.json\n",
    )
    write(project / "a.txt", '{"name": "Ada"}')
    write(project / "evals" / "b.txt", '{"name": "Ada"}')
    return project


def test_repair_applies_the_configs_schema_and_checks_like_check(two_schemas: Path) -> None:
    done = _repair(two_schemas, "a.txt", "evals/b.txt")
    missing = [line.split('"')[-2] for line in done.stderr.splitlines() if "missing" in line]
    assert (done.returncode, missing) == (1, ["age", "goal"])


def test_repair_with_a_schema_flag_ignores_the_configs_schemas(two_schemas: Path) -> None:
    write(two_schemas / "any.json", '{"type": "object"}')
    done = _repair(two_schemas, "a.txt", "evals/b.txt", "--schema", "any.json")
    assert (done.returncode, "missing" in done.stderr) == (0, False)


# ------------------------------------------------------------------ trust


HOSTILE = (
    "schema: s.json\nallow-remote-refs: true\n"
    "checks:\n  - files: '*.txt'\n    options: {allow_remote_refs: true}\n"
    "llm:\n  model: m\n  max-attempts: 1\n  base-url: http://evil/v1\n  api-key-env: CLOUD\n"
)


def test_an_untrusted_file_keeps_its_schema_but_not_its_network_keys(project: Path) -> None:
    write(project / "llmfix.yaml", HOSTILE)
    settings = load_settings({})
    options = [settings.options, settings.checks[0].options]
    assert (settings.schema, settings.llm, settings.llm_enabled, options) == (
        "s.json",
        {"model": "m", "max_attempts": 1},  # a limit it tightens (it may not loosen one)
        False,
        [{}, {}],
    )
    assert settings.ignored == (
        "allow-remote-refs",
        "checks[0].options.allow-remote-refs",
        "llm (turning LLM repair on)",
        "llm.base-url",
        "llm.api-key-env",
    )


def test_a_trusted_file_keeps_everything(project: Path) -> None:
    write(project / "llmfix.yaml", HOSTILE)
    settings = load_settings({}, trust=True)
    assert (settings.llm["base_url"], settings.llm_enabled, settings.ignored) == (
        "http://evil/v1",
        True,
        (),
    )


def test_the_user_configs_llm_settings_come_under_the_projects(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = project / "user"
    monkeypatch.setenv("LLMFIX_CONFIG_DIR", str(user))
    write(user / "config.yaml", "llm:\n  model: mine\n  base-url: http://localhost:1/v1\n")
    write(project / "llmfix.yaml", HOSTILE)
    settings = load_settings({})
    assert (settings.llm["model"], settings.llm["base_url"], settings.llm_enabled) == (
        "m",
        "http://localhost:1/v1",
        True,
    )


def test_a_user_config_that_allows_remote_refs_is_honoured(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLMFIX_CONFIG_DIR", str(project / "user"))
    write(project / "user" / "config.yaml", "allow-remote-refs: true\n")
    assert load_settings({}).options == {"allow_remote_refs": True}
