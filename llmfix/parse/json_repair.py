"""The ``--engine json-repair`` reading: json-repair parses, its log is put in llmfix's codes.

json-repair (``repair_json(..., logging=True)``) gives a value and a log: a list of
``{"text", "context"}`` entries, where ``context`` is the input up to ten characters either
side of where it was reading (no offsets). :data:`LOG_CODES` maps each entry's text to the
``parse.*`` codes of llmfix's reader that name the same fix; :func:`log_repairs` turns a
log into :class:`LoggedRepair` values, taking the span and risk tier of the repair of that
code that llmfix's reader (:mod:`llmfix.repair_parser`, run on the same text) made where
the entry's context is. An entry with no mapping is ``parse.json_repair`` with
json-repair's own text; entries that only note what json-repair kept or where a string
ended give nothing.

json-repair cannot check a clock, so :func:`run_json_repair` runs it under an outside
limit when one is asked for: in a worker process (``python -m llmfix.parse.json_repair``,
started on first use) that is killed when the time is spent and started again by the next
call; the wait for a new worker to start is not counted against the limit. Idle workers
are kept for the next call (one per thread that used the engine at once). Without a
limit, or where there are no POSIX pipes to wait on (Windows), it runs in this process.
"""

from __future__ import annotations

import atexit
import bisect
import functools
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple

from llmfix.codes import PARSE_JSON_REPAIR
from llmfix.deadline import Deadline, OutOfTime
from llmfix.model import Risk

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from llmfix.repair_parser import Repair

__all__ = [
    "LOG_CODES",
    "UNMAPPED",
    "EngineError",
    "LoggedRepair",
    "log_repairs",
    "run_json_repair",
    "same_reading",
]

UNMAPPED = PARSE_JSON_REPAIR.id  # a log entry no code of the reader names
_UNQUOTED = "While parsing a string, we found a literal instead of a quote"
_UNCLOSED = "While parsing a string, we missed the closing quote"  # also ends an unquoted one

# json-repair's log texts (json_repair 0.64: parse_*.py, json_parser.py; the ones that
# only occur with a schema or in strict mode are left to UNMAPPED), by how they start,
# with the codes of llmfix's reader for the same fix, the likeliest first. An empty
# tuple: the entry changes nothing (something kept, where a string ended, a look ahead).
LOG_CODES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Inserted missing opening object brace", ("parse.missing_opener",)),
    ("The parser returned early, checking if there's more json elements", ()),
    (
        "There were no more elements, returning the element without the array",
        ("parse.trailing_text", "parse.redundant_closer", "parse.fence"),
    ),
    ("While parsing an array we missed the closing ", ("parse.truncated", "parse.missing_closer")),
    ("While parsing an array, found a stray '...'", ("parse.ellipsis",)),
    ("Closed unclosed array before object member", ("parse.missing_closer",)),
    ("Found line comment: ", ("parse.comment",)),
    ("Found block comment: ", ("parse.comment",)),
    ("Reached end-of-string while parsing block comment", ("parse.comment",)),
    ("Parsed object is empty but the input starts like an escaped", ("parse.escaped_document",)),
    ("Parsed object is empty but the input still contains an object-style", ()),
    ("Parsed object is empty, we will try to parse this as an array", ("parse.python_literal",)),
    (
        "While parsing an object value we found a stray ",
        ("parse.missing_value", "parse.stray_text"),
    ),
    ("Found an extra closing brace that shouldn't be there", ("parse.redundant_closer",)),
    ("Found a comma and string delimiter after object closing brace", ("parse.redundant_closer",)),
    ("While parsing an object we found a : before a key", ("parse.stray_text",)),
    ("While parsing an object we missed a : after a key", ("parse.missing_colon",)),
    ("While parsing an object we found a closing array bracket", ("parse.missing_closer",)),
    ("While parsing an object we found a duplicate key", ("parse.duplicate_key",)),
    ("Found a stray escape sequence", ("parse.invalid_escape",)),
    ("Found a unicode escape sequence", ("parse.invalid_escape",)),
    (
        "Found a delimiter that was escaped but shouldn't be escaped",
        ("parse.escaped_document", "parse.invalid_escape"),
    ),
    ("While parsing a string, we found code fences but they did not enclose", ()),
    ("While parsing a string, we found a valid starting doubled quote", ()),
    ("While parsing a string, we found a leading quote that starts a quoted span", ()),
    (
        "While parsing a string, we found a doubled quote",
        ("parse.stray_text", "parse.unescaped_quote"),
    ),
    ("While parsing a string, we found a misplaced quote", ("parse.unescaped_quote",)),
    ("While parsing a string in Array context, we detected a quoted", ("parse.unescaped_quote",)),
    (
        "While parsing a string in Object Key context, we detected a quoted",
        ("parse.unescaped_quote",),
    ),
    ("While parsing a string, we found a bare quote inside a regex", ()),
    (_UNQUOTED, ("parse.unquoted_string", "parse.unquoted_key", "parse.stray_text")),
    (
        _UNCLOSED,
        ("parse.missing_quote", "parse.truncated", "parse.unquoted_string", "parse.unquoted_key"),
    ),
    ("While parsing a string, handling an extreme corner case", ("parse.comment",)),
    ("In a string with missing quotes and object value context", ("parse.missing_quote",)),
    ("While parsing a string missing the left delimiter", ()),
    ("While parsing a string missing the right delimiter in object value", ()),
    ("While parsing a string missing the right delimiter in object key", ("parse.missing_quote",)),
    ("While parsing a string in object value context, we found a comma that belongs", ()),
    ("While parsing a string in object value context, we found a balanced", ()),
    ("While parsing a string in object value context, we found a literal fenced", ()),
    ("While parsing a string in object value context, we found a }", ("parse.missing_quote",)),
    ("Converted unquoted Python None literal", ("parse.python_literal",)),
)

