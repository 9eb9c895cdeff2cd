"""A `repair` run over its inputs: each file (or stdin) read, its answers repaired and
judged, the JSON written where the flags say, and the ``--report`` and ``--patch`` files.

:func:`check_outputs` refuses a bad combination of outputs before anything is read;
:func:`run_repair` runs the files (or ``--stream``), :func:`run_repair_jsonl` the records of
``--jsonl``. The answers themselves go through :mod:`llmfix.run.repair`. Results go to
stdout, diagnostics to stderr (as ``-q``/``-v`` say); the command only maps the exit code.
The ``--report`` is :mod:`llmfix.run.repair_report`'s.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmfix.batch.gate import gate_failures, writable
from llmfix.errors import ConfigError, InputError
from llmfix.files.atomic import write_atomic
from llmfix.files.containment import refuse_vcs, same_files
from llmfix.files.read import byte_limit
from llmfix.inputs import STDIN, STDIN_NAME, read_chunks, read_source
from llmfix.inputs.items import changed_only_by_reading, reading_notes, with_reading_changes
from llmfix.inputs.jsonl import JsonLines
from llmfix.model import ExitCode, Result, Status
from llmfix.run.notes import diagnostics_console, say
from llmfix.run.repair import (
    changed_answers,
    json_text,
    output_text,
    repair_input,
    stream_answer,
)

if TYPE_CHECKING:
    from rich.console import Console

    from llmfix.batch.judge import Checked
    from llmfix.inputs import Item
    from llmfix.model import Diagnostic
    from llmfix.reporters.console import PlainConsole
    from llmfix.run.llm import LlmRun
    from llmfix.run.repair import Answered
    from llmfix.run.settings import RepairRun


@dataclass(frozen=True, eq=False, repr=False)
class RepairOutputs:
    """Where `repair` writes: ``-o``, ``--in-place`` (``--backup``), the ``--report`` (a
    file name, or ``FORMAT:FILE``) and ``--patch`` files, and ``--explain`` on stderr;
    ``--stream`` (``--final``) prints snapshots of one answer instead."""

    output: Path | None = None
    in_place: bool = False
    backup: bool = False
    report: str | None = None
    patch: Path | None = None
    explain: bool = False
    stream: bool = False
    final: bool = False


def check_outputs(sources: list[str], outputs: RepairOutputs) -> None:
    """A combination of outputs that cannot work, or an output that is an input, is a
    usage error (:class:`ConfigError`) before anything is read."""
    output, in_place, backup = outputs.output, outputs.in_place, outputs.backup
    report = None
    if outputs.report is not None:  # the format its name asks for, known before any input
        # lazy: repair on a clean answer, repair --schema on a valid answer start without it
        from llmfix.reporters import report_target

        report = Path(report_target(outputs.report)[1])
    if in_place and output is not None:
        raise ConfigError("use either --in-place or --output, not both")
    if in_place and "-" in sources:
        raise ConfigError("--in-place needs files, not stdin")
    if backup and not in_place:
        raise ConfigError("--backup only makes sense with --in-place")
    if output is not None and len(sources) > 1:
        raise ConfigError("--output takes one input; use --in-place for several files")
    _refuse_outputs(sources, {"-o": output, "--report": report, "--patch": outputs.patch})
    stream, final = outputs.stream, outputs.final
    if (stream or final) and (not stream or len(sources) > 1 or in_place or output):
        raise ConfigError("--stream reads one input (stdin or a file) and prints to stdout")
    if stream and (outputs.report or outputs.patch or outputs.explain):
        raise ConfigError("--stream prints its result on stdout: no --report/--patch/--explain")


def run_repair(
    run: RepairRun, llm: LlmRun | None, sources: list[str], outputs: RepairOutputs
) -> ExitCode:
    """Repair each source (``-``: stdin), or with ``outputs.stream`` the one answer as it
    streams; ``llm``: the run's LLM repair, when on."""
    if outputs.stream:
        return _repair_stream(run, llm, sources[0], outputs.final)
    return _repair_all(run, llm, sources, outputs)


def _refuse_outputs(sources: list[str], outputs: dict[str, Path | None]) -> None:
    """An output that is an input, another output, or in a version-control directory is a
    usage error, before anything is read: it would be overwritten, or run as a hook."""

    inputs = same_files(s for s in sources if s != "-")
    named: dict[tuple[int, int] | str, str] = {}
    for flag, path in outputs.items():
        if path is None:
            continue
        refuse_vcs(str(path))
        where = f"{flag} {path}"
        try:
            found = path.stat()
            key: tuple[int, int] | str = (found.st_dev, found.st_ino)
        except OSError:
            key = str(path.resolve())
        if key in inputs:
            fix = "use --in-place to rewrite it" if flag == "-o" else "name another file"
            raise ConfigError(f"{where} is also an input of this run; {fix}")
        if key in named:
            raise ConfigError(f"{where} is also {named[key]}; give each output its own file")
        named[key] = where


