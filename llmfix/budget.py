"""Time budgets: stop a piece of pure-Python work after a number of seconds.

Being removed (issue 19): a budget is now a :class:`~llmfix.deadline.Deadline` the loops
check. Only ``toolcalls/check.py`` still opens one here, until its deadline version lands;
then this module goes.

A budget is opened around one stage of work on one item (extraction, lenient parsing,
schema repair, a tool-call check) and names the source files it may interrupt.

- On the main thread it uses ``signal.setitimer``: the handler raises
  :class:`BudgetExceeded` inside the work, which stops within a few bytecodes.
- In other threads (or when an interval timer is already in use, as in ``llmfix check
  --timeout``) a watcher thread raises the same exception in the working thread through
  CPython's ``PyThreadState_SetAsyncExc`` (no cost while working).
- Elsewhere (another interpreter) a trace hook on Python calls checks the clock every
  256 calls.

The exception is only raised while code from the named files runs: landing in, say, a
gc callback it would be swallowed, so there it is retried a few milliseconds later. It
is a ``BaseException`` subclass, so third-party ``except Exception`` blocks cannot catch
it; the budget that raised it ends its block and sets ``expired``.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))


class BudgetExceeded(BaseException):
    """Raised inside budgeted work when its time is spent (caught by whoever opened it)."""


# How soon to try again when the budget ran out while other code (a gc callback, say,
# which would swallow the exception) was running.
_RETRY = 0.005


def files(*names: str) -> tuple[str, ...]:
    """Absolute paths (a trailing separator: a package directory) of llmfix modules."""
    return tuple(os.path.join(_HERE, name) for name in names)


# Code whose clean-up must not be cut short by a budget (filled in below and by protect()).
_BOOKKEEPING: set[CodeType] = set()


def protect(manager: Any) -> Any:
    """Mark a ``@contextmanager`` function whose clean-up a budget must not interrupt."""
    _BOOKKEEPING.add(manager.__wrapped__.__code__)
    return manager


def _interruptible(frame: FrameType | None, where: tuple[str, ...]) -> bool:
    if frame is None:
        return False
    code = frame.f_code
    return code.co_filename.startswith(where) and code not in _BOOKKEEPING


class Budget:
    """One open budget: ``expired`` tells the caller, after the block, that time ran out
    (the block was cut short and its results are not there)."""

    __slots__ = ("expired", "fired")

    def __init__(self) -> None:
        self.fired = False  # this budget raised BudgetExceeded (or sent it)
        self.expired = False  # ... and it ended the block


@contextmanager
def time_budget(seconds: float, where: tuple[str, ...]) -> Iterator[Budget]:
    """Interrupt the enclosed code after ``seconds``; then ``budget.expired`` is true.

    The interrupt (:class:`BudgetExceeded`) is only raised while code from a file under
    one of the ``where`` paths runs; elsewhere, e.g. in a gc callback that would swallow
    it, it is retried a moment later. Budgets nest: one opened inside another that ends
    first adds nothing (the outer one bounds the work and reports it, so its ``where``
    should name the inner work's files too); an inner one that ends first lets the outer
    one's interrupt through. A budget that is not a positive
    finite number means no budget.
    """
    budget = Budget()
    if not (seconds > 0 and math.isfinite(seconds)):
        yield budget
        return
    deadline = time.monotonic() + seconds
    outer = getattr(_open, "deadline", None)
    if outer is not None and outer <= deadline:
        yield budget  # an open budget in this thread ends first: it bounds this work too
        return
    _open.deadline = deadline
    try:
        with _interrupt_after(seconds, where, budget):
            yield budget
    finally:
        _open.deadline = outer


# The deadline of the innermost budget open in each thread.
_open = threading.local()


@contextmanager
def _interrupt_after(seconds: float, where: tuple[str, ...], budget: Budget) -> Iterator[None]:
    def check(frame: FrameType | None) -> bool:
        if _interruptible(frame, where):
            budget.fired = True
            return True
        return False

    try:
        if _alarm_available():
            with _alarm(seconds, check):
                yield
        elif _WATCHER is not None:
            with _thread_timer(seconds, _WATCHER, check):
                yield
        else:
            with _call_clock(seconds, check):
                yield
    except BudgetExceeded:
        if not budget.fired:
            raise  # an outer budget's
        budget.expired = True


def _alarm_available() -> bool:
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )


@contextmanager
def _alarm(seconds: float, check: Callable[[FrameType | None], bool]) -> Iterator[None]:
    active = True

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if not active:
            return
        if check(frame):
            raise BudgetExceeded
        signal.setitimer(signal.ITIMER_REAL, _RETRY)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            active = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def _find_set_async_exc() -> Callable[[int, type[BaseException]], int] | None:
    """CPython's ``PyThreadState_SetAsyncExc`` (``None`` on other interpreters)."""
    try:
        import ctypes

        function = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError):
        return None

    def set_async_exc(thread_id: int, exception: type[BaseException]) -> int:
        return int(function(ctypes.c_ulong(thread_id), ctypes.py_object(exception)))

    return set_async_exc