# How far (in characters) from where json-repair was reading a repair of llmfix's reader
# may start or end and still be taken for the same fix.
_NEAR = 12
_CONTEXT_SIDE = 10  # json-repair's log context: this many characters either side


class LoggedRepair(NamedTuple):
    """One json-repair log entry in llmfix's terms."""

    code: str
    span: tuple[int, int] | None  # from llmfix's reader's repair of the same fix, if found
    risk: Risk | None
    message: str  # json-repair's own text


class EngineError(Exception):
    """json-repair raised (or its worker stopped); carries only a message."""


@functools.lru_cache(maxsize=512)  # a log repeats a few texts many times
def codes_for(entry: str) -> tuple[str, ...] | None:
    """The codes for a log entry's text; ``()`` for a note, ``None`` when not mapped."""
    for start, codes in LOG_CODES:
        if entry.startswith(start):
            return codes
    return None


def log_repairs(
    text: str,
    log: Sequence[dict[str, Any]],
    repairs: Sequence[Repair],
    deadline: Deadline | None = None,
) -> list[LoggedRepair]:
    """json-repair's ``log`` for ``text`` in llmfix's codes, located with ``repairs``
    (llmfix's reader's, on the same text); one entry per fix and place."""
    locator = _Locator(text, repairs)
    found: list[LoggedRepair] = []
    seen: set[tuple[str, tuple[int, int] | None, str]] = set()
    unquoted = False  # the last fix named was a string without quotes
    for entry in log:
        if deadline is not None:
            deadline.check()
        message = str(entry.get("text", ""))
        codes = codes_for(message)
        if codes == () or (unquoted and message.startswith(_UNCLOSED)):
            continue
        unquoted = message.startswith(_UNQUOTED)
        near = None
        if codes:
            reading = locator.reading_at(str(entry.get("context", "")))
            near = None if reading is None else locator.nearest(codes, reading)
        said = f"json-repair: {message}"
        if near is not None:
            logged = LoggedRepair(near.code, (near.start, near.end), near.risk, said)
        else:
            logged = LoggedRepair(codes[0] if codes else UNMAPPED, None, Risk.GUESS, said)
        key = (logged.code, logged.span, "" if logged.span else message)
        if key not in seen:
            seen.add(key)
            found.append(logged)
    return found


