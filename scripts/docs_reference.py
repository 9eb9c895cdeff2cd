"""The docs site's reference pages, written from the code's own tables at build time.

MkDocs loads this file as a hook (``hooks:`` in ``mkdocs.yml``): :func:`on_files` adds the
pages of :data:`PAGES` to the build, so no reference table is ever copied by hand — the
command line's options come from the Typer app, the codes from :mod:`llmfix.codes`, the
rules from :mod:`llmfix.rules`, the tool-call formats from ``toolcalls.detect.FORMATS``,
the report formats from ``reporters.REPORTERS``, the stop reasons from the table
``pipeline.stops`` reads them with.

    python scripts/docs_reference.py            # print every generated page
    python scripts/docs_reference.py DIR        # write them into DIR (to look at them)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere, or loaded by mkdocs
    sys.path.insert(0, str(ROOT))

GENERATED = "<!-- generated from the code by scripts/docs_reference.py: do not edit -->\n\n"

# Links the registries write for the README, and where those sections are on the site
# (relative to docs/reference/).
_LINKS = {
    "#schema-guided-reading-answers-that-are-not-json": "../guide/guided-reading.md",
    "#schema-repair-rules": "rules.md",
}


def _cell(text: str) -> str:
    """``text`` fit for one table cell: one line, pipes escaped, RST literals as Markdown."""
    text = re.sub(r"``([^`]+)``", r"`\1`", " ".join(text.split()))
    text = re.sub(r":(?:class|func|mod|data|meth|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("|", "\\|")


def _literal(text: str) -> str:
    """Plain ``text`` (a format's markers: ``[TOOL_CALLS][{…}]``, ``<tool_call>``) shown as
    written in a table cell, not read as links, HTML or emphasis."""
    text = re.sub(r"([\\`*_\[\]{}|])", r"\\\1", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _relink(text: str) -> str:
    for old, new in _LINKS.items():
        text = text.replace(f"]({old})", f"]({new})")
    return text


# --- the command line ------------------------------------------------------------------


# What a value stands for, where the option's own name would not say it.
_METAVARS = {
    "disable_rule": "RULE",
    "rules": "RULE,RULE",
    "expect_sequence": "NAME,NAME",
    "base_url": "URL",
    "group_by": "FIELD",
    "include": "GLOB",
    "exclude": "GLOB",
    "encoding": "CODEC",
}


def _metavar(param: Any) -> str:
    kind = param.type
    if getattr(kind, "choices", None):
        return "|".join(str(c) for c in kind.choices)
    if getattr(param, "is_flag", False):
        return ""
    name = {"INT": "N", "FLOAT": "SECONDS" if param.name == "timeout" else "X"}.get(
        getattr(kind, "name", "").upper(), "VALUE"
    )
    if param.name in ("schema", "tools", "output", "report", "patch", "baseline", "config"):
        name = "FILE"
    elif param.name in ("write_fixed", "results", "save_prompts"):
        name = "DIR"
    elif param.name in _METAVARS:
        name = _METAVARS[param.name]
    elif name == "VALUE":
        name = param.name.upper().replace("_", "-")
    return name


def _option_rows(command: Any) -> Iterator[str]:
    for param in command.params:
        if getattr(param, "hidden", False) or param.param_type_name == "argument":
            continue
        names = ", ".join(f"`{o}`" for o in sorted(param.opts, key=len, reverse=True))
        if param.secondary_opts:
            names += " / " + ", ".join(f"`{o}`" for o in param.secondary_opts)
        value = _metavar(param)
        if getattr(param.type, "choices", None):
            names += " " + ", ".join(f"`{c}`" for c in param.type.choices)
        elif value:
            names += f" `{value}`"
        if getattr(param, "multiple", False):
            names += " (repeatable)"
        default = param.default
        shown = ""
        if default not in (None, False, (), []) and not getattr(param, "is_flag", False):
            shown = f"`{default}`"
        yield f"| {names} | {_cell(param.help or '')} | {shown} |"


def _arguments(command: Any) -> str:
    found = []
    for param in command.params:
        if param.param_type_name == "argument":
            name = param.name.upper()
            found.append(f"[{name}...]" if param.nargs == -1 else name)
    return " ".join(found)


def _help(text: str) -> str:
    """A command's help text as Markdown paragraphs (Click's ``\\b`` markers dropped)."""
    text = re.sub(r"``([^`]+)``", r"`\1`", text.replace("\b\n", "").replace("\b", ""))
    return text.strip()


def _command_section(path: list[str], command: Any, ctx: Any) -> Iterator[str]:
    name = " ".join(path)
    yield f"## `{name}`"
    yield ""
    if command.help:
        yield _help(command.help)
        yield ""
    if hasattr(command, "list_commands"):  # a group (Typer ships its own Click)
        subcommands = command.list_commands(ctx)
        usage = f"{name} [OPTIONS]" + (" [COMMAND]" if command.invoke_without_command else "")
        yield f"```text\n{usage}\n```"
        yield ""
    else:
        subcommands = []
        args = _arguments(command)
        yield f"```text\n{name} [OPTIONS]{' ' + args if args else ''}\n```"
        yield ""
    rows = list(_option_rows(command))
    if rows:
        yield "| option | what it does | default |"
        yield "|---|---|---|"
        yield from rows
        yield ""
    for sub in subcommands:
        inner = command.get_command(ctx, sub)
        if inner is not None and not getattr(inner, "hidden", False):
            yield from _command_section([*path, sub], inner, ctx)


def cli_page() -> str:
    """Every command of the Typer app, with every option and its help."""
    import typer.main

    from llmfix.cli import app

    group = typer.main.get_command(app)
    ctx = group.make_context("llmfix", [], resilient_parsing=True)
    out = [
        "# Command line",
        "",
        GENERATED.strip(),
        "",
        "Every command and option, as `llmfix COMMAND --help` lists them. The exit codes and "
        "statuses are in [Exit codes and statuses](exit-codes.md).",
        "",
        "```text\nllmfix [--version] COMMAND [OPTIONS] ...\n```",
        "",
    ]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is not None and not getattr(command, "hidden", False):
            out += list(_command_section(["llmfix", name], command, ctx))
    return "\n".join(out).rstrip() + "\n"


# --- codes and rules ---------------------------------------------------------------------


def codes_page() -> str:
    """Every diagnostic code, one table per family, from the registry."""
    from llmfix import codes

    sections = []
    for family, about in codes.FAMILIES.items():
        found = [c for c in codes.CODES.values() if c.family == family]
        sections += [
            f"## {family}",
            "",
            _relink(about[0].upper() + about[1:]) + f" ({len(found)} codes).",
            "",
            "| code | severity | risk | meaning |",
            "|---|---|---|---|",
        ]
        for code in found:
            risk = " / ".join(r.value for r in code.risks) or "—"
            sections.append(
                f"| `{code.id}` | {code.severity.value} | {risk} | {_cell(code.summary)} |"
            )
        sections.append("")
    listed = set(codes.FAMILIES)
    stray = sorted(c.id for c in codes.CODES.values() if c.family not in listed)
    if stray:
        raise ValueError(f"scripts/docs_reference.py: codes of no family in codes.FAMILIES {stray}")
    return (
        "# Diagnostic codes\n\n"
        + GENERATED
        + "Every diagnostic has a stable dotted `code`, a severity, the stage that made it, a "
        "message, and where it applies: a JSON Pointer into the value and/or a span with "
        "line:column in the raw answer. Repairs also carry a `rule` and a risk tier. "
        "`llmfix explain CODE` prints what a code means and what to do about it, with an "
        "example run through llmfix; `llmfix explain` lists them all.\n\n"
        "With `--engine json-repair`, where json-repair reads another value than llmfix's "
        "reader, each entry of its repair log becomes the code for the same fix (message "
        "`json-repair: …`), followed by a `parse.json_repair` guess saying the readings differ. "
        "`limits.time` names the stage that ran out of its `--time-budget`.\n\n"
        + "\n".join(sections)
    )


def rules_page() -> str:
    """Schema repair's rules and the tool-name fix, from :mod:`llmfix.rules`."""
    from llmfix import rules

    by_kind: dict[str, list[Any]] = {}
    for rule in rules.RULES.values():
        by_kind.setdefault(rule.kind, []).append(rule)
    other = []
    for kind in ("parse", "guided"):
        found = by_kind.get(kind, [])
        other += [
            f"### {rules.KINDS[kind].capitalize()} ({len(found)})",
            "",
            "| rule | risk | what it does | code |",
            "|---|---|---|---|",
        ]
        for rule in found:
            risk = " / ".join(r.value for r in rule.risks)
            other.append(f"| `{rule.id}` | {risk} | {_cell(rule.description)} | `{rule.code.id}` |")
        other.append("")
    return (
        "# Repair rules\n\n" + GENERATED + "## Schema repair rules\n\n"
        "When a value almost fits its schema, `llmfix repair --schema` makes it fit with these "
        "rules. Each change is an RFC 6902 JSON Patch operation (`--patch FILE`, and in the "
        "report) with its rule, risk, before and after; `--explain` prints them. "
        "`--max-risk safe` keeps guesses from being applied (and fails when one would be "
        "needed); `--disable-rule ID` or `--rules A,B` choose rules (`enum-case` and "
        "`enum_case` both work); `llmfix rules` lists them. A value no rule can fix stays as "
        "it is and stays an error: llmfix never clamps a number into range, truncates a list to "
        "`maxItems`, or invents a required value. `anyOf`/`oneOf` branches are each tried; the "
        "one needing the fewest and least risky changes wins (a tie is `repair.branch_tie`).\n\n"
        + rules.markdown()
        + "\n## The other repairs\n\n"
        "The lenient reader's repairs and the schema-guided readings are rules too: "
        "`llmfix explain ID` shows each with an example. They are not chosen with "
        "`--rules`; `--max-risk` bounds them.\n\n" + "\n".join(other)
    )


