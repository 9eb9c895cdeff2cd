"""Batch execution: check many items, in parallel when it pays, in input order.

:func:`run_items` runs the pipeline over an iterable of :class:`~llmfix.inputs.Item` and
yields one :class:`Outcome` per item, in the order the items came in. It starts in this
process and moves the rest of the work to a process pool only once the items checked so
far have cost more than ``serial_budget`` seconds: a handful of files, or thousands of
tiny ones, never pay for starting workers (the crossover is measured in
``bench/bench_batch.py``). In the pool, work is sent in chunks sized from the measured
cost per item, and at most ``window`` chunks are in flight, so memory stays bounded
however long the input is.

Per-item limits: an item longer than ``max_item_size`` characters is not checked
(``batch.too_large``); one that takes longer than ``item_timeout`` seconds is stopped
(``batch.timeout``). The timeout is a :class:`~llmfix.deadline.Deadline` for the item that
every stage's own deadline lies within, so the item stops at the first check after
whichever ends first: the stages' loops check (see :mod:`llmfix.deadline`), nothing is
interrupted from outside, and work that does not check (reading the file, strict decoding,
schema validation) is not cut short. The same holds in any thread. An exception inside the
pipeline is the item's error (``batch.crash``), never the end of the run.

:func:`judge` applies the gates (``--fail-on``, ``--max-risk``) and the baseline to an
outcome; :class:`BatchSummary` tallies what a run found, overall and per group. No
printing, no file I/O here: the CLI feeds reporters. (:class:`FieldHints`, the hints about
``--field`` typos, lives in :mod:`llmfix.batch.hints`.)
"""

from __future__ import annotations

import functools
import os
import re
import signal
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.batch.gate import gate_failures
from llmfix.batch.hints import FieldHints as FieldHints  # cli/check.py imports it from here
from llmfix.deadline import Deadline, OutOfTime
from llmfix.inputs.items import reading_notes, with_reading_changes
from llmfix.model import (
    Diagnostic,
    LineIndex,
    Position,
    Result,
    Risk,
    Severity,
    Status,
    build,
)
from llmfix.options import RepairOptions, make_room
from llmfix.pipeline.core import repair_text, strict_document
from llmfix.pipeline.responses import apply_finish, refused_result

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from llmfix.batch.gate import FailOn
    from llmfix.inputs import Item
    from llmfix.schema.validate import SchemaValidator
    from llmfix.toolcalls.registry import ToolRegistry

STAGE = "batch"

# Below this much serial work (seconds) a run stays in one process; measured in
# bench/bench_batch.py (see bench/README.md, "Batch").
SERIAL_BUDGET = 0.5
# Work per chunk sent to a worker: large enough that IPC is noise, small enough to balance.
CHUNK_SECONDS = 0.05
MAX_CHUNK = 256
MAX_POOL_RESTARTS = 3


@dataclass(frozen=True)
class Profile:
    """How one group of items is checked: the schema, the tool registry, the options.

    ``tool_calls`` (``--tool-calls``): an answer's text is read for tool calls in any known
    format and checked against ``registry`` when there is one (names and arguments are
    not checked without it), instead of being read as one JSON value.
    """

    validator: SchemaValidator | None = None
    options: RepairOptions = field(default_factory=RepairOptions)
    tools: Mapping[str, SchemaValidator] | None = None
    tool_calls: bool = False
    registry: ToolRegistry | None = None
    outputs: Mapping[str, SchemaValidator] | None = None  # tool name → output schema


@dataclass(frozen=True)
class BatchLimits:
    """Execution bounds (``-j``, ``--timeout``, ``--max-item-size``)."""

    jobs: int = 0  # 0: every core
    item_timeout: float | None = 60.0
    max_item_size: int = 10_000_000
    serial_budget: float = SERIAL_BUDGET
    window: int = 0  # chunks in flight; 0: two per worker


