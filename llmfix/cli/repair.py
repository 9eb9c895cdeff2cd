"""`llmfix repair`: raw model responses in, repaired JSON out."""

# No ``from __future__ import annotations`` here: Typer would compile and evaluate the text
# of every option's annotation on each run, twice (about 6 ms for the fifty options of
# `repair`); evaluated once at import they cost a third of that. Names imported only for
# type checking are quoted.
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from llmfix.cli.common import (
    BaseUrlOption,
    MaxLlmCallsOption,
    ModelOption,
    NoCacheOption,
    ProviderOption,
    TrustConfigOption,
    app,
    diagnostics_console,
    dump_json,
    fail,
    print_llm_totals,
    say,
    tolerant_streams,
    warn_untrusted,
)
from llmfix.errors import ConfigError, InputError, LlmfixError
from llmfix.model import ExitCode, Result, Status
from llmfix.run.repair import start_llm
from llmfix.run.settings import (
    Emit,
    FailOnChoice,
    Kind,
    Messages,
    ParserEngine,
    Pick,
    RiskChoice,
    RunSettings,
    ToolFormat,
    value_of,
)

if TYPE_CHECKING:
    from rich.console import Console

    from llmfix.inputs import Item
    from llmfix.model import Diagnostic
    from llmfix.reporters.console import PlainConsole
    from llmfix.run.llm import LlmRun
    from llmfix.run.repair import Done


