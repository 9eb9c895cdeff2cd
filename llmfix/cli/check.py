"""`llmfix check`: many files of model output in, a report and a CI verdict out.

The command declares its options, builds the run (:mod:`llmfix.run.settings`), runs it
(:mod:`llmfix.run.check`) and exits with the code the run gives.
"""

# No ``from __future__ import annotations``: see llmfix.cli.repair.
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
def check(
    paths: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(help="Files or directories ('-' for stdin); default: the config's."),
    ] = None,
    schema: Annotated[
        Optional[str],  # noqa: UP045
        shared(
            "schema",
            "JSON Schema the answers must satisfy, or a Pydantic model (module:Model, "
            "file.py:Model).",
        ),
    ] = None,
    allow_remote_refs: Annotated[
        bool,
        shared("allow_remote_refs", "Fetch the schema's http(s) $ref targets."),
    ] = False,
    tools: Annotated[
        Optional[str],  # noqa: UP045
        shared("tools", "Tool definitions (OpenAI/Anthropic/MCP) for tool calls."),
    ] = None,
    field: Annotated[
        Optional[str],  # noqa: UP045
        shared("field", "Where the text is in each record: /pointer or a.b.0."),
    ] = None,
    messages: Annotated[
        Optional[str],  # noqa: UP045
        shared("messages", "Transcript turns to check (default: last)."),
    ] = None,
    kind: Annotated[
        Optional[str],  # noqa: UP045
        shared("kind", "Read inputs as (default: auto)."),
    ] = None,
    include: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--include", help="Glob of files to check in directories."),
    ] = None,
    exclude: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--exclude", help="Glob of files to skip in directories."),
    ] = None,
    fmt: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--format",
            "-f",
            click_type=choice("report_format"),
            help="Report format (default: text).",
        ),
    ] = None,
    output: Annotated[
        Optional[str],  # noqa: UP045
        shared("output", "Write the report to this file."),
    ] = None,
    fail_on: Annotated[
        Optional[str],  # noqa: UP045
        shared("fail_on", "Fail on items this bad (default: invalid)."),
    ] = None,
    max_risk: Annotated[
        Optional[str],  # noqa: UP045
        shared("max_risk", "Fail when a riskier repair was needed."),
    ] = None,
    baseline: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--baseline", help="Known failures: a -f baseline file (or a JSON report)."),
    ] = None,
    write_fixed: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--write-fixed", help="Write repaired copies under this directory."),
    ] = None,
    jobs: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--jobs", "-j", help="Worker processes (0: all cores)."),
    ] = None,
    timeout: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--timeout", help="Seconds per item at most."),
    ] = None,
    max_item_size: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--max-item-size", help="Characters per item at most."),
    ] = None,
    group_by: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--group-by", help="Summarise per value of this record field."),
    ] = None,
    disable_rule: Annotated[
        Optional[list[str]],  # noqa: UP045
        shared("disable_rule", "Turn a repair rule off (repeatable)."),
    ] = None,
    encoding: Annotated[
        Optional[str],  # noqa: UP045
        shared("encoding", "Decode inputs with this encoding."),
    ] = None,
    config: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--config", help="Use this config file."),
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            "--engine", click_type=choice("check_engine", "local"), help="Where to check."
        ),
    ] = "local",
    results: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--results", help="Write every item's result row under this directory."),
    ] = None,
    results_format: Annotated[
        str,
        typer.Option(
            "--results-format",
            click_type=choice("results_format", "parquet"),
            help="--results files.",
        ),
    ] = "parquet",
    in_place: Annotated[
        bool, shared("in_place", "Rewrite inputs with their repairs (atomic).")
    ] = False,
    tool_calls: Annotated[
        bool,
        shared("tool_calls", "Read each answer's tool calls (any format; --tools checks them)."),
    ] = False,
    partial: Annotated[
        bool,
        shared("partial", "Accept cut-off answers (truncated): keep what is complete."),
    ] = False,
    no_schema_repair: Annotated[
        bool, shared("no_schema_repair", "Validate only; no schema repairs.")
    ] = False,
    no_config: Annotated[
        bool, typer.Option("--no-config", help="Ignore project config files (not the user's).")
    ] = False,
    trust_config: TrustConfigOption = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bar.")] = False,
    allow_empty: Annotated[
        bool, typer.Option("--allow-empty", help="Exit 0 when no item matched (else exit 2).")
    ] = False,
    follow_symlinks: Annotated[
        bool,
        typer.Option(
            "--follow-symlinks",
            help="Check what symbolic links in folders lead to (never outside an untrusted "
            "config's folder); without it they are skipped, with a warning.",
        ),
    ] = False,
    report: Annotated[
        Optional[list[str]],  # noqa: UP045
        shared(
            "report",
            "Also write a report here, in the same run; the format is the file's "
            "suffix (.sarif, .json, .yaml/.yml, .xml for JUnit, .html) or a FORMAT: "
            "prefix. Repeatable.",
        ),
    ] = None,
    max_rate: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--max-rate",
            help="Fail when more than PCT of the items have KEY (a status, failing, a code "
            "or family): invalid=2%; a group's with --group-by: model=gpt-4o-mini:invalid=2%, "
            "every group's: model=*:invalid=2%. Repeatable; the rates then decide the exit code.",
        ),
    ] = None,
    significant_only: Annotated[
        bool,
        typer.Option(
            "--significant-only",
            help="A --max-rate gate fails only when the rate is surely above it (its "
            "interval's lower bound is).",
        ),
    ] = False,
    compare: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--compare", help="Compare the rates with an earlier run's -f json report."),
    ] = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="With --compare: fail only when a problem's rate rose significantly.",
        ),
    ] = False,
    confidence: Annotated[
        float,
        typer.Option(
            "--confidence",
            help="Confidence of the rates' intervals; 1 - the level of --compare's tests.",
        ),
    ] = 0.95,
    history: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--history", help="A folder of earlier -f json reports: draw the rates' trend."
        ),
    ] = None,
    degenerate: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--degenerate",
            help="A threshold of the degenerate-answer checks, NAME=VALUE (loop-chars=300, "
            "placeholder=TBA). Repeatable.",
        ),
    ] = None,
    max_annotations: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--max-annotations", help="-f github: annotate N problems at most."),
    ] = None,
    quiet: Annotated[bool, shared("quiet", "Print the summary only.")] = False,
    verbose: Annotated[bool, shared("verbose", "Print every item.")] = False,
    llm: Annotated[
        Optional[bool],  # noqa: UP045
        shared(
            "llm",
            "Ask a model to repair what rules cannot; the repairs go to --write-fixed "
            "or --in-place (default: on when a trusted config's llm: section says so).",
        ),
    ] = None,
    model: ModelOption = None,
    provider: ProviderOption = None,
    base_url: BaseUrlOption = None,
    max_attempts: Annotated[
        Optional[int],  # noqa: UP045
        shared("max_attempts", "Model repair attempts per item (default 2)."),
    ] = None,
    max_llm_calls: MaxLlmCallsOption = None,
    max_llm_tokens: MaxLlmTokensOption = None,
    max_llm_cost: MaxLlmCostOption = None,
    no_cache: NoCacheOption = False,
) -> None:
    """Check many model outputs: files, directories, JSONL logs, API responses, transcripts.

    Exit codes: 0 clean, 1 an item fails the gates (--fail-on, --max-risk) and is not in
    the --baseline, 2 usage, config or schema error. Writing a baseline (-f baseline)
    exits 0 whatever fails. With --max-rate or --fail-on-regression the rates decide
    instead: 1 when a rate gate fails or a rate rose significantly.
    """
    tolerant_streams()
    # lazy: llmfix --help, check --help start without it
    from llmfix.run.check import run_check

    # lazy: llmfix --help, a misspelt command start without it
    from llmfix.run.settings import CheckFlags

    flags = CheckFlags(
        paths=tuple(paths or ()),
        schema=schema,
        tools=tools,
        field=field,
        messages=messages,
        kind=kind,
        include=tuple(include or ()),
        exclude=tuple(exclude or ()),
        format=fmt,
        output=output,
        fail_on=fail_on,
        max_risk=max_risk,
        baseline=baseline,
        write_fixed=write_fixed,
        in_place=in_place,
        jobs=jobs,
        timeout=timeout,
        max_item_size=max_item_size,
        group_by=group_by,
        encoding=encoding,
        progress=not no_progress,
        no_schema_repair=no_schema_repair,
        disable_rule=tuple(disable_rule or ()),
        allow_remote_refs=allow_remote_refs,
        partial=partial,
        config=config,
        use_config=not no_config,
        trust_config=trust_config,
        tool_calls=tool_calls,
        verbosity=-1 if quiet else int(verbose),
        llm=llm_flags(
            llm,
            model,
            provider,
            base_url,
            max_attempts,
            max_llm_calls,
            no_cache,
            max_llm_tokens=max_llm_tokens,
            max_llm_cost=max_llm_cost,
        ),
        engine=engine,
        results=results,
        results_format=results_format,
        allow_empty=allow_empty,
        max_annotations=max_annotations,
        reports=tuple(report or ()),
        follow_symlinks=follow_symlinks,
        max_rate=tuple(max_rate or ()),
        significant_only=significant_only,
        compare=compare,
        fail_on_regression=fail_on_regression,
        confidence=confidence,
        history=history,
        degenerate=tuple(degenerate or ()),
    )
    execute(flags, lambda run, llm: run_check(run, llm=llm))