@dataclass(frozen=True)
class Outcome:
    """What checking one item gave: a result, or the error that stopped it."""

    item: Item
    result: Result | None
    error: Diagnostic | None = None
    anchor: Position | None = None  # where the chosen JSON starts in the item's text
    seconds: float = 0.0

    @property
    def status(self) -> str:
        return self.result.status.value if self.result is not None else "error"

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        found = list(self.item.diagnostics)
        if self.error is not None:
            found.append(self.error)
        if self.result is not None:
            found.extend(self.result.diagnostics)
        return tuple(found)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_text(
    text: str, profile: Profile, tool: str | None = None, *, deadline: Deadline | None = None
) -> Result:
    """Check one text with a profile.

    ``tool`` is set (``""`` for a call with no name) when the text is a tool call's
    arguments: they are checked against that tool's schema from the profile's registry
    (``tools.unknown_name`` when it has none by that name), or only parsed without one.
    ``deadline`` is the item's: every stage's time budget ends no later than it, and when
    it ends first, :class:`~llmfix.deadline.OutOfTime` is raised.
    """
    if tool is None and profile.tool_calls:
        # (start-up: the tool-call readers load only for a run that reads tool calls)
        from llmfix.toolcalls import check_tool_calls

        options = profile.options
        return _stopped_by(
            check_tool_calls(
                text,
                profile.registry,
                max_risk=options.max_risk,
                schema_repair=options.schema_repair,
                disabled_rules=options.disabled_rules,
                time_budget=_budget_within(options.limits.time_budget, deadline),
            ),
            deadline,
        )
    validator = profile.validator
    unknown: Diagnostic | None = None
    if tool is not None:  # a tool call's arguments: the tool's schema, not the answer's
        # (start-up: the tool-call readers load only for a run that reads tool calls)
        from llmfix.toolcalls.base import valid_name

        validator = None
        if not valid_name(tool):  # no tool can have that name: an error, registry or not
            unknown = _bad_name(tool)
        elif profile.tools:
            validator = profile.tools.get(tool)
            if validator is None:
                unknown = _unknown_tool(tool, profile.tools)
    result = repair_text(text, options=profile.options, validator=validator, deadline=deadline)
    if unknown is None:
        return result
    from dataclasses import replace

    status = Status.INVALID if result.status.ok else result.status
    return replace(result, status=status, diagnostics=(*result.diagnostics, unknown))


def _budget_within(budget: float, deadline: Deadline | None) -> float:
    """A stage's ``--time-budget`` for a callee that makes its own deadline from it: no
    longer than what is left of ``deadline`` (which raises if nothing is)."""
    if deadline is None or not deadline.limited:
        return budget
    deadline.check()
    left = max(deadline.remaining(), 1e-6)
    own = Deadline(budget, "stage").seconds  # in seconds (inf when it is no limit)
    return left if left < own else budget


def _stopped_by(result: Result, deadline: Deadline | None) -> Result:
    """``result``, unless a stage ran out of time because ``deadline`` ended: then that
    deadline's :class:`~llmfix.deadline.OutOfTime`."""
    if (
        deadline is not None
        and deadline.expired()
        and any(d.code == "limits.time" for d in result.diagnostics)
    ):
        deadline.check()
    return result


def check_item(item: Item, profile: Profile) -> Result:
    """Check one item's text (:func:`check_text`), with what its API response said applied:
    a refusal is ``refused``, a cut-off answer ``truncated`` (see
    :mod:`llmfix.pipeline.responses`)."""
    if item.finish is not None and item.finish.kind == "refused":
        return refused_result(item.finish)
    result = _check(item.text, profile, item.tool, item.kind == "tool-result")
    return apply_finish(result, item.finish, partial=profile.options.partial)