@app.command()
def repair(
    files: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional on 3.10
        typer.Argument(help="Raw model responses to repair; '-' or nothing reads stdin."),
    ] = None,
    schema: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--schema",
            "-s",
            help="JSON Schema (JSON/YAML file, an OpenAI/Anthropic tool or response_format "
            "definition, or builtin:NAME — see `llmfix schemas`).",
        ),
    ] = None,
    allow_remote_refs: Annotated[
        bool,
        typer.Option(
            "--allow-remote-refs",
            help="Fetch the schema's http(s) $ref targets (off: they are refused).",
        ),
    ] = False,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--output", "-o", help="Write the JSON here instead of stdout (one input)."),
    ] = None,
    in_place: Annotated[
        bool, typer.Option("--in-place", help="Replace each input file with its repaired JSON.")
    ] = False,
    backup: Annotated[
        bool, typer.Option("--backup", help="With --in-place, keep the original as FILE.bak.")
    ] = False,
    report: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--report", help="Write a report: .json, .yaml/.yml, or .html (a page)."),
    ] = None,
    patch: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--patch", help="Write the schema repairs as an RFC 6902 JSON Patch."),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show each schema repair, before → after, on stderr.")
    ] = False,
    indent: Annotated[int, typer.Option("--indent", help="Indentation of the JSON output.")] = 2,
    compact: Annotated[bool, typer.Option("--compact", help="Print JSON on one line.")] = False,
    pick: Annotated[
        Pick,
        typer.Option("--pick", help="Which JSON value to keep (all → JSON Lines)."),
    ] = Pick.BEST,
    fail_on: Annotated[
        FailOnChoice,
        typer.Option("--fail-on", help="Exit 1 when the result is at least this bad."),
    ] = FailOnChoice.INVALID,
    max_risk: Annotated[
        Optional[RiskChoice],  # noqa: UP045
        typer.Option(
            "--max-risk",
            help="Exit 1 when a repair riskier than this was needed; schema rules above it "
            "are not applied.",
        ),
    ] = None,
    disable_rule: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--disable-rule", help="Turn a schema repair rule off (repeatable)."),
    ] = None,
    rules: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--rules", help="Comma-separated schema repair rules to use (default: all)."),
    ] = None,
    no_schema_repair: Annotated[
        bool, typer.Option("--no-schema-repair", help="Validate only; make no schema repairs.")
    ] = False,
    partial: Annotated[
        bool,
        typer.Option("--partial", help="Output cut off mid-stream: keep what is complete."),
    ] = False,
    max_depth: Annotated[int, typer.Option("--max-depth", help="Nesting depth limit.")] = 500,
    max_size: Annotated[
        int, typer.Option("--max-size", help="Characters given to the lenient parser at most.")
    ] = 10_000_000,
    time_budget: Annotated[
        float,
        typer.Option(
            "--time-budget",
            help="Seconds per stage of work on one answer: extraction, parsing (each "
            "candidate), schema repair, a tool-call check.",
        ),
    ] = 5.0,
    engine: Annotated[
        ParserEngine,
        typer.Option(
            "--engine", help="Lenient parser: llmfix (linear, exact spans) or json-repair."
        ),
    ] = ParserEngine.LLMFIX,
    encoding: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--encoding", help="Decode inputs with this encoding (default: UTF-8)."),
    ] = None,
    tools: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--tools",
            help="Read tool calls and check them against these tools (OpenAI or Anthropic "
            "tools list, MCP tools/list result; JSON or YAML).",
        ),
    ] = None,
    tool_calls: Annotated[
        bool,
        typer.Option(
            "--tool-calls",
            help="Read the tool calls of the answer (any known format, detected) and print "
            "them; without --tools their names and arguments are not checked.",
        ),
    ] = False,
    tool_format: Annotated[
        Optional[ToolFormat],  # noqa: UP045
        typer.Option("--tool-format", help="Force one tool-call format (default: detect)."),
    ] = None,
    salvage: Annotated[
        bool, typer.Option("--salvage", help="Repair a tool call cut off by truncation (a guess).")
    ] = False,
    expect_sequence: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--expect-sequence", help="Tool names the calls must follow, e.g. a,b,c."),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Tool-call warnings fail the result too.")
    ] = False,
    emit: Annotated[
        Emit,
        typer.Option("--emit", help="Tool-call output shape."),
    ] = Emit.CANONICAL,
    jsonl: Annotated[
        bool,
        typer.Option("--jsonl", help="Read JSON Lines from stdin; write one result per record."),
    ] = False,
    field: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--field", help="Where the text is in each record or JSON file: /pointer or a.b.0."
        ),
    ] = None,
    kind: Annotated[
        Kind,
        typer.Option(
            "--kind",
            help="Read inputs as (auto: an API response JSON is read for its answers, "
            "anything else is the answer).",
        ),
    ] = Kind.AUTO,
    messages: Annotated[
        Messages, typer.Option("--messages", help="Transcript turns to repair.")
    ] = Messages.LAST,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream",
            help="Read the answer as it streams (raw text, OpenAI/Anthropic SSE, Ollama "
            "NDJSON; detected) and print one JSON line per snapshot.",
        ),
    ] = False,
    final: Annotated[
        bool, typer.Option("--final", help="With --stream: print only the final result.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print errors only.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Print info diagnostics and hints too.")
    ] = False,
    llm: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option(
            "--llm/--no-llm",
            help="Ask a model to repair what rules cannot (default: on when a trusted "
            "config's llm: section says so; a project file alone never turns it on).",
        ),
    ] = None,
    model: ModelOption = None,
    provider: ProviderOption = None,
    base_url: BaseUrlOption = None,
    max_attempts: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--max-attempts", help="Model repair attempts per response (default 2)."),
    ] = None,
    no_cache: NoCacheOption = False,
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Record prompts and answers unredacted.")
    ] = False,
    save_prompts: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--save-prompts", help="Write each model attempt to a JSON file in DIR."),
    ] = None,
    max_llm_calls: MaxLlmCallsOption = None,
    trust_config: TrustConfigOption = False,
) -> None:
    """Repair raw model responses: JSON on stdout, diagnostics on stderr.

    Exit codes: 0 clean, 1 what --fail-on/--max-risk name (or no JSON found),
    2 usage, config or schema error.
    """
    tolerant_streams()
    from llmfix.run.settings import LlmFlags, RepairFlags, repair_config, repair_settings

    sources = files or ["-"]
    flags = RepairFlags(
        schema=schema,
        allow_remote_refs=allow_remote_refs,
        pick=pick.value,
        fail_on=fail_on.value,
        max_risk=value_of(max_risk),
        disable_rule=tuple(disable_rule or ()),
        rules=rules,
        no_schema_repair=no_schema_repair,
        partial=partial,
        max_depth=max_depth,
        max_size=max_size,
        time_budget=time_budget,
        engine=engine.value,
        indent=None if compact else indent,
        verbosity=-1 if quiet else int(verbose),
        tools=tools,
        tool_calls=tool_calls,
        tool_format=value_of(tool_format),
        salvage=salvage,
        expect_sequence=expect_sequence,
        strict=strict,
        emit=emit.value,
        jsonl=jsonl,
        field=field,
        kind=kind.value,
        messages=messages.value,
        encoding=encoding,
        trust_config=trust_config,
        llm=LlmFlags(
            enabled=llm,
            model=model,
            provider=value_of(provider),
            base_url=base_url,
            max_attempts=max_attempts,
            max_calls=max_llm_calls,
            cache=False if no_cache else None,
            redact=False if no_redact else None,
            save_prompts=str(save_prompts) if save_prompts is not None else None,
        ),
    )
    model_run = None
    try:
        config = repair_config(flags)
        warn_untrusted(config)
        run = repair_settings(flags, config)
        if jsonl:
            raise typer.Exit(int(_repair_jsonl(run, files, field)))
        _check_outputs(sources, output, in_place, backup, report)
        _refuse_outputs(sources, {"-o": output, "--report": report, "--patch": patch})
        if (stream or final) and (not stream or len(sources) > 1 or in_place or output):
            raise ConfigError("--stream reads one input (stdin or a file) and prints to stdout")
        if stream and (report or patch or explain):
            raise ConfigError("--stream prints its result on stdout: no --report/--patch/--explain")
        model_run = start_llm(run)  # without LLM repair, nothing of llmfix.llm loads
        try:
            if stream:
                code = _repair_stream(run, model_run, sources[0], final, encoding)
            else:
                outputs = _Outputs(output, in_place, backup, report, patch, explain)
                code = _repair_all(run, model_run, sources, outputs, encoding)
        finally:
            if model_run is not None:
                model_run.close()
    except LlmfixError as exc:
        raise fail(str(exc)) from None
    if model_run is not None:
        print_llm_totals(model_run, run.verbosity)
    raise typer.Exit(int(code))


