"""A `check` run: many files of model output in, reports and a verdict out.

:func:`run_check` walks the paths (or the config's ``checks`` globs), reads each file's
items as its ``checks`` rule says, checks them in the local pool or on Ray or Spark,
judges them by the gate, and hands each to every reporter (``--format``/``-o`` and each
``--report``), the ``--write-fixed``/``--in-place`` writer and the ``--results`` rows.
The command (:mod:`llmfix.cli.check`) builds the :class:`~llmfix.run.settings.CheckRun`
and turns the exit code it gets back into the process's.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from llmfix import codes
from llmfix.batch.core import BatchLimits, FieldHints, Profile
from llmfix.batch.judge import Baseline, BatchSummary, Judging, Tallied, judge, key_root
from llmfix.errors import ConfigError, PathRefused
from llmfix.files.containment import refuse_vcs
from llmfix.files.read import byte_limit
from llmfix.inputs import (
    KINDS,
    MESSAGES,
    Item,
    LineBatch,
    ReadOptions,
    WalkNotes,
    count_records,
    discover_files,
    field_tokens,
    is_url,
    items_from_file,
    items_or_lines,
)
from llmfix.model import ExitCode
from llmfix.options import make_options
from llmfix.reporters import report_target, reporter_class
from llmfix.reporters.base import ReportOptions, output_stream
from llmfix.run.globs import rule_files, rule_for
from llmfix.run.notes import say, stderr_console

if TYPE_CHECKING:
    from llmfix.batch.core import Outcome
    from llmfix.batch.judge import Need
    from llmfix.batch.rates import RateResults, RunPoint
    from llmfix.batch.writers import FixWriter, ResultsWriter
    from llmfix.inputs import Kind as InputKind
    from llmfix.inputs import Messages as InputMessages
    from llmfix.reporters.base import Reporter
    from llmfix.run.config_file import CheckRule, Settings
    from llmfix.run.llm import LlmRun
    from llmfix.run.settings import CheckRun
    from llmfix.schema.validate import SchemaValidator
    from llmfix.toolcalls.registry import ToolRegistry


def run_check(
    run: CheckRun,
    stdout: TextIO | None = None,
    llm: LlmRun | None = None,
) -> ExitCode:
    """Run a check as ``run`` says (see :func:`llmfix.run.settings.build_run`);
    reporters write to ``stdout`` or ``--output``, and to each ``--report`` file.

    With ``llm``, items the rules left broken are sent to the model (in this process, one
    call budget for the run) before they are judged, reported and written back.
    ``run.tool_calls``: read each answer for tool calls (``--tool-calls``, see ``Profile``).
    ``run.engine`` says where items are checked (``--engine``), ``run.results`` where
    result rows go (``--results``).

    A run that matched no item is a usage error (``ConfigError``) unless ``allow_empty``:
    a wrong path or glob must not pass as "all passed".
    """

    settings, verbosity, tool_calls, gate = run.config, run.verbosity, run.tool_calls, run.gate
    stdout = stdout or sys.stdout
    allow_empty = run.allow_empty
    also = [(fmt, Path(path)) for fmt, path in map(report_target, run.reports)]
    if tool_calls and (settings.write_fixed or settings.in_place or settings.schema):
        raise ConfigError(
            "--tool-calls checks the calls, not an answer: no --schema, --write-fixed "
            "or --in-place with it"
        )
    profiles, readers = _profiles(run)
    notes = WalkNotes()
    links: set[str] = set()  # the files that are symbolic links (a walk knows them)
    files = _files(settings, run.follow_symlinks, notes, links)
    _warn_skipped(notes)
    if not files and not allow_empty:
        raise ConfigError(_nothing_matched(settings, "no files"))
    _refuse_outputs(settings, run.reports, files, links)
    root = key_root(settings.config)
    baseline = _baseline(settings.baseline, root)
    earlier = _earlier(run.compare)
    history = _history(run.history)
    limits = BatchLimits(
        jobs=settings.jobs,
        item_timeout=settings.timeout,
        max_item_size=settings.max_item_size,
        input_size=_input_size(files),
    )
    fixer = _fixer(settings, files, notes)
    rows = _results_writer(run)
    if run.engine != "local" and fixer is not None:
        raise ConfigError("--write-fixed and --in-place need --engine local")
    summary = BatchSummary(groups={} if settings.group_by else None)
    hints = FieldHints(settings.field, settings.group_by)
    output = Path(settings.output) if settings.output else None
    start = time.perf_counter()
    with contextlib.ExitStack() as files_open:
        out = files_open.enter_context(output_stream(output, stdout))
        options = _report_options(run, out, baseline, output, root)
        options = replace(options, history=history)
        reporters = _reporters(settings.format, out, options)
        for fmt, path in also:
            extra = files_open.enter_context(output_stream(path, stdout))
            reporters.append(reporter_class(fmt)(extra, replace(options, color=False)))
        with _progress(settings, verbosity, files, notes) as update:
            records = 0
            last: tuple[str, int] | None = None
            judging = _judging(run, baseline, llm, reporters, fixer, rows)
            found = _outcomes(
                run.engine, files, settings, readers, profiles, limits, notes, judging
            )
            for outcome in found:
                if isinstance(outcome, Tallied):  # judged and counted by a worker
                    summary.add_tallied(outcome)
                    hints.add(outcome.item)
                    record = (outcome.item.source, outcome.item.line)
                    if record != last:
                        records += 1
                        last = record
                    update(records, summary.total.items)
                    continue
                if llm is not None:
                    outcome = llm.fix(outcome, profiles, gate.max_risk)
                partial = profiles[outcome.item.profile].options.partial
                checked = judge(
                    outcome,
                    gate.fail_on,
                    gate.max_risk,
                    baseline,
                    partial=partial,
                    codes=gate.codes,
                )
                summary.add(checked)
                hints.add(outcome.item)
                for reporter in reporters:
                    reporter.add(checked)
                if fixer is not None:
                    fixer.add(checked)
                if rows is not None:
                    rows.add(outcome)
                record = (outcome.item.source, outcome.item.line)
                if record != last:
                    records += 1
                    last = record
                update(records, summary.total.items)
        if fixer is not None:
            fixer.close()
        if rows is not None:
            rows.close()
        summary.seconds = time.perf_counter() - start
        summary.finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
        summary.rates = _rates(run, summary, earlier)
        if llm is not None:
            summary.llm = llm.usage()
        for reporter in reporters:
            reporter.finish(summary)
    for hint in hints.hints():
        say(f"hint: {hint}")
    if not summary.total.items and not allow_empty:
        raise ConfigError(_nothing_matched(settings, "no items (the files are empty)"))
    if settings.format == "baseline":  # recording the failures is what was asked: done
        return ExitCode.OK
    return ExitCode.FAILED if summary.failed else ExitCode.OK


def _input_size(files: list[str]) -> int:
    """Bytes of the files to check, as far as a look at each says (stdin, a URL, a file
    that cannot be looked at: 0); the pool starts early on a large input (see
    ``BatchLimits.input_size``). Only a figure: nothing is read here."""
    total = 0
    for path in files:
        if path == "-" or is_url(path):
            continue
        with contextlib.suppress(OSError):
            total += os.path.getsize(path)
    return total


def _judging(
    run: CheckRun,
    baseline: Baseline | None,
    llm: LlmRun | None,
    reporters: list[Reporter],
    fixer: FixWriter | None,
    rows: ResultsWriter | None,
) -> Judging | None:
    """What the pool's workers may judge themselves (see
    :class:`~llmfix.batch.judge.Judging`): nothing when every item is needed here whole
    (a report of every item, ``--write-fixed``, ``--results``, LLM repair) or when its
    verdict needs more than its result (a baseline)."""
    if baseline is not None or llm is not None or fixer is not None or rows is not None:
        return None
    wanted = {reporter.needs() for reporter in reporters}
    if "all" in wanted:
        return None
    gate = run.gate
    need: Need = "failing" if "failing" in wanted else "none"
    return Judging(gate.fail_on, gate.max_risk, gate.codes, need)


def _history(directory: str | None) -> tuple[RunPoint, ...]:
    """``--history DIR``: the earlier runs' reports, oldest first."""
    if directory is None:
        return ()
    # lazy: check without --history starts without it
    from llmfix.reporters.trend import read_history

    return read_history(directory)


