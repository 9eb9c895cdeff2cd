"""Commands for looking inside: `extract`, `schemas`, `rules`."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from llmfix.cli.common import app, dump_json, fail, tolerant_streams
from llmfix.errors import LlmfixError
from llmfix.model import LineIndex


@app.command()
def extract(
    file: Annotated[str, typer.Argument(help="A raw model response ('-' for stdin).")] = "-",
    encoding: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--encoding", help="Decode the input with this encoding."),
    ] = None,
) -> None:
    """Print every JSON candidate found (JSON Lines: span, line:col, origin, parsed value),
    then every tool-call candidate (``"kind": "tool_call"``: format, span, name, arguments).

    Each candidate is parsed as ``repair`` parses it: ``ok`` is false for what ``repair``
    would call prose or fail to parse, with the same diagnostics.
    """
    # lazy: llmfix --help, extract --help start without it
    from llmfix.inputs import read_source

    # lazy: llmfix --help, extract --help start without it
    from llmfix.pipeline.core import parse_candidates

    tolerant_streams()
    try:
        source = read_source(file, encoding)
    except LlmfixError as exc:
        raise fail(str(exc)) from None
    _, parsed = parse_candidates(source.text)
    lines = LineIndex(source.text)
    for index, found in enumerate(parsed):
        cand = found.candidate
        pos = lines.position(cand.span.start)
        record = {
            "index": index,
            "origin": cand.origin,
            "span": cand.span.to_dict(),
            "line": pos.line,
            "column": pos.column,
            "in_reasoning": cand.in_reasoning,
            "ok": found.ok,
            "strict": found.strict,
            "value": found.value,
            "diagnostics": [d.code for d in found.diagnostics],
        }
        sys.stdout.write(dump_json(record, None) + "\n")
    for record in _tool_call_records(source.text, lines):
        sys.stdout.write(dump_json(record, None) + "\n")


def _tool_call_records(text: str, lines: Any) -> list[dict[str, Any]]:
    """The tool calls in ``text``, in any known format, detected (no registry)."""
    # lazy: llmfix --help, extract --help start without it
    from llmfix.toolcalls import extract_tool_calls

    records = []
    for index, call in enumerate(extract_tool_calls(text).calls):
        pos = lines.position(call.span.start)
        records.append(
            {
                "kind": "tool_call",
                "index": index,
                "format": call.format,
                "span": call.span.to_dict(),
                "line": pos.line,
                "column": pos.column,
                "in_reasoning": call.in_reasoning,
                "complete": call.complete,
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "diagnostics": [d.code for d in call.diagnostics],
            }
        )
    return records


@app.command()
def schemas() -> None:
    """List the bundled schemas (use them as --schema builtin:NAME)."""
    # lazy: llmfix --help, extract --help start without it
    from llmfix.schema.load import builtin_schemas

    for name, description in sorted(builtin_schemas().items()):
        sys.stdout.write(f"builtin:{name}\t{description}\n")


@app.command()
def rules() -> None:
    """List the schema repair rules with their risk tier (for --rules / --disable-rule)."""
    # lazy: extract --help, extract start without it
    from llmfix.rules import SCHEMA_RULES

    for rule in SCHEMA_RULES:
        sys.stdout.write(f"{rule.id}\t{rule.risk.value}\t{rule.description}\n")