# --- inputs, tool-call formats, reports --------------------------------------------------

# What each kind of file holds (the kinds are llmfix.inputs.items.KINDS; a kind without a
# sentence here fails the build).
_KIND_TEXT = {
    "text": "one raw model answer",
    "json": "an OpenAI chat completion (`choices[].message`: content and `tool_calls`), a "
    "Responses API object (`output[]`), an Anthropic message (text and `tool_use` blocks), a "
    "Gemini `generateContent` response (`candidates[].content.parts`), a transcript "
    "(`messages`: its assistant turns), or a recorded stream (SSE events, NDJSON chunks); "
    "anything else is a plain JSON document to check (or repair)",
    "jsonl": "one record per line, streamed with bounded memory: OpenAI Batch API output "
    "(`response.body`), Anthropic Message Batches results (`result.message`), any of the "
    "`json` shapes, or any record with `--field`; a record of no known shape is checked whole",
    "parquet": "each row is a record, read as a JSON Lines record is; `--field` names the "
    "column (or a path into a struct column); needs `pip install 'llmfix[parquet]'`",
}
_KIND_IDS = {
    "text": "`PATH`",
    "json": "`PATH#msgN`, `PATH`",
    "jsonl": "`PATH:LINE`, `PATH:LINE#msgN`, `PATH:LINE[custom_id]#msgN`",
    "parquet": "`PATH:ROW`, `PATH:ROW#msgN` (1-based row)",
}