def _earlier(path: str | None) -> tuple[str, dict[str, Any]] | None:
    """``--compare OLD.json``: its name and summary, read before the run (a file that is no
    ``-f json`` report of a check run is a usage error, in one line)."""
    if path is None:
        return None
    # lazy: check without --compare starts without it
    from llmfix.batch.rates import check_summary

    # lazy: check without --compare starts without it
    from llmfix.reporters.report import read_report_head

    return path, check_summary(read_report_head(Path(path), "--compare"), f"--compare {path}")


def _rates(
    run: CheckRun, summary: BatchSummary, earlier: tuple[str, dict[str, Any]] | None
) -> RateResults | None:
    """The rate gates applied to the run's tallies, and the comparison with ``earlier``."""
    if not run.rate_gates and earlier is None:
        return None
    # lazy: check without --max-rate starts without it
    from llmfix.batch.rates import RateResults, compare, evaluate

    counts = summary.counts()
    results = RateResults(
        gates=evaluate(run.rate_gates, counts, run.confidence),
        significant_only=run.significant_only,
        fail_on_regression=run.fail_on_regression,
        confidence=run.confidence,
    )
    if earlier is not None:
        results.compared_with = earlier[0]
        results.comparison = compare(earlier[1], counts, run.confidence)
    return results