def _check(
    text: str, profile: Profile, tool: str | None, output: bool, deadline: Deadline | None = None
) -> Result:
    """A tool's result (``output``) against its output schema; anything else by
    :func:`check_text`. Either within ``deadline`` (see :func:`check_text`)."""
    if not output:
        return check_text(text, profile, tool, deadline=deadline)
    from dataclasses import replace

    # (start-up: the tool-call readers load only for a run that reads tool calls)
    from llmfix.toolcalls.results import check_tool_result

    validator = (profile.outputs or {}).get(tool or "")
    options = profile.options
    budget = _budget_within(options.limits.time_budget, deadline)
    if budget != options.limits.time_budget:
        options = replace(options, limits=replace(options.limits, time_budget=budget))
    return _stopped_by(check_tool_result(text, tool or "", validator, options), deadline)


def _bad_name(name: str) -> Diagnostic:
    # (start-up: the tool-call readers load only for a run that reads tool calls)
    from llmfix.toolcalls.base import NAME_HINT, shown_name

    what = f"named {shown_name(name)}" if name else "with no name"
    return codes.TOOLS_BAD_NAME.at(
        f"a tool call {what}: that is not a usable tool name",
        hint=NAME_HINT,
        data={"name": shown_name(name)},
    )


def _unknown_tool(name: str | None, tools: Mapping[str, Any]) -> Diagnostic:
    import difflib

    close = difflib.get_close_matches(name or "", sorted(tools), n=1)
    hint = f'did you mean "{close[0]}"?' if close else "registered: " + ", ".join(sorted(tools))
    what = f'"{name}"' if name else "a call with no name"
    return codes.TOOLS_UNKNOWN_NAME.at(
        f"tool {what} is not in the tool registry",
        hint=hint,
        data={"tool": name},
    )


# ------------------------------------------------------------------------- one item


# The stage an item's deadline names (``--timeout``): never one of the pipeline's stages.
ITEM = "item"

Payload = tuple[str, str, str | None, bool]  # text, profile key, tool name, a tool's result
Done = tuple[Result | None, Diagnostic | None, Position | None, float]


def _check_payload(
    payload: Payload,
    profiles: Mapping[str, Profile],
    timeout: float | None,
    decoded: tuple[Any] | None = None,
) -> Done:
    text, key, tool, output = payload
    start = time.perf_counter()
    profile = profiles[key]
    # An answer's text (not a tool call's arguments or result) that is strict JSON and
    # valid takes the lean path: the pipeline's result without its machinery.
    lean = tool is None and not output and not profile.tool_calls
    try:
        result = strict_valid(text, profile.validator, profile.options, decoded) if lean else None
        if result is None:
            result = _check(text, profile, tool, output, Deadline(timeout, ITEM))
    except OutOfTime as stop:
        if stop.stage == ITEM:
            error = codes.BATCH_TIMEOUT.at(f"stopped after {timeout:g} s (--timeout)")
            return None, error, None, time.perf_counter() - start
        problem = f"OutOfTime: {stop}"  # a stage's own budget ends in a diagnostic, not here
        return None, codes.BATCH_CRASH.at(f"checking failed: {problem}"), None, 0.0
    except Exception as exc:  # one bad item never ends the run
        problem = " ".join(f"{type(exc).__name__}: {exc}".split())
        return None, codes.BATCH_CRASH.at(f"checking failed: {problem}"), None, 0.0
    anchor = None
    if result.candidate is not None:
        at = result.candidate.span.start
        anchor = _FIRST if at == 0 else LineIndex(text).position(at)
    return result, None, anchor, time.perf_counter() - start


_FIRST = Position(1, 1)


def strict_valid(
    text: str,
    validator: SchemaValidator | None,
    options: RepairOptions,
    decoded: tuple[Any] | None = None,
) -> Result | None:
    """The result of a text that is strict JSON (an object or array) and valid against
    ``validator`` (or with no schema), from the pipeline's fast path
    (:func:`llmfix.pipeline.core.strict_document`) alone; ``None`` for any other text, which
    the whole pipeline checks. ``decoded``: ``Item.decoded``, the reader's strict decode
    of ``text``, taken instead of decoding it again. No deadline: the fast path does not
    check one (decoding and validation are not cut short)."""
    fast = strict_document(text, validator, options, {}, decoded)
    return fast if isinstance(fast, Result) else None


