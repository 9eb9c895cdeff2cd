"""Tool-call conformance: score llmfix against vLLM's tool-parser test cases.

Run ``python -m tests.tool_conformance`` from the repository root to print the pass rate per
parser family (``--failures`` lists what failed, with the reason recorded in
``tests/tool_conformance_differences.yaml``; ``--json`` prints the table as JSON). The corpora
are ``tests/corpora/vllm_tool_calls.jsonl`` (see ``tests/corpora/README.md``, section 3) and
``tests/corpora/tool_call_families.jsonl`` (section 6: cases written from the model cards and
chat templates of the families that lag, kimi-k2 and deepseek; categories ``*_spec``).

Every case goes through the public entry points the way a user calls them:
``check_tool_calls(text, registry)`` with the case's ``tools`` as the registry (built with
``strict=False``: a few test schemas use types JSON Schema does not have) and **no format
hint** — the headline columns. The ``hint`` columns run again with the family's format
forced, for information.

What a case compares:

- the *accepted* calls: the calls in the result's value that no error diagnostic points at
  (a call llmfix reports as an unknown tool or with a missing required argument is one vLLM
  would not have returned either), and no call cut off by truncation (llmfix returns those
  only with ``--salvage``);
- complete cases (``expected_complete``): the names and arguments of every call, in order
  (JSON equality: ``1 == 1.0``, booleans are not numbers);
- partial cases: the recorded assertions — ``tools_called``, the number of calls, names,
  arguments (whole, by key, or as the JSON text vLLM returns), ids given by the format, and
  the content (compared without surrounding whitespace, where vLLM's parsers differ). Ids
  that vLLM makes up itself (length, digits) are not compared.

The ``CLI`` column runs every complete case through the command line the way a user
debugging an answer does — ``llmfix repair --tool-calls --partial`` with the text on stdin
and **no registry** (names and arguments unchecked; ``--partial`` prints the whole calls of
a cut-off answer, which the gate otherwise fails) — and compares the printed calls the same
way;
the ``no registry`` column is the library on the same footing (``check_tool_calls(text)``).
The two must be within one case of each other; cases only a registry can decide (an
unknown tool or argument that vLLM rejects) pass in neither.

No case is special-cased. A case llmfix answers differently on purpose is listed with its
reason in the differences file and still counts as a failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmfix.model import Severity
from llmfix.toolcalls import check_tool_calls, extract_tool_calls
from llmfix.toolcalls.registry import ToolRegistry
from tests.conformance import same_json

CORPUS = Path(__file__).parent / "corpora" / "vllm_tool_calls.jsonl"
FAMILIES = Path(__file__).parent / "corpora" / "tool_call_families.jsonl"
DIFFERENCES = Path(__file__).parent / "tool_conformance_differences.yaml"
FLOORS = Path(__file__).parent / "tool_conformance_floors.json"

# The format each vLLM parser family writes most (for the informational hint columns).
HINTS: dict[str, str | None] = {
    "apertus": "apertus",
    "deepseek_v3": "deepseek-v3",
    "deepseekv31": "deepseek-v3",
    "deepseekv32": "deepseek-dsml",
    "deepseekv4": "deepseek-dsml",
    "ernie45_moe": "hermes",
    "functiongemma": "functiongemma",
    "gemma4": "gemma4",
    "gigachat3": "gigachat",
    "glm47_moe": "glm",
    "glm4_moe": "glm",
    "granite": "granite",
    "granite-20b-fc": "granite-20b-fc",
    "granite4": "hermes",
    "hermes": "hermes",
    "hy_v3": "hunyuan",
    "internlm": "internlm",
    "jamba": "jamba",
    "kimi_k2": "kimi-k2",
    "kimi_k2_spec": "kimi-k2",
    "deepseek_v3_spec": "deepseek-v3",
    "deepseek_v31_spec": "deepseek-v3",
    "deepseek_r1_spec": "deepseek-v3",
    "lfm2": "lfm2",
    "llama3_json": "json",
    "llama4_pythonic": "pythonic",
    "longcat": "longcat",
    "minicpm5xml": "minicpm5",
    "minimax_m3": "minimax-m3",
    "mistral": "mistral",
    "olmo3": "olmo3",
    "phi4_mini_json": "phi4-mini",
    "poolside_v1": "glm",
    "pythonic": "pythonic",
    "qwen3coder": "qwen3-xml",
    "rust": None,
    "step3": "step3",
    "step3p5": "qwen3-xml",
}


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    input: str
    complete: bool
    raw: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class Outcome:
    case: Case
    passed: bool
    why: str  # the first comparison that failed ("" when passed)
    got: list[dict[str, Any]]
    hinted: bool  # passed with the family's format forced
    cli: bool | None = None  # complete cases: passed through `llmfix repair --tool-calls`
    unregistered: bool | None = None  # complete cases: passed by the library, no registry


def load_cases() -> list[Case]:
    cases = []
    for corpus in (CORPUS, FAMILIES):
        with corpus.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    raw = json.loads(line)
                    cases.append(
                        Case(
                            raw["id"], raw["category"], raw["input"], raw["expected_complete"], raw
                        )
                    )
    return cases


@dataclass(frozen=True)
class Answer:
    calls: list[dict[str, Any]]  # accepted calls, canonical
    content: str | None


def answer(case: Case, fmt: str | None, *, registry_free: bool = False) -> Answer:
    tools = None if registry_free else case.raw.get("tools")
    registry = ToolRegistry.from_value(tools, source=case.id, strict=False) if tools else None
    result = check_tool_calls(case.input, registry, fmt=fmt)
    failed = {
        int(d.pointer.split("/")[1])
        for d in result.diagnostics
        if d.severity is Severity.ERROR and d.pointer and d.pointer.split("/")[1].isdigit()
    }
    calls = [c for i, c in enumerate(result.value) if i not in failed]
    content = extract_tool_calls(case.input, fmt=fmt, registry=registry).content
    return Answer(calls, content or None)


def cli_answer(case: Case) -> Answer:
    """The calls `llmfix repair --tool-calls --partial --compact` prints for the case (no
    registry)."""
    from typer.testing import CliRunner

    from llmfix.cli import app

    result = CliRunner().invoke(
        app, ["repair", "--tool-calls", "--partial", "--compact"], input=case.input
    )
    printed = result.stdout.strip() if result.exit_code == 0 else ""
    return Answer(json.loads(printed) if printed else [], None)


def judge(case: Case, got: Answer) -> str:
    """Why ``got`` does not meet the case ("" when it does)."""
    if case.complete:
        return _judge_complete(case, got)
    return _judge_partial(case, got)


def _judge_complete(case: Case, got: Answer) -> str:
    expected = case.raw["expected"]
    if expected is None:
        return "the case expects an error; llmfix returned calls" if got.calls else ""
    if len(got.calls) != len(expected):
        return f"{len(got.calls)} calls, expected {len(expected)}"
    for i, (mine, want) in enumerate(zip(got.calls, expected, strict=True)):
        if mine["name"] != want["name"]:
            return f"call {i}: name {mine['name']!r}, expected {want['name']!r}"
        if not same_json(mine["arguments"], want["arguments"]):
            mine_args, want_args = _dump(mine["arguments"]), _dump(want["arguments"])
            return f"call {i}: arguments {mine_args}, expected {want_args}"
    return ""


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


_MISSING = object()


def _judge_partial(case: Case, got: Answer) -> str:
    for assertion in case.raw["assertions"]:
        why = _check_assertion(assertion, got)
        if why:
            return why
    return ""


def _check_assertion(assertion: dict[str, Any], got: Answer) -> str:
    path, op, want = assertion["path"], assertion["op"], assertion["value"]
    if not path:
        return ""  # the whole result object (not None; a stub)
    head = path[0]
    if head == "tools_called":
        value: Any = bool(got.calls)
    elif head == "content":
        if len(path) > 1:
            return ""
        value = got.content
        if op == "==" and isinstance(want, str) and isinstance(value, str):
            return (
                ""
                if value.strip() == want.strip()
                else f"content == {_dump(want)[:60]}: got {_dump(value)[:60]}"
            )
        if op in ("contains", "not_contains") and value is None:
            value = ""
    elif head == "tool_calls":
        value = _call_path(got.calls, path[1:])
        if value is _MISSING:
            return f"{_path(path)}: missing"
        if value is _SKIP:
            return ""
    else:
        return ""
    ok = _compare(value, op, want)
    return "" if ok else f"{_path(path)} {op} {_dump(want)[:60]}: got {_dump(value)[:60]}"


_SKIP = object()


def _path(path: list[Any]) -> str:
    return ".".join(str(p) for p in path)


def _call_path(calls: list[dict[str, Any]], path: list[Any]) -> Any:
    if not path:
        return [
            {"function": {"name": c["name"], "arguments": _dump(c["arguments"])}} for c in calls
        ]
    if path == ["len"]:
        return len(calls)
    index = path[0]
    if not isinstance(index, int):
        return _SKIP
    if index >= len(calls):
        return _MISSING
    call = calls[index]
    rest = path[1:]
    if rest[:1] == ["type"]:
        return "function"
    if rest[:1] == ["id"]:
        return call["id"] if len(rest) == 1 else _SKIP  # made-up ids: length, digits
    if rest[:1] != ["function"]:
        return _SKIP
    rest = rest[1:]
    if not rest:
        return _SKIP  # a stub object
    if rest == ["name"]:
        return call["name"]
    if rest[0] != "arguments":
        return _SKIP
    if len(rest) == 1:
        return _dump(call["arguments"])
    value: Any = call["arguments"]
    for key in rest[2:]:
        if key == "len":
            return len(value) if isinstance(value, (dict, list, str)) else _MISSING
        if isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return _MISSING
    return value


def _compare(value: Any, op: str, want: Any) -> bool:
    if op == "==":
        return same_json(value, want)
    if op == "is":
        return value is want or (want is None and value in (None, ""))
    if op == "is not":
        return value is not want and not (want is None and value == "")
    if op == "truthy":
        return bool(value)
    if op == "falsy":
        return not value
    if op == "contains":
        return want in value if isinstance(value, (str, list, dict)) else False
    if op == "not_contains":
        return want not in value if isinstance(value, (str, list, dict)) else True
    if op == "in":
        return value in want or (value is None and "" in want)
    if op == ">":
        return isinstance(value, (int, float)) and value > want
    if op == ">=":
        return isinstance(value, (int, float)) and value >= want
    return True


def run_case(case: Case) -> Outcome:
    got = answer(case, None)
    why = judge(case, got)
    hint = case.raw.get("family") or HINTS.get(case.category)
    hinted = not why if hint is None else not judge(case, answer(case, hint))
    cli = unregistered = None
    if case.complete:
        cli = not _judge_complete(case, cli_answer(case))
        unregistered = not _judge_complete(case, answer(case, None, registry_free=True))
    return Outcome(case, not why, why, got.calls, hinted, cli, unregistered)


def run_all() -> list[Outcome]:
    return [run_case(case) for case in load_cases()]


Cell = tuple[int, int]


def table(outcomes: list[Outcome]) -> dict[str, dict[str, Cell]]:
    """family → column → (passed, total); family ``*`` is the whole corpus.

    Columns: ``complete``, ``partial`` (no hint), ``complete_hint``, ``partial_hint``,
    ``complete_noreg`` (the library, no registry), ``complete_cli`` (the command line, no
    registry).
    """
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for o in outcomes:
        kind = "complete" if o.case.complete else "partial"
        for family in (o.case.category, "*"):
            columns = [(kind, o.passed), (f"{kind}_hint", o.hinted)]
            if o.cli is not None and o.unregistered is not None:
                columns += [("complete_cli", o.cli), ("complete_noreg", o.unregistered)]
            for column, passed in columns:
                cell = counts[family][column]
                cell[0] += passed
                cell[1] += 1
    return {
        family: {column: (p, t) for column, (p, t) in sorted(cols.items())}
        for family, cols in sorted(counts.items())
    }


def _rate(cell: Cell | None) -> str:
    if cell is None:
        return "–"
    passed, total = cell
    return f"{passed}/{total} ({passed / total:.0%})"


def render_markdown(rates: dict[str, dict[str, Cell]]) -> str:
    lines = [
        "| family | complete | partial | complete (hint) | partial (hint) "
        "| complete (no registry) | complete (CLI, no registry) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    order = ["*", *[f for f in rates if f != "*"]]
    for family in order:
        cols = rates[family]
        name = "**all**" if family == "*" else family
        cells = [
            _rate(cols.get(c))
            for c in (
                "complete",
                "partial",
                "complete_hint",
                "partial_hint",
                "complete_noreg",
                "complete_cli",
            )
        ]
        if family == "*":
            cells = [f"**{c}**" for c in cells]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load_differences() -> dict[str, str]:
    import yaml

    if not DIFFERENCES.exists():
        return {}
    data = yaml.safe_load(DIFFERENCES.read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for k, v in data.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.tool_conformance", description=__doc__)
    parser.add_argument("--failures", action="store_true", help="list every failing case")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    args = parser.parse_args(argv)
    outcomes = run_all()
    rates = table(outcomes)
    if args.json:
        print(json.dumps({f: {c: list(v) for c, v in cols.items()} for f, cols in rates.items()}))
    else:
        print(render_markdown(rates))
    if args.failures:
        reasons = load_differences()
        for o in outcomes:
            if o.passed:
                continue
            kind = "complete" if o.case.complete else "partial"
            print(f"FAIL {o.case.id} [{o.case.category}, {kind}] {o.why}")
            print(f"     reason: {reasons.get(o.case.id, '(not listed)')}")
            print(f"     input: {o.case.input[:150]!r}")
        unlisted = [o.case.id for o in outcomes if not o.passed and o.case.id not in reasons]
        stale = sorted(set(reasons) - {o.case.id for o in outcomes if not o.passed})
        if unlisted:
            print(f"failures without a recorded reason: {', '.join(unlisted)}")
        if stale:
            print(f"recorded differences that now pass: {', '.join(stale)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
