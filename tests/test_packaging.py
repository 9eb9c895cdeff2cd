"""The wheel's contents: every package under llmfix/ is listed in pyproject.toml, and the
bundled schemas ship from the top-level schemas/ folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from llmfix.schema.load import builtin_schemas, load_schema

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent


def _setuptools() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]  # type: ignore[no-any-return]


def test_every_package_is_listed() -> None:
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "llmfix").rglob("__init__.py")
    }
    listed = set(_setuptools()["packages"])  # type: ignore[arg-type]
    assert listed == found | {"llmfix.builtin_schemas"}


def test_bundled_schemas_come_from_the_top_level_folder() -> None:
    on_disk = {p.stem for p in (ROOT / "schemas").glob("*.json")}
    assert on_disk, "schemas/ holds the bundled schemas"
    assert set(builtin_schemas()) == on_disk
    assert not (ROOT / "llmfix" / "schemas").exists()
    for name in on_disk:
        assert load_schema(f"builtin:{name}").schema  # each one loads and is a valid schema


def test_the_wheel_ships_the_schemas_and_assets(tmp_path: Path) -> None:
    # pip builds the wheel as a user's install would (build isolation fetches setuptools
    # from the package registry, which CI can reach)
    # from a copy of what the wheel is made of, so the build leaves nothing in this tree
    source = tmp_path / "source"
    for part in ("llmfix", "schemas"):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("llmfix-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for schema in (ROOT / "schemas").glob("*.json"):
        assert f"llmfix/builtin_schemas/{schema.name}" in names
    assert "llmfix/py.typed" in names
    assert any(n.startswith("llmfix/reporters/") and n.endswith(".js") for n in names)
    assert not any(n.startswith(("tests/", "samples/", "bench/")) for n in names)
    # installed from the wheel (not from this tree), the builtins are found
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "-t", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    probe = "import llmfix.schema.load as s; print(s.__file__); print(sorted(s.builtin_schemas()))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    assert out[0].startswith(str(target))
    assert out[1] == repr(sorted(p.stem for p in (ROOT / "schemas").glob("*.json")))
