"""A warm ``llmfix`` for the docs' example runner: each command forks a process that has
llmfix imported already, instead of starting Python and importing it again.

The docs run some fifty ``llmfix`` commands; starting each one (the interpreter, Typer, the
pipeline, jsonschema) costs more than the work most of them do. :func:`start` runs a server
that imports llmfix once, and writes a launcher script named ``llmfix`` for the examples'
PATH. Bash runs the command line as written — pipes, redirections, ``$?`` — and the
launcher hands its argv, working folder, environment and its stdin, stdout and stderr (the
descriptors themselves, over a Unix socket) to the server, which forks; the child runs
``llmfix.cli.main`` on them, as the console script would, and the launcher exits with its
exit code. The server itself never runs a command, so nothing one command does is seen by
the next. When the server cannot be reached, the launcher runs the real ``llmfix``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

# Modules a command would import, loaded once in the server (anything else loads in the
# child, as in a real run).
PRELOAD = (
    "llmfix.cli",
    "llmfix.cli.check",
    "llmfix.cli.repair",
    "llmfix.cli.inspect",
    "llmfix.cli.explain",
    "llmfix.cli.config",
    "llmfix.pipeline.core",
    "llmfix.run",
    "llmfix.reporters.text",
    "jsonschema",
)

LAUNCHER = """\
import json, os, socket, sys
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect({address!r})
except OSError:
    os.execv({real!r}, [{real!r}, *sys.argv[1:]])
body = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(s, [b"%d\\n" % len(body)], [0, 1, 2])
s.sendall(body)
answer = b""
while chunk := s.recv(64):
    answer += chunk
sys.exit(int(answer) if answer.strip() else 1)
"""


def start(where: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
    """Start a server in ``where`` with ``env``; the server and the folder to put first on
    PATH (it holds the launcher)."""
    address = where / "llmfix.sock"
    bindir = where / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    real = str(Path(sys.executable).with_name("llmfix"))
    launcher = bindir / "llmfix"
    launcher.write_text(
        f"#!{sys.executable} -IS\n" + LAUNCHER.format(address=str(address), real=real),
        encoding="utf-8",
    )
    launcher.chmod(0o755)
    ready_r, ready_w = os.pipe()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.docs_forkserver", str(address), str(ready_w)],
        env=env,
        cwd=where,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        pass_fds=(ready_w,),
    )
    os.close(ready_w)
    with os.fdopen(ready_r, "rb") as ready:
        ready.read()  # closed by the server once it listens (or dies)
    return server, bindir


def _receive(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    header, fds, _, _ = socket.recv_fds(conn, 64, 3)
    length_text, _, body = header.partition(b"\n")
    length = int(length_text)
    while len(body) < length:
        chunk = conn.recv(length - len(body))
        if not chunk:
            break
        body += chunk
    return json.loads(body), fds


def _child(conn: socket.socket, request: dict[str, object], fds: list[int]) -> None:
    """Run one command on the launcher's descriptors; never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update(request["env"])  # type: ignore[arg-type]
        sys.argv = ["llmfix", *request["argv"]]  # type: ignore[misc]
        from llmfix.cli import main

        try:
            main()
            code = 0
        except SystemExit as stop:
            if stop.code is None:
                code = 0
            elif isinstance(stop.code, int):
                code = stop.code
            else:
                sys.stderr.write(f"{stop.code}\n")
                code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # (a reader that went away: head -2)
                stream.flush()
        try:
            conn.sendall(str(code).encode())
        finally:
            os._exit(code)


def serve(address: str, ready: int) -> None:
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(address)
    listener.listen(16)
    listener.settimeout(2)
    parent = os.getppid()
    os.close(ready)
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != parent:  # the test run is gone (killed): so is the server
                return
            continue
        try:
            request, fds = _receive(conn)
        except (OSError, ValueError):
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            listener.close()
            _child(conn, request, fds)
        conn.close()
        for fd in fds:
            os.close(fd)
        while True:  # reap the children that have ended
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if done == 0:
                break


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