def _nothing_matched(settings: Settings, what: str) -> str:
    """One line naming the paths and globs that matched nothing."""
    paths = " ".join(settings.paths) or "the config's checks"
    globs = [f"--include {g!r}" for g in settings.include]
    globs += [f"--exclude {g!r}" for g in settings.exclude]
    where = f"{paths} ({', '.join(globs)})" if globs else paths
    return f"{what} to check in {where}; pass --allow-empty if that is expected"


def _profiles(run: CheckRun) -> tuple[dict[str, Profile], dict[str, ReadOptions]]:
    """One profile (schema, tools, options) and one way of reading per ``checks`` rule."""

    settings, gate, tool_calls = run.config, run.gate, run.tool_calls
    cache: dict[str, tuple[ToolRegistry, dict[str, SchemaValidator]]] = {}
    profiles: dict[str, Profile] = {}
    readers: dict[str, ReadOptions] = {}
    rules: list[tuple[str, CheckRule | None]] = [("", None)]
    rules += [(f"rule{i}", rule) for i, rule in enumerate(settings.checks)]
    for key, rule in rules:
        ruled = settings.ruled(rule)
        messages, kind = ruled.messages, ruled.kind
        if messages not in MESSAGES:
            raise ConfigError(f"--messages must be one of {', '.join(MESSAGES)}, not {messages!r}")
        if kind not in KINDS:
            raise ConfigError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
        field, group_by, schema, tools = ruled.field, ruled.group_by, ruled.schema, ruled.tools
        for spec in (field, group_by):
            if spec is not None:
                field_tokens(spec)
        options = gate.options(make_options(**ruled.options))
        registry = _tool_registry(tools, options.allow_remote_refs, cache) if tools else None
        outputs: dict[str, SchemaValidator] = {}
        for name in registry[0].output_names if registry is not None else ():
            found = registry[0].output_validator_for(name) if registry is not None else None
            if found is not None:
                outputs[name] = found
        readers[key] = ReadOptions(
            field,
            cast("InputMessages", messages),
            cast("InputKind", kind),
            group_by,
            settings.encoding,
            tool_results=bool(outputs),
            max_bytes=byte_limit(settings.max_item_size),
        )
        profiles[key] = Profile(
            validator=run.validators.get(schema, options.allow_remote_refs) if schema else None,
            options=options,
            tools=registry[1] if registry else None,
            tool_calls=tool_calls,
            registry=registry[0] if registry and tool_calls else None,
            outputs=outputs or None,
        )
    return profiles, readers


def _tool_registry(
    path: str, allow_remote: bool, cache: dict[str, tuple[ToolRegistry, dict[str, SchemaValidator]]]
) -> tuple[ToolRegistry, dict[str, SchemaValidator]]:
    """A tools file (see ``llmfix.toolcalls.registry``), and its tool name → compiled
    parameters schema."""
    # lazy: check, check -f json start without it
    from llmfix.toolcalls.registry import ToolRegistry

    key = f"tools:{allow_remote}:{path}"
    if key not in cache:
        registry = ToolRegistry.load(path, allow_remote=allow_remote)
        validators = {name: registry.validator_for(name) for name in registry.names}
        cache[key] = registry, {name: v for name, v in validators.items() if v is not None}
    found: tuple[ToolRegistry, dict[str, SchemaValidator]] = cache[key]
    return found