def _payload(item: Item, limits: BatchLimits) -> Payload | Outcome:
    """What to send a worker for ``item``, or its outcome when it is not to be checked."""
    if item.error is not None:
        return Outcome(item, None, item.error)
    if item.finish is not None and item.finish.kind == "refused":
        return Outcome(item, refused_result(item.finish))
    if len(item.text) > limits.max_item_size:
        error = codes.BATCH_TOO_LARGE.at(
            f"{len(item.text):,} characters is over --max-item-size {limits.max_item_size:,}",
        )
        return Outcome(item, None, error)
    return item.text, item.profile, item.tool, item.kind == "tool-result"


def _outcome(item: Item, done: Done, profiles: Mapping[str, Profile]) -> Outcome:
    result, error, anchor, seconds = done
    if result is not None and item.finish is not None:  # what the API said (stop reason)
        partial = profiles[item.profile].options.partial
        result = apply_finish(result, item.finish, partial=partial)
    if result is not None and item.diagnostics:  # bytes the reader replaced are a change
        from dataclasses import replace

        notes = reading_notes(item.diagnostics)
        if len(notes) != len(item.diagnostics):
            result = with_reading_changes(result, item.diagnostics)
            item = replace(item, diagnostics=notes)
    return build(Outcome, item=item, result=result, error=error, anchor=anchor, seconds=seconds)


# ------------------------------------------------------------------------ the pool

_WORKER: dict[str, Any] = {}


def _init_worker(profiles: Mapping[str, Profile], timeout: float | None, parent: int) -> None:
    # The parent handles Ctrl-C; a worker dying of it would break the pool mid-report.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent(parent)
    make_room()  # a spawned worker starts with the interpreter's recursion limit
    _WORKER["profiles"] = profiles
    _WORKER["timeout"] = timeout


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


def _run_chunk(payloads: list[Payload | None]) -> list[Done | None]:
    profiles = _WORKER["profiles"]
    timeout = _WORKER["timeout"]
    return [None if p is None else _check_payload(p, profiles, timeout) for p in payloads]


def run_items(
    items: Iterable[Item], profiles: Mapping[str, Profile], limits: BatchLimits | None = None
) -> Iterator[Outcome]:
    """Check every item; one :class:`Outcome` each, in input order (see the module doc)."""
    limits = limits or BatchLimits()
    jobs = limits.jobs if limits.jobs > 0 else cpu_count()
    source = iter(items)
    spent = 0.0
    checked = 0
    for item in source:
        prepared = _payload(item, limits)
        if isinstance(prepared, Outcome):
            yield prepared
            continue
        done = _check_payload(prepared, profiles, limits.item_timeout, item.decoded)
        outcome = _outcome(item, done, profiles)
        yield outcome
        spent += outcome.seconds
        checked += 1
        if jobs > 1 and spent >= limits.serial_budget:
            yield from _run_pool(source, profiles, limits, jobs, spent / checked)
            return


def _run_pool(
    source: Iterator[Item],
    profiles: Mapping[str, Profile],
    limits: BatchLimits,
    jobs: int,
    mean_seconds: float,
) -> Iterator[Outcome]:
    size = max(1, min(MAX_CHUNK, int(CHUNK_SECONDS / max(mean_seconds, 1e-6))))
    window = limits.window or 2 * jobs
    pool = _Pool(jobs, profiles, limits.item_timeout)
    pending: deque[tuple[list[Item], list[Payload | Outcome], Future[list[Done | None]]]] = deque()
    try:
        while True:
            chunk = _take(source, size)
            if chunk:
                prepared = [_payload(item, limits) for item in chunk]
                pending.append((chunk, prepared, pool.submit(prepared)))
            while pending and (len(pending) >= window or not chunk):
                yield from pool.collect(*pending.popleft(), pending)
            if not chunk:
                return
    finally:
        pool.shutdown()


