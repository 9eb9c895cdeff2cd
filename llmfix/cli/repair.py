"""`llmfix repair`: raw model responses in, repaired JSON out.

The command declares its options, builds the run (:mod:`llmfix.run.settings`), runs it
(:mod:`llmfix.run.repair_files`) and exits with the code the run gives.
"""

# No ``from __future__ import annotations`` here: Typer would compile and evaluate the text
# of every option's annotation on each run, twice (about 6 ms for the fifty options of
# `repair`); evaluated once at import they cost a third of that.
from pathlib import Path
from typing import Annotated, Optional

import typer

from llmfix.cli.common import (
    BaseUrlOption,
    MaxLlmCallsOption,
    MaxLlmCostOption,
    MaxLlmTokensOption,
    ModelOption,
    NoCacheOption,
    ProviderOption,
    TrustConfigOption,
    app,
    choice,
    execute,
    llm_flags,
    shared,
    tolerant_streams,
)


@app.command()
def repair(
    files: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional on 3.10
        typer.Argument(help="Raw model responses to repair; '-' or nothing reads stdin."),
    ] = None,
    schema: Annotated[
        Optional[str],  # noqa: UP045
        shared(
            "schema",
            "JSON Schema (JSON/YAML file, an OpenAI/Anthropic tool or response_format "
            "definition, or builtin:NAME — see `llmfix schemas`), or a Pydantic model as "
            "module:Model or path/to/file.py:Model (imports it: runs its code).",
        ),
    ] = None,
    allow_remote_refs: Annotated[
        bool,
        shared(
            "allow_remote_refs", "Fetch the schema's http(s) $ref targets (off: they are refused)."
        ),
    ] = False,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        shared("output", "Write the JSON here instead of stdout (one input)."),
    ] = None,
    in_place: Annotated[
        bool, shared("in_place", "Replace each input file with its repaired JSON.")
    ] = False,
    backup: Annotated[
        bool, typer.Option("--backup", help="With --in-place, keep the original as FILE.bak.")
    ] = False,
    report: Annotated[
        Optional[Path],  # noqa: UP045
        shared(
            "report",
            "Write a report, as check --report does; the format is the file's suffix "
            "(.json, .yaml/.yml, .html for a page, .sarif, .xml for JUnit) or a FORMAT: "
            "prefix.",
        ),
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
        str,
        typer.Option(
            "--pick",
            click_type=choice("pick", "best"),
            help="Which JSON value to keep (all → JSON Lines).",
        ),
    ] = "best",
    fail_on: Annotated[
        str, shared("fail_on", "Exit 1 when the result is at least this bad.", "invalid")
    ] = "invalid",
    max_risk: Annotated[
        Optional[str],  # noqa: UP045
        shared(
            "max_risk",
            "Exit 1 when a repair riskier than this was needed; schema rules above it "
            "are not applied.",
        ),
    ] = None,
    disable_rule: Annotated[
        Optional[list[str]],  # noqa: UP045
        shared("disable_rule", "Turn a schema repair rule off (repeatable)."),
    ] = None,
    rules: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--rules", help="Comma-separated schema repair rules to use (default: all)."),
    ] = None,
    degenerate: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--degenerate",
            help="A threshold of the degenerate-answer checks, NAME=VALUE (loop-chars=300, "
            "placeholder=TBA). Repeatable.",
        ),
    ] = None,
    no_schema_repair: Annotated[
        bool, shared("no_schema_repair", "Validate only; make no schema repairs.")
    ] = False,
    partial: Annotated[
        bool,
        shared("partial", "Output cut off mid-stream: keep what is complete."),
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
        str,
        typer.Option(
            "--engine",
            click_type=choice("parser_engine", "llmfix"),
            help="Lenient parser: llmfix (linear, exact spans) or json-repair.",
        ),
    ] = "llmfix",
    encoding: Annotated[
        Optional[str],  # noqa: UP045
        shared("encoding", "Decode inputs with this encoding (default: UTF-8)."),
    ] = None,
    tools: Annotated[
        Optional[str],  # noqa: UP045
        shared(
            "tools",
            "Read tool calls and check them against these tools (OpenAI or Anthropic "
            "tools list, MCP tools/list result; JSON or YAML).",
        ),
    ] = None,
    tool_calls: Annotated[
        bool,
        shared(
            "tool_calls",
            "Read the tool calls of the answer (any known format, detected) and print "
            "them; without --tools their names and arguments are not checked.",
        ),
    ] = False,
    tool_format: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--tool-format",
            click_type=choice("tool_format"),
            help="Force one tool-call format (default: detect).",
        ),
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
        str,
        typer.Option(
            "--emit", click_type=choice("emit", "canonical"), help="Tool-call output shape."
        ),
    ] = "canonical",
    jsonl: Annotated[
        bool,
        typer.Option("--jsonl", help="Read JSON Lines from stdin; write one result per record."),
    ] = False,
    field: Annotated[
        Optional[str],  # noqa: UP045
        shared("field", "Where the text is in each record or JSON file: /pointer or a.b.0."),
    ] = None,
    kind: Annotated[
        str,
        shared(
            "kind",
            "Read inputs as (auto: an API response JSON is read for its answers, "
            "anything else is the answer).",
            "auto",
        ),
    ] = "auto",
    messages: Annotated[str, shared("messages", "Transcript turns to repair.", "last")] = "last",
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
    quiet: Annotated[bool, shared("quiet", "Print errors only.")] = False,
    verbose: Annotated[bool, shared("verbose", "Print info diagnostics and hints too.")] = False,
    llm: Annotated[
        Optional[bool],  # noqa: UP045
        shared(
            "llm",
            "Ask a model to repair what rules cannot (default: on when a trusted "
            "config's llm: section says so; a project file alone never turns it on).",
        ),
    ] = None,
    model: ModelOption = None,
    provider: ProviderOption = None,
    base_url: BaseUrlOption = None,
    max_attempts: Annotated[
        Optional[int],  # noqa: UP045
        shared("max_attempts", "Model repair attempts per response (default 2)."),
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
    max_llm_tokens: MaxLlmTokensOption = None,
    max_llm_cost: MaxLlmCostOption = None,
    trust_config: TrustConfigOption = False,
) -> None:
    """Repair raw model responses: JSON on stdout, diagnostics on stderr.

    Exit codes: 0 clean, 1 what --fail-on/--max-risk name (or no JSON found),
    2 usage, config or schema error.
    """
    tolerant_streams()
    # lazy: llmfix --help, repair --help start without it
    from llmfix.run.repair_files import (
        RepairOutputs,
        check_outputs,
        run_repair,
        run_repair_jsonl,
    )

    # lazy: llmfix --help, a misspelt command start without it
    from llmfix.run.settings import RepairFlags, RepairRun

    sources = files or ["-"]
    flags = RepairFlags(
        schema=schema,
        allow_remote_refs=allow_remote_refs,
        pick=pick,
        fail_on=fail_on,
        max_risk=max_risk,
        disable_rule=tuple(disable_rule or ()),
        rules=rules,
        degenerate=tuple(degenerate or ()),
        no_schema_repair=no_schema_repair,
        partial=partial,
        max_depth=max_depth,
        max_size=max_size,
        time_budget=time_budget,
        engine=engine,
        indent=None if compact else indent,
        verbosity=-1 if quiet else int(verbose),
        tools=tools,
        tool_calls=tool_calls,
        tool_format=tool_format,
        salvage=salvage,
        expect_sequence=expect_sequence,
        strict=strict,
        emit=emit,
        jsonl=jsonl,
        field=field,
        kind=kind,
        messages=messages,
        encoding=encoding,
        trust_config=trust_config,
        llm=llm_flags(
            llm,
            model,
            provider,
            base_url,
            max_attempts,
            max_llm_calls,
            no_cache,
            no_redact,
            save_prompts,
            max_llm_tokens,
            max_llm_cost,
        ),
    )
    spec = None if report is None else str(report)  # a file name, or FORMAT:FILE
    outputs = RepairOutputs(output, in_place, backup, spec, patch, explain, stream, final)

    def ready(run: RepairRun) -> None:
        if jsonl:  # record by record, without LLM repair
            raise typer.Exit(int(run_repair_jsonl(run, files)))
        check_outputs(sources, outputs)

    execute(flags, lambda run, llm: run_repair(run, llm, sources, outputs), ready)