def _repair_all(
    run: RepairRun, llm: LlmRun | None, sources: list[str], outputs: RepairOutputs
) -> ExitCode:

    output, in_place, patch = outputs.output, outputs.in_place, outputs.patch
    code = ExitCode.OK
    judged: list[Checked] = []  # every answer, for the --report
    patches: list[dict[str, Any]] = []
    show = _Shower(run, outputs.explain)
    # Several inputs to stdout: JSON Lines, one line per answer saying where it is from.
    lines = len(sources) > 1 and not in_place and output is None
    for path in sources:
        try:
            source = read_source(path, run.encoding, byte_limit(run.options.limits.max_size))
        except InputError as exc:
            say(f"error: {exc}")
            if outputs.report is not None:
                # lazy: repair on a clean answer, repair --schema on a valid answer start without it
                from llmfix.run.repair_report import unreadable

                judged.append(unreadable(path, str(exc)))
            if lines:
                line = {"source": path, "status": "error", "error": str(exc)}
                sys.stdout.write(json_text(line, None) + "\n")
            code = ExitCode.USAGE
            continue
        validator = run.validator_for(path)
        done = repair_input(run, llm, source.name, source.text, validator)
        if source.diagnostics:
            done = [_with_reading(run, source.diagnostics, answer) for answer in done]
        for item, result, failures, llm_record in done:
            label = source.name if item is None else item.id
            show(label, result, failures, item)
            if outputs.report is not None:
                # lazy: repair on a clean answer, repair --schema on a valid answer start without it
                from llmfix.run.repair_report import answer

                text = source.text if item is None else item.text
                judged.append(answer(source.name, label, text, result, failures, item, llm_record))
            patches.extend({"source": label, **op.to_json_patch()} for op in result.patch)
        if any(failures for _, _, failures, _ in done) and code is ExitCode.OK:
            code = ExitCode.FAILED
        if lines:
            for item, result, failures, _ in done:
                sys.stdout.write(_source_line(source.name, item, result, failures) + "\n")
            continue
        _write_answers(run, path, done, outputs, source.text)
    if outputs.report is not None:
        # lazy: repair on a clean answer, repair --schema on a valid answer start without it
        from llmfix.run.repair_report import write_report

        write_report(run, outputs.report, judged, None if llm is None else llm.usage())
    if patch is not None:
        _write_patch(patch, patches, len(sources))
    return code


def _with_reading(run: RepairRun, notes: tuple[Diagnostic, ...], done: Answered) -> Answered:
    """An answer with what reading its file found: replaced bytes are a change (the
    answer is at least ``repaired``, at risk safe) and the gate judges it again."""
    from dataclasses import replace

    item, result, failures, record = done
    result = with_reading_changes(result, notes)
    others = reading_notes(notes)
    if others:
        result = replace(result, diagnostics=others + result.diagnostics)
    if len(others) != len(notes):
        failures = gate_failures(
            result, run.fail_on, run.max_risk, partial=run.options.partial, codes=run.gate.codes
        )
    return item, result, failures, record


class _Shower:
    """Prints each result's diagnostics (and gate failures) on stderr, as -q/-v say."""

    def __init__(self, run: RepairRun, explain: bool) -> None:
        self.run = run
        self.explain = explain
        self.console: Console | PlainConsole | None = None

    def __call__(
        self, label: str, result: Result, failures: list[str], item: Item | None = None
    ) -> None:
        verbosity = self.run.verbosity
        if not (verbosity >= 0 or failures or result.errors):
            return
        if not (result.diagnostics or failures or verbosity > 0 or self.explain):
            return
        # lazy: repair on a clean answer, repair --schema on a valid answer start without it
        from llmfix.reporters.console import print_explanation, print_failures, print_result

        console = self.console = self.console or diagnostics_console()
        print_result(console, label, result, verbosity, item)
        if self.explain:
            print_explanation(console, label, result)
        print_failures(console, label, failures)


