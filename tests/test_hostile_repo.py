"""Issue 27 (items 1-5, 14): a repository llmfix checks as a CI step cannot make it write or
read outside the checkout, write into ``.git``, or overwrite the run's own inputs.

Each test builds a real git repository (symbolic links committed as links), clones it, and
runs llmfix in the clone as a CI step would, with a fake home (``HOME``,
``LLMFIX_CONFIG_DIR``) holding sentinel files. Afterwards the home is as it was, byte for
byte and mode for mode, nothing in the clone's ``.git`` changed, and no secret from the home
appears in anything llmfix printed or wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

SECRET = "SECRET-TOKEN-7f3a"
HOOK = "#!/bin/sh\nexit 0\n"
Snapshot = dict[str, tuple[int, bytes]]


def snapshot(root: Path) -> Snapshot:
    """Every path under ``root`` (links not followed): its mode and its bytes (a link: its
    target)."""
    found: Snapshot = {}
    for directory, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                content = os.readlink(path).encode()
            elif stat.S_ISREG(info.st_mode):
                content = Path(path).read_bytes()
            else:
                content = b""
            found[os.path.relpath(path, root)] = (info.st_mode, content)
    return found


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home: a shell profile, secrets, the user config directory."""
    home = tmp_path / "home"
    secrets = home / "secrets"
    secrets.mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\n")
    (secrets / "token.json").write_text(json.dumps({"token": SECRET}))
    (secrets / "key.txt").write_text("{'key': '" + SECRET + "',}")  # a repair would rewrite it
    config = home / ".config" / "llmfix"
    config.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LLMFIX_CONFIG_DIR", str(config))
    for name in ("XDG_CONFIG_HOME", "LLMFIX_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return home


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


class Clone:
    """A clone of a hostile repository, and what must not change while llmfix runs in it."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        hook = root / ".git" / "hooks" / "pre-commit"  # installed by the user, as usual
        hook.write_text(HOOK)
        hook.chmod(0o755)
        self.home_before = snapshot(home)
        self.git_before = snapshot(root / ".git")
        self.printed: list[str] = []

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "llmfix", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        self.printed += [done.stdout, done.stderr]
        assert "Traceback" not in done.stderr
        return done

    def invoke(self, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
        """The same, in this process (what a usage error is decided on needs no CI run)."""
        from llmfix.cli import app

        monkeypatch.chdir(self.root)
        done = CliRunner().invoke(app, list(args))
        self.printed += [done.stdout, done.stderr]
        assert done.exception is None or isinstance(done.exception, SystemExit)
        return done

    def assert_sealed(self) -> None:
        """The home and .git as they were; no secret in any output, printed or written."""
        assert snapshot(self.home) == self.home_before
        assert snapshot(self.root / ".git") == self.git_before
        written = [
            content.decode(errors="replace")
            for path, (mode, content) in snapshot(self.root).items()
            if stat.S_ISREG(mode) and not path.startswith(".git")
        ]
        assert not [text for text in [*self.printed, *written] if SECRET in text]


def clone_of(
    tmp_path: Path, home: Path, files: dict[str, str], links: dict[str, str | Path]
) -> Clone:
    """A clone of a repository holding ``files`` and ``links`` (committed as links)."""
    origin = tmp_path / "origin"
    for name, text in files.items():
        (origin / name).parent.mkdir(parents=True, exist_ok=True)
        (origin / name).write_text(text)
    for name, target in links.items():
        (origin / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, origin / name)
    origin.mkdir(exist_ok=True)
    git(origin, "init", "-q")
    git(origin, "add", "-A")
    git(origin, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "hostile")
    root = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(root))
    for name in links:
        assert (root / name).is_symlink()
    return Clone(root, home)


# ---------------------------------------------------------------------- 1: the mirror


@pytest.mark.parametrize(
    ("config", "args"),
    [
        ("paths: [answers]\nwrite-fixed: fixed\n", ()),
        ("", ("answers", "--write-fixed", "fixed")),
    ],
    ids=["config", "flags"],
)
def test_write_fixed_writes_nothing_through_a_committed_link_out_of_the_mirror(
    tmp_path: Path, home: Path, config: str, args: tuple[str, ...]
) -> None:
    files = {
        "answers/h/.bashrc": "{'pwned': true,}",
        "answers/c/config.yaml": "{'llm': {'base-url': 'http://127.0.0.1:9'},}",
        "answers/ok.txt": "{'a': 1,}",
    }
    if config:
        files["llmfix.yaml"] = config
    links = {"fixed/answers/h": home, "fixed/answers/c": home / ".config" / "llmfix"}
    clone = clone_of(tmp_path, home, files, links)
    done = clone.run("check", *args, "--no-progress")
    clone.assert_sealed()
    warning = (
        "llmfix: warning: not writing fixed/answers/h/.bashrc: "
        "fixed/answers/h is a symbolic link that leads outside fixed"
    )
    assert (done.returncode, warning in done.stderr.splitlines()) == (0, True)
    assert (clone.root / "fixed" / "answers" / "ok.txt").read_text() == '{\n  "a": 1\n}\n'


def test_write_fixed_refuses_a_mirror_that_is_a_committed_link_out_of_the_tree(
    tmp_path: Path, home: Path
) -> None:
    clone = clone_of(tmp_path, home, {".bashrc": "{'pwned': true,}"}, {"fixed": home})
    done = clone.run("check", ".", "--write-fixed", "fixed", "--no-progress")
    clone.assert_sealed()
    assert done.returncode == 2
    assert "not writing into fixed: fixed is a symbolic link that leads outside" in done.stderr


def test_write_fixed_never_writes_a_copy_onto_an_input(tmp_path: Path, home: Path) -> None:
    clone = clone_of(tmp_path, home, {"answers/a.txt": "{'a': 1,}"}, {})
    done = clone.run("check", "answers", "--write-fixed", ".", "--no-progress")
    assert "it is an input of this run" in done.stderr
    assert (clone.root / "answers" / "a.txt").read_text() == "{'a': 1,}"


# ---------------------------------------------------------------------- 2: reading links


@pytest.mark.parametrize("extra", [(), ("--follow-symlinks",)], ids=["plain", "follow"])
def test_a_checks_glob_does_not_go_through_a_link_to_the_home(
    tmp_path: Path, home: Path, extra: tuple[str, ...]
) -> None:
    config = (
        "checks:\n  - files: 'link/*'\n  - files: 'answers/*'\n"
        "in-place: true\nformat: html\noutput: report.html\n"
    )
    files = {"llmfix.yaml": config, "answers/ok.txt": "{'a': 1,}"}
    clone = clone_of(tmp_path, home, files, {"link": home / "secrets"})
    done = clone.run("check", "--no-progress", *extra)
    clone.assert_sealed()
    assert (done.returncode, "skipped link" in done.stderr) == (0, True)
    assert "answers/ok.txt" in (clone.root / "report.html").read_text()


@pytest.mark.parametrize(
    ("config", "args"),
    [
        ("paths: [answers]\nin-place: true\nformat: json\noutput: report.json\n", ()),
        (
            "paths: [answers]\nin-place: true\nformat: json\noutput: report.json\n",
            ("--follow-symlinks",),
        ),
        ("", ("answers", "--in-place", "-f", "json", "-o", "report.json")),
    ],
    ids=["config", "config-follow", "flags"],
)
def test_a_walk_skips_links_out_of_the_tree_and_in_place_keeps_them(
    tmp_path: Path, home: Path, config: str, args: tuple[str, ...]
) -> None:
    files = {"answers/ok.txt": "{'a': 1,}", **({"llmfix.yaml": config} if config else {})}
    links = {"answers/key.txt": home / "secrets" / "key.txt", "answers/up": home / "secrets"}
    clone = clone_of(tmp_path, home, files, links)
    done = clone.run("check", *args, "--no-progress")
    clone.assert_sealed()
    assert (clone.root / "answers" / "key.txt").is_symlink()
    assert (clone.root / "answers" / "ok.txt").read_text() == '{\n  "a": 1\n}\n'
    assert "llmfix: warning: skipped answers/key.txt: " in done.stderr
    report = json.loads((clone.root / "report.json").read_text())
    assert [item["source"] for item in report["items"]] == ["answers/ok.txt"]


def test_follow_symlinks_checks_a_link_in_the_tree_and_rewrites_what_it_leads_to(
    tmp_path: Path, home: Path
) -> None:
    files = {"data/x.txt": "{'a': 1,}"}
    links = {"answers/x.txt": "../data/x.txt", "answers/loop": "."}
    clone = clone_of(tmp_path, home, files, links)
    done = clone.run("check", "answers", "--follow-symlinks", "--in-place", "--no-progress")
    clone.assert_sealed()
    assert (done.returncode, (clone.root / "answers" / "x.txt").is_symlink()) == (0, True)
    assert (clone.root / "data" / "x.txt").read_text() == '{\n  "a": 1\n}\n'


# ------------------------------------------------- 2: a file swapped for a link once listed


def swap_for_link(path: Path, target: Path) -> None:
    """``path`` (a file, or a folder and what it holds) replaced by a link to ``target``."""
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    os.symlink(target, path)


def swapped_after_listing(monkeypatch: pytest.MonkeyPatch, swaps: dict[Path, Path]) -> None:
    """Discovery lists the files as they are, then ``swaps`` (path -> target) happen: the
    race between the walk and the read, won by the attacker every time."""
    import llmfix.inputs
    import llmfix.run.check
    import llmfix.run.globs

    listing = llmfix.inputs.discover_files

    def racing(*args: Any, **kwargs: Any) -> Any:
        found = list(listing(*args, **kwargs))
        for path, target in swaps.items():
            if not path.is_symlink():
                swap_for_link(path, target)
        return iter(found)

    # the check run and the checks' globs call it by the name they imported
    for module in (llmfix.inputs, llmfix.run.check, llmfix.run.globs):
        monkeypatch.setattr(module, "discover_files", racing)


RACED = {  # in the clone -> what it becomes a link to, in the home
    "answers/b.txt": "secrets/key.txt",
    "answers/c.json": "secrets/token.json",
    "answers/d.jsonl": "secrets/lines.jsonl",
    "answers/sub": "secrets",  # a folder on the path of sub/key.txt and sub/token.json
}


@pytest.mark.parametrize(
    ("config", "args"),
    [
        ("", ("answers",)),
        ("", ("answers", "--write-fixed", "fixed")),
        ("", ("answers", "--in-place")),
        ("paths: [answers]\n", ()),
        ("checks:\n  - files: 'answers/**'\n", ()),
    ],
    ids=["walk", "write-fixed", "in-place", "config-paths", "config-checks"],
)
def test_a_walked_file_swapped_for_a_link_after_the_listing_is_not_read(
    tmp_path: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: str,
    args: tuple[str, ...],
) -> None:
    (home / "secrets" / "lines.jsonl").write_text(json.dumps({"token": SECRET}) + "\n")
    files = {
        "answers/ok.txt": "{'a': 1,}",
        "answers/b.txt": "{'b': 1,}",
        "answers/c.json": '{"c": 1}',
        "answers/d.jsonl": '{"d": 1}\n',
        "answers/sub/key.txt": "{'k': 1,}",
        "answers/sub/token.json": '{"t": 1}',
        **({"llmfix.yaml": config} if config else {}),
    }
    clone = clone_of(tmp_path, home, files, {})
    swapped_after_listing(monkeypatch, {clone.root / k: home / v for k, v in RACED.items()})
    done = clone.invoke(monkeypatch, "check", *args, "-f", "json", "-o", "r.json", "--no-progress")
    clone.assert_sealed()
    report = json.loads((clone.root / "r.json").read_text())
    status = {item["source"]: item["status"] for item in report["items"]}
    raced = ["b.txt", "c.json", "d.jsonl", "sub/key.txt", "sub/token.json"]
    assert status == {"answers/ok.txt": "repaired", **{f"answers/{n}": "error" for n in raced}}
    text = json.dumps(report)
    assert "became a symbolic link after it was listed" in text  # b.txt, c.json, d.jsonl
    assert "since it was listed" in text  # sub/: a folder on the path became a link
    assert done.exit_code == 1


def test_a_walked_parquet_file_swapped_for_a_link_is_not_read(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    clone = clone_of(tmp_path, home, {"answers/ok.txt": "{}"}, {})
    pq.write_table(pa.table({"text": ['{"a": 1}']}), clone.root / "answers" / "p.parquet")
    pq.write_table(pa.table({"text": [json.dumps({"token": SECRET})]}), home / "s.parquet")
    clone.home_before = snapshot(home)
    swapped_after_listing(monkeypatch, {clone.root / "answers" / "p.parquet": home / "s.parquet"})
    args = ("answers", "--field", "text", "-f", "json", "-o", "r.json", "--no-progress")
    done = clone.invoke(monkeypatch, "check", *args)
    clone.assert_sealed()
    report = json.loads((clone.root / "r.json").read_text())
    status = {item["source"]: item["status"] for item in report["items"]}
    assert (done.exit_code, status["answers/p.parquet"]) == (1, "error")
    assert "became a symbolic link after it was listed" in json.dumps(report)


def test_an_untrusted_configs_file_swapped_for_a_link_out_of_its_folder_is_not_read(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"llmfix.yaml": "paths: [a.json, ok.txt]\n", "a.json": '{"a": 1}', "ok.txt": "{}"}
    clone = clone_of(tmp_path, home, files, {})
    swapped_after_listing(monkeypatch, {clone.root / "a.json": home / "secrets" / "token.json"})
    done = clone.invoke(monkeypatch, "check", "-f", "json", "-o", "r.json", "--no-progress")
    clone.assert_sealed()
    report = json.loads((clone.root / "r.json").read_text())
    status = {item["source"]: item["status"] for item in report["items"]}
    assert (done.exit_code, status) == (1, {"a.json": "error", "ok.txt": "valid"})
    assert "leads outside the current folder since it was listed" in json.dumps(report)


@pytest.mark.parametrize("mode", ["--write-fixed", "--in-place"])
def test_an_input_swapped_for_a_link_before_it_is_written_back_is_neither_copied_nor_followed(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    from llmfix.batch.writers import FixWriter

    (home / "secrets" / "lines.jsonl").write_text(json.dumps({"token": SECRET}) + "\n")
    files = {
        "answers/a.json": '{"a": 1}',  # copied as it is into the mirror
        "answers/b.txt": "{'b': 1,}",  # repaired: rewritten in place
        "answers/d.jsonl": '{"d": 1}\n{"e": 1,}\n',  # one line copied, one repaired
        "answers/z.txt": "{'z': 1,}",
    }
    clone = clone_of(tmp_path, home, files, {})
    swaps = {"a.json": "token.json", "b.txt": "key.txt", "d.jsonl": "lines.jsonl"}
    write = FixWriter._write

    def racing(self: FixWriter, source: str, fixes: Any) -> None:
        # The check read the file; it becomes a link before the writer reads it again.
        name = os.path.basename(source)
        if name in swaps:
            swap_for_link(clone.root / source, home / "secrets" / swaps[name])
        write(self, source, fixes)

    monkeypatch.setattr(FixWriter, "_write", racing)
    args = ("--write-fixed", "fixed") if mode == "--write-fixed" else ("--in-place",)
    done = clone.invoke(monkeypatch, "check", "answers", *args, "--no-progress")
    clone.assert_sealed()
    assert "became a symbolic link after it was listed" in done.stderr
    fixed = clone.root / "fixed" if mode == "--write-fixed" else clone.root
    assert (fixed / "answers" / "z.txt").read_text() == '{\n  "z": 1\n}\n'
    assert not (clone.root / "fixed" / "answers" / "a.json").exists()


def test_a_folder_swapped_for_a_link_before_an_in_place_write_is_not_followed(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last window of the race: the input was read again where it was listed, and then
    its folder becomes a link to the home before the repaired copy is written. The copy is
    written through folders opened from the walk's root without following links, so it is
    refused, not written into the home."""
    from llmfix.batch.writers import FixWriter

    clone = clone_of(tmp_path, home, {"answers/sub/b.txt": "{'b': 1,}"}, {})
    sink = FixWriter._sink

    def racing(self: FixWriter, target: Path, *args: Any) -> Any:
        folder = clone.root / "answers" / "sub"
        if not folder.is_symlink():
            folder.rename(clone.root / "answers" / "moved")
            folder.symlink_to(home / "secrets")
        return sink(self, target, *args)

    monkeypatch.setattr(FixWriter, "_sink", racing)
    done = clone.invoke(monkeypatch, "check", "answers", "--in-place", "--no-progress")
    clone.assert_sealed()
    assert not (home / "secrets" / "b.txt").exists()
    assert "answers/sub is a symbolic link that leads outside" in done.stderr


# ---------------------------------------------------------------------- 3: .git


@pytest.mark.parametrize(
    ("config", "args", "code"),
    [
        ("output: .git/hooks/pre-commit\nformat: github\n", (), 0),
        ("output: .git/config\nformat: github\n", (), 0),
        ("output: out/pre-commit\nformat: github\n", (), 0),  # out -> .git/hooks
        ("output: .git/hooks/pre-commit\nformat: github\n", ("--trust-config",), 2),
        ("", ("-f", "github", "-o", ".git/hooks/pre-commit"), 2),
        ("", ("-f", "github", "-o", "out/pre-commit"), 2),
        ("", ("--report", ".git/hooks/pre-commit.sarif"), 2),
        ("", ("--write-fixed", ".git/fixed"), 2),
    ],
)
def test_nothing_is_written_into_git(
    tmp_path: Path,
    home: Path,
    config: str,
    args: tuple[str, ...],
    code: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {";touch PWNED;#x.txt": "{'a': 1,}", **({"llmfix.yaml": config} if config else {})}
    clone = clone_of(tmp_path, home, files, {"out": ".git/hooks"})
    command = ("check", ";touch PWNED;#x.txt", "--no-progress", *args)
    if code == 2:  # a usage error, decided before any input is read: no CI run needed
        refused = clone.invoke(monkeypatch, *command)
        clone.assert_sealed()
        assert refused.exit_code == 2
        assert "is a version-control directory" in refused.stderr
    else:
        done = clone.run(*command)
        clone.assert_sealed()
        assert done.returncode == 0
        assert "not trusted, so its output (outside" in done.stderr


@pytest.mark.parametrize("command", ["repair", "check"])
def test_a_replaced_output_loses_its_executable_bits_and_an_input_in_place_keeps_them(
    tmp_path: Path, home: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = clone_of(tmp_path, home, {"a.txt": "{'a': 1,}", "b.txt": "{'b': 1,}"}, {})
    (clone.root / "hook.sh").write_text(HOOK)
    (clone.root / "hook.sh").chmod(0o755)
    (clone.root / "b.txt").chmod(0o755)
    extra = ("-f", "github", "--no-progress") if command == "check" else ()
    clone.invoke(monkeypatch, command, "a.txt", "-o", "hook.sh", *extra)
    clone.invoke(monkeypatch, command, "b.txt", "--in-place", *(extra[2:]))
    modes = [stat.S_IMODE((clone.root / n).stat().st_mode) for n in ("hook.sh", "b.txt")]
    assert ((clone.root / "hook.sh").read_text() != HOOK, modes) == (True, [0o644, 0o755])


# ---------------------------------------------------------------------- 4: outputs, inputs


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        (("repair", "c.json", "--report", "c.json"), "c.json"),
        (("repair", "e.txt", "--patch", "e.txt"), "e.txt"),
        (("repair", "c.json", "-o", "c.json"), "c.json"),
        (("repair", "c.json", "-o", "out.json", "--report", "out.json"), "c.json"),
        (("check", "d", "-f", "json", "-o", "d/a1.json", "--no-progress"), "d/a1.json"),
        (("check", "d", "-f", "json", "-o", "r.json", "--report", "r.json"), "d/a1.json"),
        (("check", "d", "-s", "s.json", "-f", "json", "-o", "s.json"), "s.json"),
    ],
)
def test_an_output_onto_an_input_or_another_output_is_a_usage_error(
    tmp_path: Path, home: Path, args: tuple[str, ...], kept: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"c.json": "{'c': 1,}", "e.txt": "{'e': 1,}", "d/a1.json": "{'a': 1,}"}
    files["s.json"] = '{"type": "object"}'
    clone = clone_of(tmp_path, home, files, {})
    done = clone.invoke(monkeypatch, *args)
    clone.assert_sealed()
    assert (done.exit_code, (clone.root / kept).read_text()) == (2, files[kept])
    assert "is also" in done.stderr
    assert not (clone.root / "out.json").exists()
    assert not (clone.root / "r.json").exists()


@pytest.mark.parametrize("where", ["absolute", "parent"])
def test_an_untrusted_schema_outside_the_tree_is_not_read(
    tmp_path: Path, home: Path, where: str
) -> None:
    demanding = tmp_path / "outside" / "schema.json"  # would fail every answer
    demanding.parent.mkdir()
    demanding.write_text(json.dumps({"type": "object", "required": ["zzz"]}))
    schema = str(home / "secrets" / "token.json") if where == "absolute" else "../outside/s.json"
    if where == "parent":
        demanding.rename(demanding.with_name("s.json"))
    files = {"llmfix.yaml": f"schema: {schema}\n", "a.txt": '{"a": 1}'}
    clone = clone_of(tmp_path, home, files, {})
    done = clone.run("check", "a.txt", "--no-progress")
    clone.assert_sealed()
    assert (done.returncode, "its schema (outside" in done.stderr) == (0, True)


# ---------------------------------------------------------------------- 5: the trust race


def test_trust_is_decided_on_the_bytes_that_were_parsed(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is swapped back to its trusted text just after the hostile text was
    parsed (what a loop of ``mv`` did): the run must not call the hostile text trusted."""
    import llmfix.run.config_file as configfile
    from llmfix.run.trust import trust_file

    config = tmp_path / "llmfix.yaml"
    trusted_text = "fail-on: repaired\n"
    hostile_text = "fail-on: repaired\nllm: {base-url: 'http://127.0.0.1:9/v1'}\n"
    config.write_text(trusted_text)
    trust_file(config)
    config.write_text(hostile_text)
    parse = configfile.read_config

    def parse_then_swap(path: Path, *rest: Any) -> dict[str, Any]:
        values = parse(path, *rest)
        config.write_text(trusted_text)
        return values

    monkeypatch.setattr(configfile, "read_config", parse_then_swap)
    settings = configfile.load_settings({}, config=str(config))
    assert (settings.trusted, dict(settings.llm)) == (False, {})


# ---------------------------------------------------------------------- 14: unlistable folders


@pytest.fixture
def locked_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``d/locked`` cannot be listed (as a folder without read permission, even as root)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d" / "locked").mkdir(parents=True)
    (tmp_path / "d" / "ok.txt").write_text('{"a": 1}')
    (tmp_path / "d" / "locked" / "bad.txt").write_text("{'a': 1,}")
    scandir = os.scandir

    def refusing(path: Any = ".") -> Any:
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    return tmp_path


def test_a_folder_that_cannot_be_listed_is_an_error_item_not_a_pass(locked_folder: Path) -> None:
    from llmfix.cli import app

    done = CliRunner().invoke(app, ["check", "d", "-f", "json", "-o", "r.json", "--no-progress"])
    report = json.loads((locked_folder / "r.json").read_text())
    locked = [i for i in report["items"] if i["source"] == os.path.join("d", "locked")]
    assert (done.exit_code, len(locked), locked[0]["status"]) == (1, 1, "error")
    assert "cannot list the folder" in json.dumps(locked[0])


# ---------------------------------------------------------------------- all of issue 27 at once


def _capped() -> None:
    """The CI step's own limits: 2 GB of address space (a runaway repair fails, not the box)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _allof_fan(levels: int, fan: int) -> dict[str, Any]:
    defs: dict[str, Any] = {"l0": {"type": "string", "pattern": "^(a+)+$"}}
    for level in range(1, levels):
        defs[f"l{level}"] = {"allOf": [{"$ref": f"#/$defs/l{level - 1}"}] * fan}
    return {"$defs": defs, "allOf": [{"$ref": f"#/$defs/l{levels - 1}"}] * fan}


def test_a_repository_holding_every_trap_at_once_is_checked_sealed_and_bounded(
    tmp_path: Path, home: Path, server: Any
) -> None:
    """A CI step (`llmfix check` with the repository's own config) on a repository that holds
    each trap of issue 27 together: links out of the tree to read and to write through, a
    hostile schema (catastrophic pattern, allOf x $ref blow-up), limits loosened without
    bound, an LLM section naming a secret and a local server, a 3,000-deep answer, control
    sequences in names and keys, a FIFO. It ends within its timeout and memory cap, with no
    traceback, no request to the server, the home and .git unchanged, no secret printed or
    written, and no raw control character on stdout or stderr."""
    config = {
        "paths": ["answers"],
        "schema": "answer.schema.json",
        "write-fixed": "fixed",
        "output": "report.json",
        "format": "json",
        "jobs": 48,
        "timeout": 1e9,
        "options": {"max-depth": 100000},
        "allow-remote-refs": True,
        "llm": {
            "provider": "openai",
            "model": "x",
            "base-url": server.openai_base,
            "api-key-env": "MY_SECRET",
            "max-calls": 100,
            "max-attempts": 50,
        },
    }
    evil = "evil\x1b]0;owned\x07\u202e::error file=x,line=1::INJECTED"
    files = {
        "llmfix.yaml": json.dumps(config),  # YAML reads JSON
        "answer.schema.json": json.dumps(_allof_fan(9, 9)),
        "answers/deep.txt": "[" * 3000 + "1" + "]" * 3000,
        "answers/pattern.json": json.dumps("a" * 40 + "!"),
        "answers/cut.json": '{"a": "aaa',
        f"answers/{evil}.json": json.dumps({evil: "a"}) + ",",
        "answers/h/.bashrc": "pwned\n",
    }
    links = {"answers/secrets": home / "secrets", "fixed/answers/h": home}
    clone = clone_of(tmp_path, home, files, links)
    os.mkfifo(clone.root / "answers" / "pipe.txt")
    env = {**os.environ, "MY_SECRET": SECRET, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "llmfix", "check", "--no-progress"],
        cwd=clone.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        preexec_fn=_capped,
    )
    clone.printed += [done.stdout, done.stderr]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 1, done.stderr
    assert server.paths == []
    clone.assert_sealed()
    for text in (done.stdout, done.stderr):
        assert not [c for c in text if (ord(c) < 32 and c not in "\t\n") or c == "\u202e"]
    report = json.loads((clone.root / "report.json").read_text())
    statuses = {Path(item["source"]).name: item["status"] for item in report["items"]}
    assert statuses["pipe.txt"] == "error"
    assert statuses["cut.json"] == "truncated"
    assert "secrets" not in json.dumps(report["items"])
    assert "ignored" in done.stderr  # the untrusted file's keys named, once
