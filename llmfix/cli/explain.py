"""`llmfix explain [CODE_OR_RULE]`: what a diagnostic code or a repair rule means, with an
example run through llmfix; with no argument, every code and rule on one line each."""

from __future__ import annotations

import json
import sys
import textwrap
from typing import Annotated, Any, Optional

import typer

from llmfix import codes, rules
from llmfix.cli.common import app, fail
from llmfix.options import make_options

_WIDTH = 88
_INPUT = "<example>"


@app.command()
def explain(
    name: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(help="A diagnostic code (parse.trailing_comma) or a rule (coerce_number)."),
    ] = None,
) -> None:
    """Explain a diagnostic code or a repair rule, with an example; list them all without one."""
    if name is None:
        sys.stdout.write(listing())
        return
    found = explanation(name)
    if found is None:
        near = closest(name)
        hint = f" (did you mean {near!r}?)" if near else " (run `llmfix explain` for the list)"
        raise fail(f"unknown code or rule {name!r}{hint}")
    sys.stdout.write(found)


def listing() -> str:
    """Every code, then every rule, one tab-separated line each."""
    out = []
    for code in codes.CODES.values():
        out.append(f"{code.id}\t{code.severity.value}\t{_risks(code.risks)}\t{code.summary}")
    for rule in rules.RULES.values():
        out.append(f"{rule.id}\t{rule.kind} rule\t{_risks(rule.risks)}\t{rule.description}")
    return "\n".join(out) + "\n"


def explanation(name: str) -> str | None:
    """The text ``llmfix explain NAME`` prints; ``None`` when NAME is no code or rule."""
    code = codes.CODES.get(name.strip())
    if code is not None:
        return _code_text(code)
    found = rules.get(name)
    if not found:
        return None
    return "\n".join(_rule_text(rule) for rule in found)


def closest(name: str) -> str | None:
    """The code or rule id nearest to a misspelt ``name``."""
    import difflib

    known = [*codes.CODES, *{rule.id for rule in rules.RULES.values()}]
    near = difflib.get_close_matches(name.strip(), known, n=1, cutoff=0.5)
    return near[0] if near else None


def _risks(risks: tuple[Any, ...]) -> str:
    return " / ".join(r.value for r in risks) or "-"


def _paragraph(text: str) -> str:
    return textwrap.fill(text, _WIDTH) + "\n"


def _code_text(code: codes.Code) -> str:
    out = [
        f"{code.id}: {code.summary}\n",
        f"stage {code.stage}, severity {code.severity.value}, risk {_risks(code.risks)}\n",
    ]
    named = [rule for rule in rules.RULES.values() if rule.code is code]
    for rule in named:
        out.append(f"rule {rule.id} ({rules.KINDS[rule.kind]})\n")
    out += ["\n", _paragraph(code.doc)]
    if code.example is not None:
        out += ["\n", _example(code.example)]
    return "".join(out)


def _rule_text(rule: rules.RuleRecord) -> str:
    out = [
        f"{rule.id}: {rule.description}\n",
        f"{rules.KINDS[rule.kind]}, risk {_risks(rule.risks)}, code {rule.code.id}\n",
    ]
    if rule.note:
        out += ["\n", _paragraph(rule.note[0].upper() + rule.note[1:] + ".")]
    if rule.kind in ("schema", "tools", "degenerate"):
        out += ["\n", _paragraph(f"Turn it off with --disable-rule {rule.id}.")]
    if rule.example is not None:
        out += ["\n", _example(rule.example)]
    return "".join(out)


def _example(example: codes.Example) -> str:
    """The example's input, and what llmfix reports for it (run now, so it cannot go stale)."""
    out = ["Example\n", f"  input:  {json.dumps(example.text, ensure_ascii=False)}\n"]
    if example.schema is not None:
        out.append(f"  schema: {json.dumps(example.schema, ensure_ascii=False)}\n")
    if example.tools is not None:
        names = ", ".join(str(tool.get("name")) for tool in example.tools)
        out.append(f"  tools:  {names}\n")
    for key, value in example.options.items():
        out.append(f"  {key}: {json.dumps(value)}\n")
    out.append(f"  llmfix ({_how(example)}):\n")
    out += [f"    {line}\n" for line in _run(example)]
    return "".join(out)


def _how(example: codes.Example) -> str:
    if example.via == "tools":
        return "check_tool_calls"
    if example.via == "parse":
        return "the parse stage alone"
    return "repair"


def _run(example: codes.Example) -> list[str]:
    """The example through the library, as ``llmfix.repair`` / ``llmfix.check_tool_calls``
    run it (the same stages, called below the face, which nothing inside imports)."""
    # lazy: llmfix --help, explain start without it
    from llmfix.pipeline.core import repair_text

    # lazy: llmfix --help, explain start without it
    from llmfix.reporters.console import diagnostic_line, summary_line

    # lazy: llmfix --help, explain start without it
    from llmfix.toolcalls.check import check_tool_calls

    # lazy: llmfix --help, explain start without it
    from llmfix.toolcalls.registry import ToolRegistry

    options = dict(example.options)
    if example.via == "parse":
        # lazy: llmfix --help, explain start without it
        from llmfix.parse.core import parse_json

        outcome = parse_json(example.text)
        lines = [diagnostic_line(_INPUT, d) for d in outcome.diagnostics]
        if outcome.ok:
            lines.append(f"value: {json.dumps(outcome.value, ensure_ascii=False)}")
        return lines
    if example.via == "tools":
        tools = example.tools
        registry = None if tools is None else ToolRegistry.from_value(tools)
        if isinstance(options.get("max_risk"), str):
            options["max_risk"] = make_options(max_risk=options["max_risk"]).max_risk
        result = check_tool_calls(example.text, registry, **options)
    else:
        result = repair_text(example.text, example.schema, make_options(**options))
    lines = [diagnostic_line(_INPUT, d) for d in result.diagnostics]
    lines.append(summary_line(_INPUT, result))
    if result.value is not None or result.ok:
        lines.append(f"value: {json.dumps(result.value, ensure_ascii=False)}")
    return lines
