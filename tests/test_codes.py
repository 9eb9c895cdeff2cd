"""The code registry (llmfix/codes.py) and the rule records (llmfix/rules.py): every code is
made through the registry, each registered example still produces its code, and an id that is
not registered cannot be made."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

import llmfix
from llmfix import codes, rules
from llmfix.errors import ConfigError
from llmfix.model import Diagnostic, Risk, Severity, Span
from llmfix.parse.core import parse_json
from llmfix.parse.json_repair import LOG_CODES
from llmfix.repair_parser import CODES as READER_CODES
from llmfix.schema.repair import RULES


def run_example(example: codes.Example) -> list[Diagnostic]:
    """The diagnostics llmfix gives for ``example``, run as ``llmfix explain`` runs it."""
    options: dict[str, Any] = dict(example.options)
    if example.via == "parse":
        return list(parse_json(example.text).diagnostics)
    if example.via == "tools":
        return list(llmfix.check_tool_calls(example.text, example.tools, **options).diagnostics)
    assert example.via == "repair"
    return list(llmfix.repair(example.text, example.schema, **options).diagnostics)


EXAMPLES = [code for code in codes.CODES.values() if code.example is not None]


@pytest.mark.parametrize("code", EXAMPLES, ids=[code.id for code in EXAMPLES])
def test_each_registered_example_still_produces_its_code(code: codes.Code) -> None:
    assert code.example is not None
    made = [d for d in run_example(code.example) if d.code == code.id]
    assert made, f"{code.id}: {[d.code for d in run_example(code.example)]}"
    # the diagnostic is what the registry says, where the code does not genuinely vary
    if code.id not in ("parse.cut_off", "response.cut_off", "limits.time"):
        assert {(d.stage, d.severity) for d in made} == {(code.stage, code.severity)}


def test_most_codes_have_an_example() -> None:
    # the ones without need a file, a batch, a model or a provider: see the tests of those
    assert len(EXAMPLES) >= 130


def test_an_unregistered_id_cannot_be_looked_up() -> None:
    with pytest.raises(KeyError, match=r"parse\.trailing_comma"):
        codes.get("parse.trailing_coma")  # (misspelt: the error names the closest)
    with pytest.raises(KeyError, match="unregistered"):
        codes.get("nothing.like_it")


def test_a_code_cannot_be_registered_twice() -> None:
    with pytest.raises(ValueError, match="twice"):
        codes._code("parse.trailing_comma", "parse", Severity.WARNING, None, "x", "y")


def test_at_fills_in_the_registered_code_stage_and_severity() -> None:
    made = codes.PARSE_TRAILING_COMMA.at("removed", span=Span(1, 2), risk=Risk.LOSSLESS)
    assert made == Diagnostic(
        "parse.trailing_comma", Severity.WARNING, "parse", "removed", span=Span(1, 2),
        risk=Risk.LOSSLESS,
    )  # fmt: skip
    warned = codes.PARSE_CUT_OFF.at("cut", severity=Severity.WARNING, stage="stream")
    assert (warned.code, warned.severity, warned.stage) == ("parse.cut_off", "warning", "stream")


def test_at_takes_every_field_of_a_diagnostic() -> None:
    # (so that no site needs to build a Diagnostic itself)
    fields = set(inspect.signature(Diagnostic).parameters) - {"code"}
    assert fields <= set(inspect.signature(codes.Code.at).parameters)


def test_instead_of_recasts_a_diagnostic_as_another_code() -> None:
    error = codes.SCHEMA_REQUIRED.at("/: 'a' is required", pointer="")
    missing = codes.PARTIAL_MISSING.instead_of(error, hint="not arrived")
    assert (missing.code, missing.severity, missing.stage) == (
        "partial.missing",
        "warning",
        "partial",
    )
    assert (missing.message, missing.pointer, missing.hint) == (error.message, "", "not arrived")


def test_every_family_is_listed() -> None:
    assert {code.family for code in codes.CODES.values()} == set(codes.FAMILIES)


def test_every_code_has_a_summary_and_a_doc() -> None:
    assert [c.id for c in codes.CODES.values() if not c.summary or len(c.doc) < 20] == []


def test_every_code_the_reader_reports_is_registered_with_its_summary() -> None:
    assert {c: codes.get(c).summary for c in READER_CODES} == READER_CODES


def test_every_code_json_repairs_log_maps_to_is_registered() -> None:
    mapped = {code for _, found in LOG_CODES for code in found}
    assert [c for c in mapped if c not in codes.CODES] == []


def test_every_keyword_jsonschema_reports_an_error_under_is_registered() -> None:
    # the keyword functions that make an error themselves (the others descend into a
    # subschema, whose keyword is the one reported)
    import jsonschema._keywords
    import jsonschema._legacy_keywords

    reporting = set()
    for module in (jsonschema._keywords, jsonschema._legacy_keywords):
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if "ValidationError(" in inspect.getsource(function):
                reporting.add(name.split("_draft")[0].rstrip("_"))
    reporting -= {"properties"}  # draft 3's required, reported as "required"
    reporting -= {"format"}  # only with a format checker, which llmfix does not give
    assert sorted(reporting - set(codes.SCHEMA_KEYWORDS)) == []


def test_a_schema_repair_change_of_every_rule_has_a_registered_code() -> None:
    assert [r for r in RULES if f"repair.{r}" not in codes.CODES] == []


# -- rules -------------------------------------------------------------------------------


def test_schema_repair_rules_are_the_records() -> None:
    assert [(r.id, r.risk, r.description) for r in rules.SCHEMA_RULES] == [
        (rule_id, rule.risk, rule.description) for rule_id, rule in RULES.items()
    ]


def test_every_rule_has_its_code_and_an_example() -> None:
    assert [r.id for r in rules.RULES.values() if r.example is None] == []
    for rule in rules.RULES.values():
        # a rule's changes carry a risk; a degenerate-answer check changes nothing
        assert bool(rule.code.risks) is (rule.kind != "degenerate"), rule.id
        assert rule.kind in rules.KINDS


def test_rules_of_every_kind_are_recorded() -> None:
    kinds = {rule.kind for rule in rules.RULES.values()}
    assert kinds == set(rules.KINDS)
    assert ("parse", "trailing_comma") in rules.RULES
    assert ("guided", "boolean") in rules.RULES
    assert ("tools", "tool_name") in rules.RULES


def test_rule_ids_take_either_spelling_and_name_the_closest() -> None:
    assert rules.rule_ids(["enum-case", "coerce_number"]) == {"enum_case", "coerce_number"}
    with pytest.raises(ConfigError, match="did you mean 'enum_case'"):
        rules.rule_ids(["enum_cas"])
    assert "tool_name" in rules.all_rule_ids()


# -- codes made outside a repair call (a batch's gate, a saved stream, an MCP exchange) ----


def test_an_item_failing_a_gate_with_no_diagnostic_of_its_own_gets_check_gate() -> None:
    from llmfix.batch.core import Outcome
    from llmfix.batch.judge import Checked
    from llmfix.inputs import Item
    from llmfix.model import Result, Status
    from llmfix.reporters.base import failing_diagnostics

    item = Item(id="a.json", source="a.json", line=1, text="1", kind="file")
    checked = Checked(Outcome(item, Result(status=Status.VALID, value=1)), ("status valid",))
    assert [(d.code, d.stage, d.message) for d in failing_diagnostics(checked)] == [
        ("check.gate", "check", "status valid")
    ]


def test_a_saved_stream_that_ended_at_the_token_limit_is_noted() -> None:
    from llmfix.inputs import ReadOptions, items_from_text

    chunks = [
        {"choices": [{"index": 0, "delta": {"content": '{"a": [1'}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
    ]
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    (item,) = items_from_text(text, "saved.sse", ReadOptions())
    notes = [d for d in item.diagnostics if d.code == "stream.cut_off"]
    assert [(d.severity, d.stage) for d in notes] == [("warning", "input")]


def test_a_json_rpc_error_to_a_tool_call_is_toolresult_rpc_error() -> None:
    from llmfix.toolcalls.results import mcp_results

    calls: dict[Any, str] = {}
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get"}}
    answer = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "bad arguments"}}
    assert list(mcp_results(request, calls)) == []
    (result,) = mcp_results(answer, calls)
    assert result.error is not None
    assert (result.error.code, result.error.severity) == ("toolresult.rpc_error", "error")
    assert result.error.message == 'the call to tool "get" failed: bad arguments'