def _check_outputs(
    sources: list[str], output: Path | None, in_place: bool, backup: bool, report: Path | None
) -> None:
    if report is not None:
        from llmfix.reporters.html import is_html_path
        from llmfix.reporters.report import report_format

        if not is_html_path(report):
            report_format(report)
    if in_place and output is not None:
        raise ConfigError("use either --in-place or --output, not both")
    if in_place and "-" in sources:
        raise ConfigError("--in-place needs files, not stdin")
    if backup and not in_place:
        raise ConfigError("--backup only makes sense with --in-place")
    if output is not None and len(sources) > 1:
        raise ConfigError("--output takes one input; use --in-place for several files")


def _refuse_outputs(sources: list[str], outputs: "dict[str, Path | None]") -> None:
    """An output that is an input, another output, or in a version-control directory is a
    usage error, before anything is read: it would be overwritten, or run as a hook."""
    from llmfix.files.containment import refuse_vcs, same_files

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


@dataclass(frozen=True, eq=False, repr=False)
class _Outputs:
    """Where `repair` writes: ``-o``, ``--in-place`` (``--backup``), the ``--report`` and
    ``--patch`` files, and ``--explain`` on stderr."""

    output: Path | None = None
    in_place: bool = False
    backup: bool = False
    report: Path | None = None
    patch: Path | None = None
    explain: bool = False


def _repair_all(
    run: RunSettings,
    llm: "LlmRun | None",
    sources: list[str],
    outputs: _Outputs,
    encoding: str | None,
) -> ExitCode:
    from llmfix.files.read import byte_limit
    from llmfix.inputs import read_source
    from llmfix.run.repair import repair_response

    output, in_place, report, patch = (
        outputs.output,
        outputs.in_place,
        outputs.report,
        outputs.patch,
    )

    code = ExitCode.OK
    items: list[dict[str, Any]] = []
    html_entries: list[Any] | None = None  # judged items for an HTML --report
    if report is not None:
        from llmfix.reporters.html import is_html_path

        html_entries = [] if is_html_path(report) else None
    patches: list[dict[str, Any]] = []
    show = _Shower(run, outputs.explain)
    # Several inputs to stdout: JSON Lines, one line per answer saying where it is from.
    lines = len(sources) > 1 and not in_place and output is None
    for path in sources:
        try:
            source = read_source(path, encoding, byte_limit(run.options.limits.max_size))
        except InputError as exc:
            say(f"error: {exc}")
            items.append({"source": path, "status": "error", "error": str(exc)})
            if html_entries is not None:
                from llmfix.reporters.html import unreadable_entry

                html_entries.append(unreadable_entry(path, str(exc)))
            if lines:
                sys.stdout.write(dump_json(items[-1], None) + "\n")
            code = ExitCode.USAGE
            continue
        validator = run.validator_for(path)
        done = repair_response(run, llm, source.name, source.text, validator)
        if source.diagnostics:
            done = [_with_reading(run, source.diagnostics, answer) for answer in done]
        for item, result, failures, llm_record in done:
            label = source.name if item is None else item.id
            show(label, result, failures, item)
            entry = {"source": source.name, **result.to_dict()}
            if item is not None:
                entry = {"id": item.id, **entry}
            if llm_record is not None:
                entry["llm"] = llm_record
            items.append(entry)
            if html_entries is not None:
                from llmfix.reporters.html import repair_entry

                text = source.text if item is None else item.text
                html_entries.append(repair_entry(label, text, result, failures, item))
            patches.extend({"source": label, **op.to_json_patch()} for op in result.patch)
        if any(failures for _, _, failures, _ in done) and code is ExitCode.OK:
            code = ExitCode.FAILED
        if lines:
            for item, result, failures, _ in done:
                sys.stdout.write(_source_line(source.name, item, result, failures) + "\n")
            continue
        _write_answers(run, path, done, outputs, source.text)
    if report is not None and html_entries is not None:
        from llmfix.reporters.html import write_html_report

        write_html_report(
            report, html_entries, title="llmfix repair", tool_calls=run.tools is not None
        )
    elif report is not None:
        from llmfix.reporters.report import write_report

        write_report(report, items)
    if patch is not None:
        _write_patch(patch, patches, len(sources))
    return code