def inputs_page() -> str:
    """The kinds of input ``check`` and ``repair`` read, by suffix, and the stop reasons."""
    from llmfix.inputs import JSONL_SUFFIXES, PARQUET_SUFFIXES, file_kind
    from llmfix.inputs.items import KINDS
    from llmfix.pipeline.stops import _STREAMS

    kinds = [k for k in KINDS if k != "auto"]
    missing = sorted(set(kinds) - set(_KIND_TEXT))
    if missing:
        raise ValueError(f"scripts/docs_reference.py: no description of input kind {missing}")
    suffixes: dict[str, list[str]] = {}
    for suffix in (".txt", ".md", ".json", *JSONL_SUFFIXES):
        suffixes.setdefault(file_kind("answer" + suffix), []).append(f"`{suffix}`")
    suffixes["parquet"] = [f"`{s}`" for s in PARQUET_SUFFIXES]
    rows = []
    for kind in (*kinds, "parquet"):
        found = ", ".join(suffixes.get(kind, []))
        if kind == "text":
            found += ", anything else"
        rows.append(f"| {found} | `{kind}` | {_KIND_TEXT[kind]} | {_KIND_IDS[kind]} |")
    stops = []
    for fmt, (table, field) in _STREAMS.items():
        cut = ", ".join(f"`{k}`" for k, v in table.items() if v == "cut_off")
        refused = ", ".join(f"`{k}`" for k, v in table.items() if v == "refused") or "—"
        stops.append(f"| {fmt} | {_cell(field)} | {cut} | {refused} |")
    return (
        "# Inputs\n\n" + GENERATED + "## What a file is read as\n\n"
        "By its suffix, unless `--kind " + "|".join(KINDS) + "` says otherwise "
        "(`auto`, the default, decides by suffix; `-` is stdin).\n\n"
        "| suffix | kind | read as | item ids |\n|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "`#msgN` names the choice, the message in `messages`, or the `output` entry (`#msg0` "
        "for an Anthropic message); each tool call adds `.callK`. A batch output's "
        "`custom_id` follows the line (`batch.jsonl:12[ticket-7]#msg0`).\n\n"
        "## Stop reasons\n\n"
        "What the API says about an answer counts: a cut-off answer is `truncated`, a refused "
        "or filtered one `refused`, in a response file, a batch line and a stream alike. An "
        "OpenAI `message.refusal` or a Responses `refusal` content part is a refusal too, as "
        "is Gemini's `promptFeedback.blockReason`.\n\n"
        "| API | field | cut off | refused or filtered |\n|---|---|---|---|\n"
        + "\n".join(stops)
        + "\n"
    )


def tool_formats_page() -> str:
    """Every tool-call format ``--tool-format`` names, from ``toolcalls.detect.FORMATS``."""
    from llmfix.toolcalls.detect import FORMATS

    rows = [f"| `{name}` | {_literal(text)} |" for name, text in FORMATS.items()]
    return (
        "# Tool-call formats\n\n"
        + GENERATED
        + f"The {len(FORMATS)} formats `llmfix repair --tools` (and `--tool-calls`, `check`, "
        "`extract`) read. They are detected without a hint; `--tool-format NAME` forces one.\n\n"
        "| `--tool-format` | what it reads |\n|---|---|\n" + "\n".join(rows) + "\n"
    )


# What each report is for (the formats are reporters.REPORTERS; one without a line here
# fails the build).
_REPORT_TEXT = {
    "text": "failing items as `file:line:col: severity code: message`, then the summary "
    "tables; `-v` every item, `-q` the summary only",
    "json": "the versioned report: `version`, `summary` (the summary table's figures), and "
    "every item under `items` with `id`, `key` (what `--baseline` matches), `source`, `line`, "
    "`kind`, `status`, `failed`, `failures`, `value`, `risk`, `diagnostics` (each with its "
    "`location`: file, line, column), `patch` and `timings`",
    "yaml": "the same report, as YAML",
    "junit": "one `<testcase>` per item: failures carry the diagnostics, unreadable items are "
    "`<error>`, baselined failures `<skipped>`",
    "github": "`::error file=…,line=…,col=…,title=llmfix CODE::message` per problem of a "
    "failing item, at most `--max-annotations N` of them (the rest counted in one "
    "`::warning`), and one `::notice` summary",
    "sarif": "SARIF 2.1.0 for code scanning: rule ids are diagnostic codes, URIs relative to "
    "the repository root, `baselineState` with `--baseline`",
    "html": "one self-contained page: the overview and every item, filterable",
    "baseline": "the failing items only, by stable key, for `--baseline`",
}


def reports_page() -> str:
    from llmfix.reporters import REPORT_SUFFIXES, REPORTERS

    missing = sorted(set(REPORTERS) - set(_REPORT_TEXT))
    if missing:
        raise ValueError(f"scripts/docs_reference.py: no description of report {missing}")
    suffixes: dict[str, list[str]] = {}
    for suffix, fmt in REPORT_SUFFIXES.items():
        suffixes.setdefault(fmt, []).append(f"`{suffix}`")
    rows = [
        f"| `{fmt}` | {', '.join(suffixes.get(fmt, [])) or '—'} | {_REPORT_TEXT[fmt]} |"
        for fmt in REPORTERS
    ]
    return (
        "# Report formats\n\n"
        + GENERATED
        + "`--format` (`-f`) picks the report on stdout or `-o FILE`; `--report FILE` "
        "(repeatable, `check` and `repair`) writes another from the same run, its format "
        "taken from the suffix or a `FORMAT:` prefix (`sarif:out.txt`).\n\n"
        "| format | `--report` suffix | what it holds |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    )


# --- exit codes and statuses -------------------------------------------------------------

_EXIT_TEXT = {
    "OK": "clean, or within what `--fail-on` and `--max-risk` allow",
    "FAILED": "a result fails the gate: still invalid, no JSON found, cut off (`truncated`, "
    "unless `--partial`), refused, or what `--fail-on`/`--max-risk` name; in `check`, such an "
    "item that is not in the `--baseline`",
    "USAGE": "usage, configuration, schema or input-file error (one line on stderr); in "
    "`check`, also a run that found nothing to check (unless `--allow-empty`)",
}
_STATUS_TEXT = {
    "VALID": "the whole input was strict JSON and valid as-is",
    "EXTRACTED": "only lossless extraction was needed (fence, prose, XML envelope, invisible "
    "characters)",
    "REPAIRED": "syntax or schema repairs were needed",
    "LLM_REPAIRED": "a model fixed it (`--llm`)",
    "INVALID": "parsed, but still violates the schema",
    "TRUNCATED": "cut off: the API's stop reason says so (`response.cut_off`), or the text ends "
    "inside a value (`parse.cut_off`). Outranks `invalid` (its schema errors are still "
    "listed). Fails every gate; with `--partial` it counts as `repaired` when what arrived "
    "has no error, and what is complete is written",
    "REFUSED": "the model refused or the API filtered the answer (`response.refused`), or an "
    "answer with no JSON opens with a refusal in words",
    "UNPARSEABLE": "no JSON value could be recovered",
}
_RISK_TEXT = {
    "LOSSLESS": "certainly what the model meant: fences, prose, trailing commas, comments, "
    "invisible characters",
    "SAFE": 'unambiguous: coercions such as `"36"` → 36, quote style, Python literals, '
    "closing brackets at the end of input",
    "GUESS": "a judgement: completing cut-off output, escaping quotes, fuzzy enum or key matches",
}


def _enum_table(enum: Any, texts: dict[str, str], head: str, show: Callable[[Any], str]) -> str:
    missing = sorted(m.name for m in enum if m.name not in texts)
    if missing:
        raise ValueError(f"scripts/docs_reference.py: no description of {enum.__name__} {missing}")
    rows = [f"| {show(m)} | {texts[m.name]} |" for m in enum]
    return f"| {head} | meaning |\n|---|---|\n" + "\n".join(rows) + "\n"


def exit_codes_page() -> str:
    from llmfix.model import ExitCode, Risk, Status

    return (
        "# Exit codes and statuses\n\n"
        + GENERATED
        + "## Exit codes\n\nEvery command uses these (`llmfix.model.ExitCode`).\n\n"
        + _enum_table(ExitCode, _EXIT_TEXT, "code", lambda m: str(int(m)))
        + "\n## Statuses\n\nEach answer gets one, best first (`llmfix.Status`). "
        "`result.ok` is true for the first four.\n\n"
        + _enum_table(Status, _STATUS_TEXT, "status", lambda m: f"`{m.value}`")
        + "\n## Risk tiers\n\nEvery change carries one (`llmfix.Risk`); `--max-risk` "
        "refuses what is riskier.\n\n"
        + _enum_table(Risk, _RISK_TEXT, "risk", lambda m: f"`{m.value}`")
    )


# Generated pages, by their path under docs/.
PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/codes.md": codes_page,
    "reference/rules.md": rules_page,
    "reference/inputs.md": inputs_page,
    "reference/tool-formats.md": tool_formats_page,
    "reference/reports.md": reports_page,
    "reference/exit-codes.md": exit_codes_page,
}


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated pages to the site."""
    from mkdocs.structure.files import File

    for path, write in PAGES.items():
        files.append(File.generated(config, path, content=write()))
    return files


def main(argv: list[str]) -> int:
    if argv:
        out = Path(argv[0])
        for path, write in PAGES.items():
            target = out / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(write(), encoding="utf-8")
            print(target)
        return 0
    for write in PAGES.values():
        sys.stdout.write(write() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
