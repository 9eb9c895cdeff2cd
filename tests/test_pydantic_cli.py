"""``--schema module:Model`` and ``--schema path/to/file.py:Model`` on the command line, and
the trust rule: loading a Python type runs its module's code, so an untrusted project file
(a checked-out repository's ``llmfix.yaml``) cannot name one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

MODELS = """
from pydantic import BaseModel, field_validator

MARK = __import__("pathlib").Path("imported.mark")
MARK.write_text("the module ran")


class Person(BaseModel):
    name: str
    age: int

    @field_validator("name")
    @classmethod
    def capitalised(cls, value: str) -> str:
        if not value[:1].isupper():
            raise ValueError("a name starts with a capital letter")
        return value


NOT_A_MODEL = 3
"""


def llmfix(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as users run it, in ``cwd`` (no user config, no trust from outside)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LLMFIX_CONFIG_DIR": str(cwd / ".user-config"),
        "NO_COLOR": "1",
    }
    env.pop("LLMFIX_TRUST_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "llmfix", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "models.py").write_text(MODELS)
    (tmp_path / "good.txt").write_text('Here you go: {"name": "Ada", "age": "36",}')
    (tmp_path / "bad.txt").write_text('{"name": "ada", "age": 3}')
    return tmp_path


@pytest.mark.parametrize("ref", ["app.models:Person", "app/models.py:Person"])
def test_repair_with_a_model(project: Path, ref: str) -> None:
    done = llmfix(project, "repair", "--schema", ref, "good.txt")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}


def test_the_models_own_validation_fails_the_check(project: Path) -> None:
    done = llmfix(project, "check", "-q", "-f", "json", "--schema", "app.models:Person", "bad.txt")
    assert done.returncode == 1
    report: Any = json.loads(done.stdout)
    [item] = report["items"]
    assert item["status"] == "invalid"
    [error] = item["diagnostics"]
    assert error["code"] == "schema.pydantic"
    assert error["pointer"] == "/name"
    assert (error["line"], error["column"]) == (1, 10)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("app.models:Nobody", "schema app.models:Nobody: app.models has no attribute Nobody"),
        ("nowhere.models:Person", "schema nowhere.models:Person: no module named nowhere"),
        ("app/missing.py:Person", "schema app/missing.py:Person: no such file: app/missing.py"),
        (
            "app.models:NOT_A_MODEL",
            "schema app.models:NOT_A_MODEL: NOT_A_MODEL is not a Pydantic model, TypeAdapter, "
            "dataclass or TypedDict",
        ),
    ],
)
def test_a_bad_reference_is_one_line(project: Path, ref: str, message: str) -> None:
    done = llmfix(project, "repair", "--schema", ref, "good.txt")
    assert done.returncode == 2
    assert done.stderr == f"llmfix: error: {message}\n"


def test_a_module_that_fails_to_import_is_one_line(project: Path) -> None:
    (project / "broken.py").write_text("raise RuntimeError('no database here')\n")
    done = llmfix(project, "repair", "--schema", "broken.py:Model", "good.txt")
    assert done.returncode == 2
    assert done.stderr == (
        "llmfix: error: schema broken.py:Model: importing broken.py failed: "
        "RuntimeError: no database here\n"
    )


def test_an_untrusted_project_file_cannot_name_a_python_type(project: Path) -> None:
    (project / "llmfix.yaml").write_text("schema: app/models.py:Person\n")
    done = llmfix(project, "check", "-q", "-f", "json", "bad.txt")
    assert not (project / "imported.mark").exists()  # the module never ran
    assert "schema (a Python type: loading it runs code) was ignored" in done.stderr
    assert json.loads(done.stdout)["items"][0]["status"] == "valid"  # no schema applied


def test_a_trusted_project_file_can(project: Path) -> None:
    (project / "llmfix.yaml").write_text("schema: app/models.py:Person\n")
    done = llmfix(project, "check", "--trust-config", "-q", "-f", "json", "bad.txt")
    assert (project / "imported.mark").exists()
    assert done.returncode == 1
    assert json.loads(done.stdout)["items"][0]["diagnostics"][0]["code"] == "schema.pydantic"


def test_a_file_whose_name_has_a_colon_is_still_a_file(project: Path) -> None:
    (project / "odd:name.json").write_text('{"type": "object", "required": ["id"]}')
    done = llmfix(project, "check", "-q", "-f", "json", "--schema", "odd:name.json", "bad.txt")
    assert json.loads(done.stdout)["items"][0]["status"] == "invalid"


def test_a_worker_process_loads_the_model_again(project: Path) -> None:
    # a file's module exists only in the process that loaded it: a validator pickled for a
    # process pool's worker (under spawn, say) is rebuilt there from its reference
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    made = (
        "import pickle, sys\n"
        "from llmfix.schema.pydantic_models import validator_for_ref\n"
        "sys.stdout.buffer.write(pickle.dumps(validator_for_ref('app/models.py:Person')))\n"
    )
    used = (
        "import pickle, sys\n"
        "validator = pickle.loads(sys.stdin.buffer.read())\n"
        "print(validator.is_valid({'name': 'Ada', 'age': 1}))\n"
        "print(validator.is_valid({'name': 'ada', 'age': 1}))\n"
    )
    run = {"cwd": project, "env": env, "capture_output": True, "check": True, "timeout": 120}
    pickled = subprocess.run([sys.executable, "-c", made], **run).stdout  # type: ignore[call-overload]
    out = subprocess.run([sys.executable, "-c", used], input=pickled, **run).stdout  # type: ignore[call-overload]
    assert out.split() == [b"True", b"False"]