def _files(
    settings: Settings,
    follow_symlinks: bool = False,
    notes: WalkNotes | None = None,
    links: set[str] | None = None,
) -> list[str]:
    """The files to check: the paths given (flags, else the config's ``paths``), else the
    config's ``checks`` globs, walked as :func:`llmfix.inputs.discover_files` says; an
    untrusted config's own paths never lead out of its folder."""

    paths = list(settings.paths)
    confine = None
    if not paths and settings.checks:
        paths = list(rule_files(settings, follow_symlinks=follow_symlinks, notes=notes))
        if not paths:
            raise ConfigError(f"{settings.config}: no file matches the checks' globs")
    elif not settings.trusted and "paths" not in settings.flagged:
        confine = settings.base
    if not paths:
        raise ConfigError("no paths given (and no config file with paths or checks)")
    if paths.count("-") > 1:
        raise ConfigError("stdin ('-') can be read once")
    # The run's own schema, tools, baseline and config are not inputs to check (its
    # outputs must not be inputs at all: see _refuse_outputs).
    own = {settings.schema, settings.tools, settings.baseline, settings.config}
    own |= {rule.schema for rule in settings.checks} | {rule.tools for rule in settings.checks}
    skip = {os.path.realpath(p) for p in own if p and not p.startswith("builtin:")}
    links = set() if links is None else links  # discovery fills it (a walk: for free)
    found = discover_files(
        paths,
        settings.include,
        settings.exclude,
        links,
        follow_symlinks=follow_symlinks,
        confine=confine,
        notes=notes,
    )
    names = {os.path.basename(p) for p in skip}
    return [f for f in found if not _one_of(f, skip, names, links)]


def _one_of(path: str, files: set[str], names: set[str], links: set[str]) -> bool:
    """Whether ``path`` is one of ``files`` (real paths; ``names``: their file names). A
    file that is no symbolic link keeps its name in its real path: only one named like one
    of them, or a link, needs the real path (a stat per directory above it)."""
    if path == "-" or (os.path.basename(path) not in names and path not in links):
        return False
    return os.path.realpath(path) in files


def _refuse_outputs(
    settings: Settings, reports: tuple[str, ...], files: list[str], links: set[str]
) -> None:
    """A report file that is also an input of the run (or another report, the schema, the
    tools or config file, or in a version-control directory) is a usage error, before
    anything is read or written. (Writing a new ``--baseline`` over the old one is not.)"""

    taken: dict[str, str] = {}  # real path → what the file is, or the flag naming it
    read = [("the schema", settings.schema), ("the tools file", settings.tools)]
    read += [("the schema", rule.schema) for rule in settings.checks]
    read += [("the tools file", rule.tools) for rule in settings.checks]
    for what, path in [*read, ("the config file", settings.config)]:
        if path and not path.startswith("builtin:"):
            taken[os.path.realpath(path)] = f"{what} ({path})"
    outputs = [("-o" if "output" in settings.flagged else "output:", settings.output)]
    outputs += [("--report", report_target(r)[1]) for r in reports]
    written: dict[str, str] = {}
    for flag, path in outputs:
        if path is None or path == "-":
            continue
        refuse_vcs(path)
        real = os.path.realpath(path)
        if real in taken:
            raise ConfigError(f"{flag} {path} is also {taken[real]}: give it a file of its own")
        taken[real] = written[real] = f"{flag} {path}"
    if not written:
        return
    names = {os.path.basename(p) for p in written}
    for file in files:
        if _one_of(file, set(written), names, links):
            where = written[os.path.realpath(file)]
            raise ConfigError(
                f"{where} is also an input of this run ({file}); write it outside the "
                "files checked, or leave it out with --exclude"
            )


def _warn_skipped(notes: WalkNotes) -> None:
    """One warning per path discovery passed over (a symbolic link, a path outside)."""
    shown = sorted(notes.skipped.items())
    for path, why in shown[:_SKIPPED_SHOWN]:
        sys.stderr.write(f"llmfix: warning: skipped {path}: {why}\n")
    if len(shown) > _SKIPPED_SHOWN:
        sys.stderr.write(f"llmfix: warning: skipped {len(shown) - _SKIPPED_SHOWN} more paths\n")


_SKIPPED_SHOWN = 20


def _items(
    files: list[str],
    settings: Settings,
    readers: dict[str, ReadOptions],
    notes: WalkNotes | None = None,
    *,
    lines: bool = False,
) -> Iterator[Item | LineBatch]:
    """The items of every file, in order; with ``lines``, a JSON Lines file's lines come
    unparsed, in batches its pool's workers parse (see :func:`~llmfix.inputs.items_or_lines`).
    """
    read = items_or_lines if lines else items_from_file

    unlisted = {os.path.normpath(k): v for k, v in notes.unlisted.items()} if notes else {}
    within = notes.within if notes else {}  # where each file was listed: read it there
    for path in files:
        index = rule_for(settings, path)
        key = "" if index is None else f"rule{index}"
        problem = unlisted.get(os.path.normpath(path)) if unlisted else None
        if problem is not None:  # a folder that could not be listed: not a silent pass
            error = codes.INPUT_UNREADABLE.at(problem)
            yield Item(id=path, source=path, line=1, text="", kind="file", error=error, profile=key)
            continue
        yield from read(path, readers[key], key, within.get(path))