def _with_reading(run: RunSettings, notes: "tuple[Diagnostic, ...]", done: "Done") -> "Done":
    """An answer with what reading its file found: replaced bytes are a change (the
    answer is at least ``repaired``, at risk safe) and the gate judges it again."""
    from dataclasses import replace

    from llmfix.batch.gate import gate_failures
    from llmfix.inputs.items import reading_notes, with_reading_changes

    item, result, failures, record = done
    result = with_reading_changes(result, notes)
    others = reading_notes(notes)
    if others:
        result = replace(result, diagnostics=others + result.diagnostics)
    if len(others) != len(notes):
        failures = gate_failures(result, run.fail_on, run.max_risk, partial=run.options.partial)
    return item, result, failures, record


class _Shower:
    """Prints each result's diagnostics (and gate failures) on stderr, as -q/-v say."""

    def __init__(self, run: RunSettings, explain: bool) -> None:
        self.run = run
        self.explain = explain
        self.console: Console | PlainConsole | None = None

    def __call__(
        self, label: str, result: Result, failures: list[str], item: "Item | None" = None
    ) -> None:
        verbosity = self.run.verbosity
        if not (verbosity >= 0 or failures or result.errors):
            return
        if not (result.diagnostics or failures or verbosity > 0 or self.explain):
            return
        from llmfix.reporters.console import print_explanation, print_failures, print_result

        console = self.console = self.console or diagnostics_console()
        print_result(console, label, result, verbosity, item)
        if self.explain:
            print_explanation(console, label, result)
        print_failures(console, label, failures)


def _write_answers(
    run: RunSettings, path: str, done: "list[Done]", outputs: _Outputs, original: str
) -> None:
    """Write what passed: one answer as JSON, several as JSON Lines; ``--in-place`` puts the
    repaired answers back into the response they came from. Nothing when any one fails;
    with ``--in-place``, nothing either when the file is valid as it is (left byte for
    byte, no backup)."""
    from llmfix.batch.gate import writable
    from llmfix.files.atomic import write_atomic
    from llmfix.inputs.items import changed_only_by_reading
    from llmfix.run.repair import changed_answers, output_text

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

            from llmfix.batch.writers import fixed_file

            record = copy.deepcopy(changed[0][0].record)
            write_atomic(path, fixed_file(path, record, changed), backup=backup, keep_mode=True)
        return
    if len(done) == 1:
        text = output_text(done[0][1], run.indent)
    else:
        text = "".join(dump_json(r.value, None) + "\n" for _, r, _, _ in done)
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


def _repair_stream(
    run: RunSettings, llm: "LlmRun | None", path: str, final: bool, encoding: str | None
) -> ExitCode:
    """``--stream``: snapshots as JSON lines while the answer arrives, then the result."""
    from llmfix.files.read import byte_limit
    from llmfix.inputs import STDIN, STDIN_NAME, read_chunks
    from llmfix.run.repair import stream_answer

    name = STDIN_NAME if path == STDIN else path
    validator = run.validator_for(path)
    try:
        chunks = read_chunks(path, encoding, limit=byte_limit(run.options.limits.max_size))
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
        from llmfix.reporters.console import print_failures, print_result

        console = diagnostics_console()
        print_result(console, name, result, run.verbosity)
        print_failures(console, name, failures)
    return ExitCode.FAILED if failures else ExitCode.OK


def _source_line(name: str, item: "Item | None", result: Result, failures: list[str]) -> str:
    """One JSON Lines record when there are several inputs: ``source`` (and the answer's
    ``id``), ``status`` and the ``value`` (``values`` with ``--pick all``), or ``failures``
    instead of a value the gate did not allow."""
    from llmfix.batch.gate import writable

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
    return dump_json(line, None)


def _repair_jsonl(run: RunSettings, files: list[str] | None, field: str | None) -> ExitCode:
    """``--jsonl``: stdin, record by record, one result line each as it is read."""
    from llmfix.files.read import byte_limit
    from llmfix.inputs.jsonl import JsonLines
    from llmfix.run.jsonl import repair_jsonl

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
        field=field,
        fail_on=run.fail_on,
        max_risk=run.max_risk,
    )


def _write_patch(path: Path, patches: list[dict[str, Any]], n_sources: int) -> None:
    from llmfix.files.atomic import write_atomic

    if n_sources == 1:
        ops: list[dict[str, Any]] = [{k: v for k, v in p.items() if k != "source"} for p in patches]
    else:
        ops = patches
    write_atomic(path, dump_json(ops, 2) + "\n")
