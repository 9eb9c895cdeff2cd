"""The proxy's server: uvicorn, in one process or several on one port (``--workers N``).

The proxy keeps no state between requests but its counters, so more processes serve more
streams where one would run out of its core. The parent binds the socket and forks the
workers, each a uvicorn server on that socket (the kernel hands each new connection to
one of them); it restarts a worker that dies, and stops them all on SIGINT or SIGTERM.
Forking (not spawning) lets every worker start from the run the command built, its
schemas and config already read; it needs ``os.fork``, so ``--workers`` above 1 is for
POSIX systems.

Each worker counts its own requests. So that ``/metrics`` stays right whichever worker
answers it, each also serves its counters as JSON on a Unix socket of its own, in a
directory only this user can read (:class:`~llmfix.proxy.metrics.Peers`), and the worker answering
``/metrics`` adds up the others' (a restarted worker starts again from zero). The
exchange log is appended to by every worker, one whole line per write (see
:mod:`llmfix.proxy.exchanges`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
import time
from typing import TYPE_CHECKING, Any

import uvicorn

from llmfix.proxy.app import build_app
from llmfix.proxy.metrics import Peers

if TYPE_CHECKING:
    from collections.abc import Callable

    from llmfix.proxy.app import ProxySettings

# A worker that dies sooner than this after it started is not restarted (nor would the
# next one start): the proxy stops.
_QUICK = 2.0


def serve(
    settings: ProxySettings,
    host: str,
    port: int,
    workers: int = 1,
    warn: Callable[[str], None] | None = None,
) -> None:
    """Run the proxy on ``host:port`` until interrupted (uvicorn takes httptools and uvloop,
    of the ``proxy`` extra, when they are installed), in ``workers`` processes; ``warn``
    is told why a worker stopped (the command prints it)."""

    if workers > 1:
        serve_workers(settings, host, port, workers, warn)
        return
    uvicorn.run(build_app(settings), **uvicorn_options(host, port))


def uvicorn_options(host: str, port: int) -> dict[str, Any]:
    """How the proxy's uvicorn runs: quiet, no ``server``/``date`` headers of its own
    (the upstream's pass), and no ``X-Forwarded-*`` middleware: the proxy never looks at
    the client's address or scheme, and the middleware's work would sit in front of every
    request's forwarding."""
    return {
        "host": host,
        "port": port,
        "log_level": "warning",
        "access_log": False,
        "server_header": False,
        "date_header": False,
        "proxy_headers": False,
        "lifespan": "on",
    }


def serve_workers(
    settings: ProxySettings,
    host: str,
    port: int,
    workers: int,
    warn: Callable[[str], None] | None = None,
) -> None:
    """Serve on ``host:port`` in ``workers`` forked processes until SIGINT or SIGTERM;
    ``warn`` is told, in the worker, why a worker stopped."""
    if not hasattr(os, "fork"):
        raise OSError("--workers above 1 needs os.fork (a POSIX system)")
    if settings.log:  # a log that cannot be opened stops the proxy before it forks
        from llmfix.proxy.exchanges import ExchangeLog

        ExchangeLog(settings.log).close()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    folder = tempfile.mkdtemp(prefix="llmfix-proxy-")  # mode 0700: this user's alone
    children: dict[int, tuple[int, float]] = {}  # pid → worker number, start time
    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def start(number: int) -> None:
        children[_fork(settings, sock, folder, number, previous, warn)] = (number, time.monotonic())

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for number in range(workers):
            start(number)
        while children:
            try:
                pid, _ = os.wait()
            except ChildProcessError:
                break
            number, started = children.pop(pid, (-1, 0.0))
            if stopping or number < 0:
                continue
            if time.monotonic() - started < _QUICK:  # it could not start: nor will the rest
                stop(signal.SIGTERM, None)
                continue
            start(number)  # a worker died: another takes its place
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sock.close()
        shutil.rmtree(folder, ignore_errors=True)


def _fork(
    settings: ProxySettings,
    sock: socket.socket,
    folder: str,
    number: int,
    previous: Any,
    warn: Callable[[str], None] | None,
) -> int:
    pid = os.fork()
    if pid:
        return pid
    # the worker: the default signal handlers back (uvicorn installs its own), then serve
    code = 0
    try:
        for s, handler in previous.items():
            signal.signal(s, handler)
        app = build_app(settings, Peers(folder, number))
        options = uvicorn_options(*sock.getsockname()[:2])
        uvicorn.Server(uvicorn.Config(app, **options)).run(sockets=[sock])
    except BaseException as error:  # a worker never returns into the parent's code
        code = 1
        if warn is not None and not isinstance(error, (SystemExit, KeyboardInterrupt)):
            warn(f"proxy: worker {number}: {error}")
    finally:
        os._exit(code)