def _outcomes(
    engine: str,
    files: list[str],
    settings: Settings,
    readers: dict[str, ReadOptions],
    profiles: dict[str, Profile],
    limits: BatchLimits,
    notes: WalkNotes | None = None,
    judging: Judging | None = None,
) -> Iterator[Outcome | Tallied]:
    """Every item's outcome, in input order: in the local pool, or on Ray or Spark. With
    ``judging``, the pool's workers judge and count the items the run does not need whole
    (each a :class:`~llmfix.batch.judge.Tallied`)."""
    # lazy: check --baseline, check of a missing path start without it
    from llmfix.batch.pool import run_items

    if engine == "local":
        if judging is None:
            return run_items(_items(files, settings, readers, notes), profiles, limits)
        # Every item judged where it is checked, but for those the run needs whole: a
        # worker can parse the records too, and this process reads lines and merges.
        lines = limits.jobs != 1
        items = _items(files, settings, readers, notes, lines=lines)
        return run_items(items, profiles, limits, judging)
    # lazy: check, check -f json start without it
    from llmfix.engines import Job, plan_units, run_engine

    keys = [(f, "" if (i := rule_for(settings, f)) is None else f"rule{i}") for f in files]
    within = notes.within if notes else {}
    job = Job(tuple(plan_units(keys, within)), readers, profiles, limits)
    return run_engine(engine, job, limits.jobs)


def _results_writer(run: CheckRun) -> ResultsWriter | None:
    # lazy: check --baseline, check of a missing path start without it
    from llmfix.batch.writers import ResultsWriter

    return ResultsWriter(Path(run.results), run.results_format) if run.results else None


def _baseline(path: str | None, root: str) -> Baseline | None:
    if path is None:
        return None
    # lazy: check, check --schema start without it
    from llmfix.reporters.report import read_report

    return Baseline.from_report(read_report(Path(path)), root)


def _report_options(
    run: CheckRun, out: TextIO, baseline: Baseline | None, output: Path | None, root: str
) -> ReportOptions:

    color = output is None and out.isatty() and "NO_COLOR" not in os.environ
    group_by = run.config.group_by
    return ReportOptions(
        run.verbosity, baseline is not None, color, group_by, run.max_annotations, root
    )


def _reporters(fmt: str, out: TextIO, options: ReportOptions) -> list[Reporter]:
    """The chosen reporter, plus the text summary on stderr when that one is for machines."""
    # lazy: check --baseline, check of a missing path start without it
    from llmfix.reporters.text import TextReporter

    cls = reporter_class(fmt)
    if cls is TextReporter:
        return [TextReporter(out, options)]
    # The summary goes to stderr, also with -q (which means "the summary only").
    err_color = sys.stderr.isatty() and "NO_COLOR" not in os.environ
    summary_only = replace(options, verbosity=-1, color=err_color)
    return [cls(out, options), TextReporter(sys.stderr, summary_only)]


def _progress(settings: Settings, verbosity: int, files: list[str], notes: WalkNotes) -> Any:
    """A progress bar over the records of every file (each JSONL line is one)."""
    # lazy: check --baseline, check of a missing path start without it
    from llmfix.reporters.console import progress_bar

    console = None
    total = 0
    if settings.progress and verbosity >= 0 and sys.stderr.isatty():
        kind = cast("InputKind", settings.kind)  # checked by _profiles
        total = sum(count_records(f, kind, notes.within.get(f)) for f in files)
        console = stderr_console() if total > 1 else None
    return progress_bar(console, total)


def _fixer(settings: Settings, files: list[str], notes: WalkNotes) -> FixWriter | None:
    """What writes the repaired files; it reads each input again only where discovery
    listed it (``notes.within``), as the check did."""
    # lazy: check --baseline, check of a missing path start without it
    from llmfix.batch.writers import FixWriter

    if settings.in_place:
        if "-" in files:
            raise ConfigError("--in-place needs files, not stdin")
        return FixWriter(None, within=notes.within, refused=_warn_refused)
    if settings.write_fixed:
        return FixWriter(
            Path(settings.write_fixed),
            inputs=files,
            refused=_warn_refused,
            within=notes.within,
        )
    return None


def _warn_refused(refused: PathRefused) -> None:
    """A repaired copy the mirror refused: named, and the rest are written."""
    sys.stderr.write(f"llmfix: warning: {refused}\n")