_SET_ASYNC_EXC = _find_set_async_exc()


class _Entry:
    """One thread's budget, as the watcher sees it."""

    __slots__ = ("check", "done", "due", "sent", "thread_id")

    def __init__(
        self, thread_id: int, due: float, check: Callable[[FrameType | None], bool]
    ) -> None:
        self.thread_id = thread_id
        self.due = due
        self.check = check
        self.sent = False
        self.done = False


class _Watcher:
    """One daemon thread per process that serves every budget of every other thread.

    Starting a thread per budget cost about 0.3 ms, more than repairing a small answer;
    registering with this one costs a lock. It sleeps until the nearest deadline, then
    for each expired budget either sends :class:`BudgetExceeded` (the thread is in
    interruptible code) or looks again :data:`_RETRY` seconds later.
    """

    def __init__(self, set_async_exc: Callable[[int, type[BaseException]], int]) -> None:
        self._set_async_exc = set_async_exc
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        # After a fork the child has no watcher thread, and the lock may have been held.
        self._cond = threading.Condition(threading.Lock())
        self._entries: dict[int, _Entry] = {}
        self._thread: threading.Thread | None = None
        self._wake_at = math.inf

    def add(self, entry: _Entry) -> None:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="llmfix-budget", daemon=True)
                self._thread.start()
            self._entries[id(entry)] = entry
            if entry.due < self._wake_at:
                self._cond.notify()

    def remove(self, entry: _Entry) -> bool:
        """Forget ``entry``; whether its exception was sent (it may not have arrived)."""
        with self._cond:
            self._entries.pop(id(entry), None)
            entry.done = True
            return entry.sent

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for key, entry in list(self._entries.items()):
                    if entry.due > now:
                        continue
                    if entry.check(sys._current_frames().get(entry.thread_id)):
                        entry.sent = True
                        del self._entries[key]
                        self._set_async_exc(entry.thread_id, BudgetExceeded)
                    else:
                        entry.due = now + _RETRY
                self._wake_at = min((e.due for e in self._entries.values()), default=math.inf)
                self._cond.wait(None if self._wake_at == math.inf else self._wake_at - now)


_WATCHER = _Watcher(_SET_ASYNC_EXC) if _SET_ASYNC_EXC is not None else None


@contextmanager
def _thread_timer(
    seconds: float, watcher: _Watcher, check: Callable[[FrameType | None], bool]
) -> Iterator[None]:
    """Raise :class:`BudgetExceeded` in this thread from the watcher thread after ``seconds``.

    The exception arrives at a bytecode boundary of this thread; the watcher sends it
    only while this thread runs interruptible code. The watcher's lock settles whether it
    was sent before the block ended; if it was and has not arrived yet, we wait for it
    here rather than let it surface in the caller. (A pending exception is never
    withdrawn: in CPython 3.11 withdrawing one leaves the eval breaker set for good, which
    stalls traced threads.)
    """
    entry = _Entry(threading.get_ident(), time.monotonic() + seconds, check)
    watcher.add(entry)
    try:
        yield
    finally:
        in_flight = isinstance(sys.exc_info()[1], BudgetExceeded)
        sent = watcher.remove(entry)
        if sent and not in_flight:
            _receive_interrupt()


def _receive_interrupt() -> None:
    """Let a pending :class:`BudgetExceeded` arrive now, and drop it."""
    give_up = time.monotonic() + 0.5  # in case something else consumed it
    try:
        while time.monotonic() < give_up:
            _tick()
    except BudgetExceeded:
        pass


def _tick() -> None:
    """A Python call: the interpreter checks for pending exceptions when it enters one."""


@contextmanager
def _call_clock(seconds: float, check: Callable[[FrameType | None], bool]) -> Iterator[None]:
    """Check the clock on every 256th Python call in this thread (keeping any tracer)."""
    deadline = time.monotonic() + seconds
    previous = sys.gettrace()
    calls = 0

    def tracer(frame: FrameType, event: Any, arg: Any) -> Any:
        nonlocal calls
        calls += 1
        if not calls & 255 and time.monotonic() > deadline and check(frame):
            raise BudgetExceeded
        return previous(frame, event, arg) if previous is not None else None

    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)


for _manager in (time_budget, _interrupt_after, _alarm, _thread_timer, _call_clock):
    protect(_manager)