class _Locator:
    """Where in the text json-repair was reading, and llmfix's repairs near there.

    The log follows json-repair's reading, mostly forwards: a context is looked for near
    where the last one was found, and in the whole text a bounded number of times, so a
    long log on a long text stays linear."""

    _BEHIND = 64
    _AHEAD = 4096
    _WHOLE_TEXT_SEARCHES = 32

    def __init__(self, text: str, repairs: Sequence[Repair]) -> None:
        self.text = text
        self.cursor = 0
        self.searches = 0
        self.by_code: dict[str, list[Repair]] = {}
        for repair in repairs:
            self.by_code.setdefault(repair.code, []).append(repair)
        self.starts = {code: [r.start for r in found] for code, found in self.by_code.items()}

    def reading_at(self, context: str) -> int | None:
        if not context:
            return None
        low = max(0, self.cursor - self._BEHIND)
        at = self.text.find(context, low, self.cursor + self._AHEAD + len(context))
        if at == -1 and self.searches < self._WHOLE_TEXT_SEARCHES:
            self.searches += 1
            at = self.text.find(context)
        if at == -1:
            return None
        self.cursor = at
        return at + _CONTEXT_SIDE if at > 0 else max(0, len(context) - _CONTEXT_SIDE)

    def nearest(self, codes: tuple[str, ...], reading: int) -> Repair | None:
        """The repair of one of ``codes`` closest to ``reading``, if one is near enough."""
        best: Repair | None = None
        best_distance = _NEAR + 1
        for code in codes:
            found = self.by_code.get(code)
            if not found:
                continue
            index = bisect.bisect_right(self.starts[code], reading)
            for repair in found[max(0, index - 1) : index + 1]:
                if repair.start <= reading <= repair.end:
                    distance = 0
                else:
                    distance = min(abs(repair.start - reading), abs(repair.end - reading))
                if distance < best_distance:
                    best, best_distance = repair, distance
        return best


def same_reading(ours: Any, theirs: Any) -> bool:
    """Whether two values are the same JSON, written the same way (key order, integer or
    not; booleans are not numbers)."""
    todo = [(ours, theirs)]
    while todo:
        a, b = todo.pop()
        if isinstance(a, dict):
            if not isinstance(b, dict) or list(a) != list(b):
                return False
            todo.extend((a[key], b[key]) for key in a)
        elif isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b):
                return False
            todo.extend(zip(a, b, strict=True))
        elif isinstance(a, (int, float)) and not isinstance(a, bool):
            if not isinstance(b, (int, float)) or isinstance(b, bool):
                return False
            if isinstance(a, int) != isinstance(b, int) or not (a == b or (a != a and b != b)):
                return False
        elif type(a) is not type(b) or a != b:
            return False
    return True


# -- running json-repair -----------------------------------------------------------------

# ("ok", value, log) | ("recursion", None, []) | ("error", message, [])
_Answer = tuple[str, Any, list[dict[str, Any]]]


def run_json_repair(text: str, max_depth: int, deadline: Deadline) -> tuple[Any, list[Any]]:
    """json-repair's value and log for ``text``.

    Raises :class:`OutOfTime` when ``deadline`` passes first (only a limited deadline
    runs json-repair in a worker), ``RecursionError`` when the nesting was too deep for it,
    :class:`EngineError` when it failed."""
    if not deadline.limited or os.name != "posix":
        return _unpack(_read(text, max_depth))
    deadline.check()
    asked = time.monotonic()
    try:
        worker = _borrow()
    except OSError:  # no child process could be started
        return _unpack(_read(text, max_depth))
    try:
        # Starting a worker (an interpreter importing json-repair) is not json-repair's
        # time: the wait for a new one is added to what is left of the budget.
        starting = worker.wait_ready() and time.monotonic() - asked
        answer = worker.call(text, max_depth, deadline.remaining() + starting)
    except _Stopped:
        worker.stop()
        raise EngineError("the json-repair worker process stopped") from None
    except _Late:
        worker.stop()
        raise OutOfTime(deadline.stage, deadline.seconds) from None
    except BaseException:
        worker.stop()  # interrupted mid-call: its answer would be read by the next caller
        raise
    _give_back(worker)
    return _unpack(answer)


def _unpack(answer: _Answer) -> tuple[Any, list[Any]]:
    kind, value, log = answer
    if kind == "recursion":
        raise RecursionError
    if kind == "error":
        raise EngineError(str(value))
    return value, log


def _read(text: str, max_depth: int) -> _Answer:
    from json_repair import repair_json  # heavy: only the json-repair engine needs it

    with _recursion_room(max_depth):
        try:
            value, log = repair_json(text, return_objects=True, skip_json_loads=True, logging=True)
        except RecursionError:
            return ("recursion", None, [])
        except Exception as error:  # a third-party failure must not escape as itself
            if isinstance(error.__cause__, RecursionError):
                return ("recursion", None, [])
            return ("error", f"{type(error).__name__}: {error}", [])
    return ("ok", value, list(log))