def _take(source: Iterator[Item], size: int) -> list[Item]:
    chunk = []
    for item in source:
        chunk.append(item)
        if len(chunk) >= size:
            break
    return chunk


class _Pool:
    """A process pool that is rebuilt when a worker dies (at most ``MAX_POOL_RESTARTS``)."""

    def __init__(self, jobs: int, profiles: Mapping[str, Profile], timeout: float | None) -> None:
        self.jobs = jobs
        self.profiles = profiles
        self.timeout = timeout
        self.restarts = 0
        self.executor: ProcessPoolExecutor | None = self._start()

    def _start(self) -> ProcessPoolExecutor:
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(
            self.jobs,
            initializer=_init_worker,
            initargs=(self.profiles, self.timeout, os.getpid()),
        )

    def submit(self, prepared: list[Payload | Outcome]) -> Future[list[Done | None]]:
        from concurrent.futures import Future

        payloads = [None if isinstance(p, Outcome) else p for p in prepared]
        if self.executor is None:  # gave up on workers: run here
            done: Future[list[Done | None]] = Future()
            checked = [
                None if p is None else _check_payload(p, self.profiles, self.timeout)
                for p in payloads
            ]
            done.set_result(checked)
            return done
        return self.executor.submit(_run_chunk, payloads)

    def collect(
        self,
        chunk: list[Item],
        prepared: list[Payload | Outcome],
        future: Future[list[Done | None]],
        pending: deque[tuple[list[Item], list[Payload | Outcome], Future[list[Done | None]]]],
    ) -> Iterator[Outcome]:
        from concurrent.futures.process import BrokenProcessPool

        try:
            results = future.result()
        except BrokenProcessPool:
            self._restart(pending)
            error = codes.BATCH_WORKER_CRASHED.at(
                "the worker process checking this item died (out of memory, or a crash)",
            )
            results = [None] * len(chunk)
            prepared = [
                p if isinstance(p, Outcome) else Outcome(i, None, error)
                for i, p in zip(chunk, prepared, strict=True)
            ]
        for item, ready, done in zip(chunk, prepared, results, strict=True):
            if isinstance(ready, Outcome):
                yield ready
            elif done is not None:
                yield _outcome(item, done, self.profiles)

    def _restart(
        self, pending: deque[tuple[list[Item], list[Payload | Outcome], Future[list[Done | None]]]]
    ) -> None:
        self.shutdown()
        self.restarts += 1
        self.executor = self._start() if self.restarts <= MAX_POOL_RESTARTS else None
        for index, (chunk, prepared, _) in enumerate(pending):
            pending[index] = (chunk, prepared, self.submit(prepared))

    def shutdown(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
            self.executor = None


# -------------------------------------------------------------------- gates, baseline


@dataclass(frozen=True)
class Checked:
    """An outcome judged: why it fails the gates (if it does) and whether that is known."""

    outcome: Outcome
    failures: tuple[str, ...] = ()
    baselined: bool = False

    @property
    def failed(self) -> bool:
        """Fails the run: a gate failure the baseline does not already know about."""
        return bool(self.failures) and not self.baselined

    @property
    def item(self) -> Item:
        return self.outcome.item

    @property
    def status(self) -> str:
        return self.outcome.status


Fingerprint = tuple[str, str, str]


def fingerprints(item_key: str, status: str, diagnostics: Iterable[Diagnostic]) -> set[Fingerprint]:
    """What identifies an item's failure: its status and each error (code, JSON Pointer)."""
    found = {(item_key, "status", status)}
    found.update(
        (item_key, d.code, d.pointer or "") for d in diagnostics if d.severity is Severity.ERROR
    )
    return found


def key_root(config: str | None = None, start: str | None = None) -> str:
    """What baseline keys are relative to: the repository root (the nearest directory at or
    above ``start``, the working directory, holding ``.git``, as SARIF's URIs are), else the
    directory of the project ``config`` file, else the working directory."""
    here = os.path.realpath(start or os.getcwd())
    directory = here
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    if config is not None and not config.startswith("builtin:"):
        return os.path.dirname(os.path.realpath(config))
    return here


def stable_key(item: Item, root: str | None) -> str:
    """The item's :attr:`~llmfix.inputs.Item.key` with its file named relative to ``root``
    (``/`` separators), so that ``check data``, ``check $PWD/data`` and ``cd data; check .``
    give the same keys; a file outside ``root`` keeps its absolute path, stdin its name.
    With no ``root``: the key as the path was typed."""
    key, source = item.key, item.source
    if root is None or source.startswith("<") or not key.startswith(source):
        return key
    return _rooted_name(source, root, os.getcwd()) + key[len(source) :]


@functools.lru_cache(maxsize=256)
def _rooted_name(source: str, root: str, cwd: str) -> str:
    """``source`` (relative to ``cwd``) named relative to ``root``: once per file, which
    a JSONL file's records share (it looks at every link on the way)."""
    for path in (os.path.abspath(source), os.path.realpath(source)):
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            name = os.path.relpath(path, root)
            break
    else:
        name = os.path.realpath(source)
    return name.replace(os.sep, "/")


class Baseline:
    """Known failures from an earlier run: they are reported, but do not fail.

    Items are matched by their stable key (:func:`stable_key`: the batch ``custom_id``, the
    record's ``id``, or a hash of the answer, after the file's path relative to ``root``),
    so lines inserted above a known failure leave it known, and so does running from
    another directory. A baseline written before keys were relative to the root (its keys
    name files as they were typed then) still matches a run that names them the same way;
    one whose items have no ``key`` (written before keys existed) is matched by item id.
    """

    def __init__(self, known: set[Fingerprint], root: str | None = None) -> None:
        self.known = known
        self.root = root

    @classmethod
    def from_report(cls, report: Mapping[str, Any], root: str | None = None) -> Baseline:
        known: set[Fingerprint] = set()
        for entry in report.get("items") or []:
            if not isinstance(entry, Mapping):
                continue
            name = entry.get("key", entry.get("id"))
            if not isinstance(name, str):
                continue
            known.add((name, "status", str(entry.get("status"))))
            for diag in entry.get("diagnostics") or []:
                if isinstance(diag, Mapping) and diag.get("severity") == "error":
                    known.add((name, str(diag.get("code")), str(diag.get("pointer") or "")))
        return cls(known, root)

    def covers(self, outcome: Outcome) -> bool:
        item = outcome.item
        for name in (stable_key(item, self.root), item.key, item.id):
            if fingerprints(name, outcome.status, outcome.diagnostics) <= self.known:
                return True
        return False


def judge(
    outcome: Outcome,
    fail_on: FailOn = "invalid",
    max_risk: Risk | None = None,
    baseline: Baseline | None = None,
    *,
    partial: bool = False,
) -> Checked:
    """Apply the gates and the baseline to one outcome (``partial``: see ``gate_failures``)."""
    if outcome.result is None:
        error = outcome.error
        failures: tuple[str, ...] = (f"not checked ({error.code})" if error else "not checked",)
    else:
        failures = tuple(gate_failures(outcome.result, fail_on, max_risk, partial=partial))
    known = bool(failures) and baseline is not None and baseline.covers(outcome)
    return build(Checked, outcome=outcome, failures=failures, baselined=known)


# ---------------------------------------------------------------------- the summary

_NOT_VALID = frozenset({"invalid", "truncated", "refused", "unparseable", "error"})
_MAX_KEYS = 2000  # distinct keys kept per counter; the rest are tallied as "(other)"
_INDEX = re.compile(r"/\d+(?=/|$)")


def pointer_pattern(pointer: str) -> str:
    """A JSON Pointer with array indices as ``*``: ``/items/3/name`` → ``/items/*/name``."""
    return _INDEX.sub("/*", pointer)


def _bump(counter: Counter[Any], key: Any, by: int = 1) -> None:
    if key in counter or len(counter) < _MAX_KEYS:
        counter[key] += by
    else:
        counter["(other)"] += by


@dataclass
class Tally:
    """Counts for a set of checked items (the whole run, or one ``--group-by`` group)."""

    items: int = 0
    status: Counter[str] = field(default_factory=Counter)
    repairs: Counter[str] = field(default_factory=Counter)  # items needing each repair code
    # (code, pointer pattern); the pattern is None for errors about no place in the value
    errors: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    repairs_total: int = 0
    attempts: int = 0
    failed: int = 0
    baselined: int = 0
    seconds: float = 0.0

    def add(self, checked: Checked) -> None:
        outcome = checked.outcome
        self.items += 1
        self.status[outcome.status] += 1
        self.seconds += outcome.seconds
        self.failed += checked.failed
        self.baselined += checked.baselined and bool(checked.failures)
        result = outcome.result
        found = outcome.diagnostics if outcome.error or outcome.item.diagnostics else None
        if found is None:  # most items: the result's own, with no tuple made to hold them
            found = result.diagnostics if result is not None else ()
        repaired: set[str] = set()
        for d in found:
            if d.risk is not None and d.stage != "extract":
                self.repairs_total += 1
                repaired.add(d.code)
            elif d.severity is Severity.ERROR:
                where = None if d.pointer is None else pointer_pattern(d.pointer)
                _bump(self.errors, (d.code, where))
        for code in sorted(repaired):
            _bump(self.repairs, code)
        if result is not None:
            self.attempts += result.attempts

    @property
    def parsed(self) -> int:
        return self.items - sum(self.status[s] for s in ("unparseable", "refused", "error"))

    @property
    def valid(self) -> int:
        return sum(n for s, n in self.status.items() if s not in _NOT_VALID)

    def rate(self, count: int) -> float:
        return count / self.items if self.items else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "status": dict(sorted(self.status.items())),
            "parse_rate": round(self.rate(self.parsed), 4),
            "valid_rate": round(self.rate(self.valid), 4),
            "repairs": self.repairs_total,
            "repairs_per_item": round(self.repairs_total / self.items, 4) if self.items else 0.0,
            "items_by_repair": dict(self.repairs.most_common()),
            "errors": [
                {"code": code, "count": count}
                if pointer is None
                else {"code": code, "pointer": pointer, "count": count}
                for (code, pointer), count in self.errors.most_common()
            ],
            "llm_attempts": self.attempts,
            "failed": self.failed,
            "baselined": self.baselined,
        }


@dataclass
class BatchSummary:
    """The whole run's tally, and one per ``--group-by`` value when grouping."""

    total: Tally = field(default_factory=Tally)
    groups: dict[str, Tally] | None = None
    seconds: float = 0.0  # wall-clock time of the run

    def add(self, checked: Checked) -> None:
        self.total.add(checked)
        if self.groups is not None:
            key = checked.item.group if checked.item.group is not None else "(none)"
            if key not in self.groups and len(self.groups) >= _MAX_KEYS:
                key = "(other)"
            self.groups.setdefault(key, Tally()).add(checked)

    def to_dict(self) -> dict[str, Any]:
        out = self.total.to_dict()
        out["seconds"] = round(self.seconds, 3)
        if self.groups is not None:
            out["groups"] = {k: v.to_dict() for k, v in sorted(self.groups.items())}
        return out
