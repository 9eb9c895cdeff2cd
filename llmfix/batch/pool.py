"""Many items, checked in parallel when it pays, yielded in input order.

:func:`run_items` runs :mod:`llmfix.batch.core` over an iterable of
:class:`~llmfix.inputs.Item` and yields one :class:`~llmfix.batch.core.Outcome` per item,
in the order the items came in. It starts in this process and moves the rest of the work to
a process pool only once the items checked so far have cost more than ``serial_budget``
seconds: a handful of files, or thousands of tiny ones, never pay for starting workers (the
crossover is measured in ``bench/bench_batch.py``). In the pool, work is sent in chunks
sized from the measured cost per item, and at most ``window`` chunks are in flight, so
memory stays bounded however long the input is. Workers end with their parent.

With a :class:`~llmfix.batch.judge.Judging`, the workers judge the items they check, and
an item that none of the run's reporters and writers reads whole comes back as its
summary counts (a :class:`~llmfix.batch.judge.Tallied`) instead of its pickled result:
on a run over many answers most of them pass, and sending each one's result back to be
unpickled and judged here cost this process as much as the checking cost a worker.

The items may come as :class:`~llmfix.inputs.LineBatch` es (lines of a JSON Lines file
read but not parsed, from :func:`~llmfix.inputs.items_or_lines`): in the pool, a worker
parses a batch's records, takes out their items and checks them, so this process only
reads lines, merges what comes back and writes. Before the pool starts, a batch is read
here, item by item, as any item is.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, overload

from llmfix import codes
from llmfix.batch.core import (
    BatchLimits,
    Outcome,
    Payload,
    Profile,
    WorkDone,
    check_payload,
    outcome_of,
    payload_of,
)
from llmfix.batch.hints import FieldHints as FieldHints  # cli/check.py imports it from here
from llmfix.batch.judge import Counts, Judging, Tallied
from llmfix.inputs.jsonl import LineBatch
from llmfix.model import Diagnostic
from llmfix.options import make_room

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from llmfix.inputs import Item


# Work per chunk sent to a worker: large enough that IPC is noise, small enough to balance.
CHUNK_SECONDS = 0.05


MAX_CHUNK = 256


MAX_POOL_RESTARTS = 3

# With the input's size known (BatchLimits.input_size): after this much serial work, the
# pool starts at once if the work left, at the rate measured so far, is at least
# POOL_PAYS_SECONDS (the pool's start is paid back from about 0.8 s of work left, in
# bench/bench_batch.py's crossover), instead of after the whole serial budget.
PROBE_SECONDS = 0.05
POOL_PAYS_SECONDS = 1.0

# A chunk in flight: its units, what was sent for each (a payload; an Outcome for an item
# not to be checked; a batch of lines), and the worker's answer to come (per unit: an
# item's result, its counts alone (see Judging), None for one not sent; a batch of
# lines' outcomes).
_InFlight = tuple[
    "list[Item | LineBatch]",
    "list[Payload | Outcome | LineBatch]",
    "Future[list[WorkDone | Counts | list[Outcome | Tallied] | None]]",
]


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_WORKER: dict[str, Any] = {}


def _init_worker(
    profiles: Mapping[str, Profile],
    timeout: float | None,
    parent: int,
    judging: Judging | None = None,
) -> None:
    # The parent handles Ctrl-C; a worker dying of it would break the pool mid-report.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent(parent)
    make_room()  # a spawned worker starts with the interpreter's recursion limit
    _WORKER["profiles"] = profiles
    _WORKER["timeout"] = timeout
    _WORKER["judging"] = judging


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


PARENT_POLL_SECONDS = 1.0


def _end_with_parent(parent: int) -> None:
    """End this worker when the process that started it dies, even killed with SIGKILL
    (its workers would otherwise wait on the pool's queue for ever, each holding the
    other's pipe open). Linux: the kernel sends SIGKILL (``PR_SET_PDEATHSIG``); everywhere:
    a thread that sees the parent process change. ``parent`` is the pid of the process
    that made the pool: if it is gone already (it died before this ran), end now."""
    started_by = os.getppid()
    if started_by != parent and not _alive(parent):
        os._exit(1)
    _ask_kernel_to_end_with_parent()
    if os.getppid() != started_by:  # died between the two looks: the signal never comes
        os._exit(1)
    import threading

    def watch() -> None:
        while os.getppid() == started_by:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="llmfix-parent-watch", daemon=True).start()


def _ask_kernel_to_end_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl (a libc without it): the thread watches
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _run_chunk(
    payloads: list[Payload | LineBatch | None],
    judged: list[bool] | None = None,
    max_item_size: int | None = None,
) -> list[WorkDone | Counts | list[Outcome | Tallied] | None]:
    """Check a chunk in a worker; ``judged``: the items it may judge and send back as
    their counts (see :class:`~llmfix.batch.judge.Judging`). A batch of lines is parsed
    here and comes back as its items' outcomes (see :func:`_check_lines`)."""
    profiles = _WORKER["profiles"]
    timeout = _WORKER["timeout"]
    judging: Judging | None = _WORKER["judging"]
    out: list[WorkDone | Counts | list[Outcome | Tallied] | None] = []
    flags = [False] * len(payloads) if judged is None else judged
    for payload, own in zip(payloads, flags, strict=True):
        if payload is None:
            out.append(None)
            continue
        if isinstance(payload, LineBatch):
            size = BatchLimits.max_item_size if max_item_size is None else max_item_size
            limits = BatchLimits(item_timeout=timeout, max_item_size=size)
            out.append(_check_lines(payload, profiles, limits, judging))
            continue
        done = check_payload(payload, profiles, timeout)
        counts = _counts_of(done, profiles[payload[1]], judging) if own else None
        out.append(done if counts is None else counts)
    return out


def _counts_of(done: WorkDone, profile: Profile, judging: Judging | None) -> Counts | None:
    """A checked item's summary counts, for a worker to send back instead of its result,
    or ``None``: no judging, no result, or the run needs it whole."""
    result = done[0]
    if judging is None or result is None:
        return None
    return judging.counts(result, done[3], partial=profile.options.partial)


def _check_lines(
    batch: LineBatch,
    profiles: Mapping[str, Profile],
    limits: BatchLimits,
    judging: Judging | None,
) -> list[Outcome | Tallied]:
    """The outcomes of a batch of lines' items, in order: each checked as
    :func:`run_items` checks an item, and with ``judging`` one the run does not need
    whole is its counts (a :class:`~llmfix.batch.judge.Tallied`)."""
    found: list[Outcome | Tallied] = []
    for item in batch.items():
        prepared = payload_of(item, limits)
        if isinstance(prepared, Outcome):
            found.append(prepared)
            continue
        done = check_payload(prepared, profiles, limits.item_timeout)
        counts = _counts_of(done, profiles[item.profile], judging) if _judged_there(item) else None
        found.append(outcome_of(item, done, profiles) if counts is None else Tallied(item, counts))
    return found


@overload
def run_items(
    items: Iterable[Item | LineBatch],
    profiles: Mapping[str, Profile],
    limits: BatchLimits | None = None,
    judging: None = None,
) -> Iterator[Outcome]: ...


@overload
def run_items(
    items: Iterable[Item | LineBatch],
    profiles: Mapping[str, Profile],
    limits: BatchLimits | None,
    judging: Judging,
) -> Iterator[Outcome | Tallied]: ...


def run_items(
    items: Iterable[Item | LineBatch],
    profiles: Mapping[str, Profile],
    limits: BatchLimits | None = None,
    judging: Judging | None = None,
) -> Iterator[Outcome | Tallied]:
    """Check every item; one :class:`Outcome` each, in input order (see the module doc).
    With ``judging``, the items checked in the pool that the run does not need whole are
    a :class:`~llmfix.batch.judge.Tallied` each instead."""
    limits = limits or BatchLimits()
    jobs = limits.jobs if limits.jobs > 0 else cpu_count()
    source = iter(items)
    spent = 0.0
    checked = 0
    read = 0  # characters read so far, against limits.input_size
    for unit in source:
        read += unit.size if isinstance(unit, LineBatch) else len(unit.text)
        for item in unit.items() if isinstance(unit, LineBatch) else (unit,):
            prepared = payload_of(item, limits)
            if isinstance(prepared, Outcome):
                yield prepared
                continue
            done = check_payload(prepared, profiles, limits.item_timeout, item.decoded)
            outcome = outcome_of(item, done, profiles)
            yield outcome
            spent += outcome.seconds
            checked += 1
        if jobs > 1 and checked and _pool_pays(spent, read, limits):
            yield from _run_pool(source, profiles, limits, jobs, spent / checked, judging)
            return


def _pool_pays(spent: float, read: int, limits: BatchLimits) -> bool:
    """Whether to start the pool, ``spent`` seconds into checking the first ``read``
    characters: the serial budget is spent, or (the input's size known) what is left
    will plainly pay for starting it."""
    if spent >= limits.serial_budget:
        return True
    left = limits.input_size - read
    return spent >= PROBE_SECONDS and left > 0 and spent / max(read, 1) * left >= POOL_PAYS_SECONDS


def _run_pool(
    source: Iterator[Item | LineBatch],
    profiles: Mapping[str, Profile],
    limits: BatchLimits,
    jobs: int,
    mean_seconds: float,
    judging: Judging | None = None,
) -> Iterator[Outcome | Tallied]:
    size = _chunk_size(mean_seconds)
    window = limits.window or 2 * jobs
    pool = _Pool(jobs, profiles, limits.item_timeout, judging, limits.max_item_size)
    pending: deque[_InFlight] = deque()
    # What the workers measured: the chunk size follows it. (The first items checked here
    # cost more than the rest, their modules loading as the first answer of each kind
    # comes: chunks sized from them alone were a few times too small.)
    spent = 0.0
    checked = 0
    try:
        while True:
            chunk = _take(source, size)
            if chunk:
                prepared = [_sent(unit, limits) for unit in chunk]
                judged = None if judging is None else [_judged_there(unit) for unit in chunk]
                pending.append((chunk, prepared, pool.submit(prepared, judged)))
            while pending and (len(pending) >= window or not chunk):
                for done in pool.collect(*pending.popleft(), pending):
                    spent += done.counts.seconds if isinstance(done, Tallied) else done.seconds
                    checked += 1
                    yield done
                size = _chunk_size(spent / checked) if checked else size
            if not chunk:
                return
    finally:
        pool.shutdown()


def _chunk_size(mean_seconds: float) -> int:
    """Items per chunk sent to a worker: about ``CHUNK_SECONDS`` of work."""
    return max(1, min(MAX_CHUNK, int(CHUNK_SECONDS / max(mean_seconds, 1e-6))))


def _judged_there(item: Item | LineBatch) -> bool:
    """Whether a worker may judge ``item`` alone: its verdict depends on its result only
    (no stop reason from the API, no bytes the reader replaced). (A batch of lines: the
    worker asks this of each of its items.)"""
    if isinstance(item, LineBatch):
        return False
    return item.finish is None and not item.diagnostics


def _sent(unit: Item | LineBatch, limits: BatchLimits) -> Payload | Outcome | LineBatch:
    """What to send a worker for ``unit`` (see :func:`~llmfix.batch.core.payload_of`)."""
    return unit if isinstance(unit, LineBatch) else payload_of(unit, limits)


def _take(source: Iterator[Item | LineBatch], size: int) -> list[Item | LineBatch]:
    """The next units, about ``size`` items' worth (a batch of lines: one per line)."""
    chunk: list[Item | LineBatch] = []
    taken = 0
    for unit in source:
        chunk.append(unit)
        taken += len(unit.lines) if isinstance(unit, LineBatch) else 1
        if taken >= size:
            break
    return chunk


class _Pool:
    """A process pool that is rebuilt when a worker dies (at most ``MAX_POOL_RESTARTS``)."""

    def __init__(
        self,
        jobs: int,
        profiles: Mapping[str, Profile],
        timeout: float | None,
        judging: Judging | None = None,
        max_item_size: int = BatchLimits.max_item_size,
    ) -> None:
        self.jobs = jobs
        self.profiles = profiles
        self.timeout = timeout
        self.judging = judging
        self.max_item_size = max_item_size
        self.restarts = 0
        self.executor: ProcessPoolExecutor | None = self._start()

    def _start(self) -> ProcessPoolExecutor:
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(
            self.jobs,
            initializer=_init_worker,
            initargs=(self.profiles, self.timeout, os.getpid(), self.judging),
        )

    def submit(
        self, prepared: list[Payload | Outcome | LineBatch], judged: list[bool] | None = None
    ) -> Future[list[WorkDone | Counts | list[Outcome | Tallied] | None]]:
        from concurrent.futures import Future

        payloads = [None if isinstance(p, Outcome) else p for p in prepared]
        if self.executor is None:  # gave up on workers: run here
            done: Future[list[WorkDone | Counts | list[Outcome | Tallied] | None]] = Future()
            limits = BatchLimits(item_timeout=self.timeout, max_item_size=self.max_item_size)
            checked: list[WorkDone | Counts | list[Outcome | Tallied] | None] = [
                None
                if p is None
                else _check_lines(p, self.profiles, limits, None)
                if isinstance(p, LineBatch)
                else check_payload(p, self.profiles, self.timeout)
                for p in payloads
            ]
            done.set_result(checked)
            return done
        return self.executor.submit(_run_chunk, payloads, judged, self.max_item_size)

    def collect(
        self,
        chunk: list[Item | LineBatch],
        prepared: list[Payload | Outcome | LineBatch],
        future: Future[list[WorkDone | Counts | list[Outcome | Tallied] | None]],
        pending: deque[_InFlight],
    ) -> Iterator[Outcome | Tallied]:
        from concurrent.futures.process import BrokenProcessPool

        try:
            results = future.result()
        except BrokenProcessPool:
            self._restart(pending)
            error = codes.BATCH_WORKER_CRASHED.at(
                "the worker process checking this item died (out of memory, or a crash)",
            )
            for unit, ready in zip(chunk, prepared, strict=True):
                if isinstance(ready, Outcome):
                    yield ready
                else:
                    yield from _crashed(unit, error, self.max_item_size)
            return
        for unit, ready, done in zip(chunk, prepared, results, strict=True):
            if isinstance(ready, Outcome):
                yield ready
            elif isinstance(done, list):  # a batch of lines: its items' outcomes
                yield from done
            elif isinstance(done, Counts):
                assert not isinstance(unit, LineBatch)
                yield Tallied(unit, done)
            elif done is not None:
                assert not isinstance(unit, LineBatch)
                yield outcome_of(unit, done, self.profiles)

    def _restart(self, pending: deque[_InFlight]) -> None:
        self.shutdown()
        self.restarts += 1
        self.executor = self._start() if self.restarts <= MAX_POOL_RESTARTS else None
        for index, (chunk, prepared, _) in enumerate(pending):
            judged = None if self.judging is None else [_judged_there(unit) for unit in chunk]
            pending[index] = (chunk, prepared, self.submit(prepared, judged))

    def shutdown(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
            self.executor = None


def _crashed(unit: Item | LineBatch, error: Diagnostic, max_item_size: int) -> list[Outcome]:
    """What a unit whose worker died comes to: the error, on the item or on each item of
    the batch of lines (read here; one not to be checked keeps its own outcome)."""
    if not isinstance(unit, LineBatch):
        return [Outcome(unit, None, error)]
    limits = BatchLimits(max_item_size=max_item_size)
    found: list[Outcome] = []
    for item in unit.items():
        prepared = payload_of(item, limits)
        found.append(prepared if isinstance(prepared, Outcome) else Outcome(item, None, error))
    return found