class _Stopped(Exception):
    """The worker process went away."""


class _Late(Exception):
    """The worker did not answer in time."""


class _Worker:
    """A child process reading texts with json-repair, one at a time.

    A plain ``python -m llmfix.parse.json_repair`` child with two pipes (not a
    :mod:`multiprocessing` process, whose ``spawn`` and ``forkserver`` start methods run
    the caller's main script again in the child)."""

    __slots__ = ("answers", "process", "ready", "requests")

    def __init__(self) -> None:
        import subprocess
        from multiprocessing.connection import Connection

        theirs_read, mine_write = os.pipe()
        mine_read, theirs_write = os.pipe()
        here = str(Path(__file__).resolve().parents[2])
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": here + (os.pathsep + path if path else "")}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", __spec__.name, str(theirs_read), str(theirs_write)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=(theirs_read, theirs_write),
                env=env,
            )
        except BaseException:
            for fd in (mine_read, mine_write):
                os.close(fd)
            raise
        finally:
            os.close(theirs_read)
            os.close(theirs_write)
        self.requests = Connection(mine_write, readable=False)
        self.answers = Connection(mine_read, writable=False)
        self.ready = False

    def wait_ready(self) -> bool:
        """Wait for a new worker to say it is ready; whether it was new."""
        if self.ready:
            return False
        try:
            if not self.answers.poll(_START_SECONDS) or self.answers.recv()[0] != "ready":
                raise _Stopped
        except (EOFError, OSError) as error:
            raise _Stopped from error
        self.ready = True
        return True

    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, text: str, max_depth: int, seconds: float) -> _Answer:
        try:
            self.requests.send((text, max_depth))
            if not self.answers.poll(seconds):
                raise _Late
            answer: _Answer = self.answers.recv()
        except (EOFError, OSError) as error:
            raise _Stopped from error
        return answer

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.requests.close()
        self.answers.close()


def _serve(requests: Connection, answers: Connection) -> None:
    """The worker's loop: read ``(text, max_depth)``, answer, until the pipe closes."""
    import json_repair  # noqa: F401  (imported before saying it is ready)

    answers.send(("ready", None, []))
    while True:
        try:
            text, max_depth = requests.recv()
        except (EOFError, OSError):
            return
        answers.send(_read(text, max_depth))


_START_SECONDS = 60.0  # how long a new worker may take to start
_idle: list[_Worker] = []
_idle_lock = threading.Lock()


def _borrow() -> _Worker:
    with _idle_lock:
        while _idle:
            worker = _idle.pop()
            if worker.alive():
                return worker
            worker.stop()
    return _Worker()


def _give_back(worker: _Worker) -> None:
    with _idle_lock:
        _idle.append(worker)


def _stop_all() -> None:
    with _idle_lock:
        while _idle:
            _idle.pop().stop()


_inherited: list[_Worker] = []  # a parent's workers, seen by a forked child: never used


def _forget_parents_workers() -> None:
    """In a forked child: the idle workers are the parent's (their pipes are shared)."""
    global _idle_lock
    _idle_lock = threading.Lock()
    for worker in _idle:
        worker.requests.close()  # this process's copies of the pipe ends
        worker.answers.close()
    _inherited.extend(_idle)  # kept referenced: the parent still runs and stops them
    _idle.clear()


atexit.register(_stop_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parents_workers)


# json-repair uses several Python frames per nesting level.
_FRAMES_PER_LEVEL = 6
_RECURSION_CAP = 10_000
_recursion_lock = threading.Lock()
_recursion_users = 0
_recursion_saved = 0


@contextmanager
def _recursion_room(max_depth: int) -> Iterator[None]:
    """Raise the recursion limit so ``max_depth`` levels fit (restored by the last user)."""
    global _recursion_users, _recursion_saved
    needed = min(_RECURSION_CAP, _frame_depth() + _FRAMES_PER_LEVEL * max_depth + 200)
    with _recursion_lock:
        if _recursion_users == 0:
            _recursion_saved = sys.getrecursionlimit()
        _recursion_users += 1
        if needed > sys.getrecursionlimit():
            sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        with _recursion_lock:
            _recursion_users -= 1
            if _recursion_users == 0:
                sys.setrecursionlimit(_recursion_saved)


def _frame_depth() -> int:
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


if __name__ == "__main__":  # the worker process (see _Worker)
    from multiprocessing.connection import Connection

    _serve(
        Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False)
    )