def _write_answers(
    run: RepairRun, path: str, done: list[Answered], outputs: RepairOutputs, original: str
) -> None:
    """Write what passed: one answer as JSON, several as JSON Lines; ``--in-place`` puts the
    repaired answers back into the response they came from. Nothing when any one fails;
    with ``--in-place``, nothing either when the file is valid as it is (left byte for
    byte, no backup)."""

    if not all(writable(r, failures) for _, r, failures, _ in done):
        return
    output, in_place, backup = outputs.output, outputs.in_place, outputs.backup
    if in_place:  # a symbolic link stays one: the file it leads to is rewritten
        path = _real_file(path)
    first = done[0][0]
    if in_place and first is not None:  # the response's own bytes, the repairs put back
        changed = changed_answers(done)
        if changed:
            import copy

            # lazy: repair on a clean answer, repair --schema on a valid answer start without it
            from llmfix.batch.writers import fixed_file

            record = copy.deepcopy(changed[0][0].record)
            write_atomic(path, fixed_file(path, record, changed), backup=backup, keep_mode=True)
        return
    if len(done) == 1:
        text = output_text(done[0][1], run.indent)
    else:
        text = "".join(json_text(r.value, None) + "\n" for _, r, _, _ in done)
    unchanged = all(r.status is Status.VALID or changed_only_by_reading(r) for _, r, _, _ in done)
    if in_place and (text == original or unchanged):
        if run.verbosity > 0:
            say(f"{path}: already valid; left unchanged")
    elif in_place:
        write_atomic(path, text, backup=backup, keep_mode=True)
    elif output is not None:
        write_atomic(output, text)
    else:
        sys.stdout.write(text)


def _real_file(path: str) -> str:
    import os

    return os.path.realpath(path) if os.path.islink(path) else path


def _repair_stream(run: RepairRun, llm: LlmRun | None, path: str, final: bool) -> ExitCode:
    """``--stream``: snapshots as JSON lines while the answer arrives, then the result."""

    name = STDIN_NAME if path == STDIN else path
    validator = run.validator_for(path)
    try:
        chunks = read_chunks(path, run.encoding, limit=byte_limit(run.options.limits.max_size))
        result, failures, problems = stream_answer(
            run, llm, chunks, name, validator, sys.stdout, final=final
        )
    except BrokenPipeError:
        # Whoever read stdout went away (`| head -3`): stop as a pipe's writer does.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.FAILED
    for problem in problems:
        say(f"{name}: {problem}")
    if run.verbosity >= 0 or failures or result.errors:
        # lazy: repair on a clean answer, repair --schema on a valid answer start without it
        from llmfix.reporters.console import print_failures, print_result

        console = diagnostics_console()
        print_result(console, name, result, run.verbosity)
        print_failures(console, name, failures)
    return ExitCode.FAILED if failures else ExitCode.OK


def _source_line(name: str, item: Item | None, result: Result, failures: list[str]) -> str:
    """One JSON Lines record when there are several inputs: ``source`` (and the answer's
    ``id``), ``status`` and the ``value`` (``values`` with ``--pick all``), or ``failures``
    instead of a value the gate did not allow."""

    line: dict[str, Any] = {"source": name}
    if item is not None:
        line["id"] = item.id
    line["status"] = result.status.value
    if not writable(result, failures):
        line["failures"] = failures or [f"status {result.status.value}"]
    elif result.values is not None:
        line["values"] = list(result.values)
    else:
        line["value"] = result.value
    return json_text(line, None)


def run_repair_jsonl(run: RepairRun, files: list[str] | None) -> ExitCode:
    """``--jsonl``: stdin, record by record, one result line each as it is read."""
    # lazy: repair on a clean answer, repair --schema on a valid answer start without it
    from llmfix.run.repair_lines import repair_jsonl

    if files and files != ["-"]:
        raise ConfigError("--jsonl reads records from stdin; pipe the file in")
    if run.tools is not None:
        raise ConfigError("--jsonl does not take --tools yet; use `llmfix check --tools`")
    # Each line read with a bound (a line over it is an error line, read no further).
    lines = JsonLines(sys.stdin.buffer, None, byte_limit(run.options.limits.max_size))
    return repair_jsonl(
        (line for _, line in lines),
        sys.stdout,
        notes=lines.notes,
        options=run.options,
        validator=run.validator_for("-"),
        field=run.field,
        fail_on=run.fail_on,
        max_risk=run.max_risk,
        fail_codes=run.gate.codes,
    )


def _write_patch(path: Path, patches: list[dict[str, Any]], n_sources: int) -> None:

    if n_sources == 1:
        ops: list[dict[str, Any]] = [{k: v for k, v in p.items() if k != "source"} for p in patches]
    else:
        ops = patches
    write_atomic(path, json_text(ops, 2) + "\n")
