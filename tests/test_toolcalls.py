"""Tool calls: extraction from every format, and the checks against a registry.

Golden cases live under ``tests/cases_tools/<name>/``, one per format and per check:

- ``input.txt`` — the raw model answer (read byte for byte);
- ``tools.json`` — optional registry (default: ``tests/cases_tools/tools.json``);
- ``options.json`` — optional keyword arguments for ``check_tool_calls`` (``salvage``,
  ``max_risk``, ``expect_sequence``, ``strict``, ``emit``);
- ``expected.json`` — the result's value;
- ``expected.report.json`` — ``{"status", "format", "codes"}``: the exact status, the format
  detected without a hint, and the warning/error codes (exactly these).

Adding a case needs no code change.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from llmfix.deadline import Deadline, OutOfTime
from llmfix.errors import ConfigError
from llmfix.model import Risk, Severity, Status
from llmfix.toolcalls import FORMATS, check_tool_calls, extract_tool_calls
from llmfix.toolcalls.registry import ToolRegistry

CASES_DIR = Path(__file__).parent / "cases_tools"


@dataclass(frozen=True)
class GoldenCase:
    name: str
    text: str
    registry: ToolRegistry
    options: dict[str, Any]
    expected: Any
    status: Status
    format: str | None
    codes: tuple[str, ...]


def _load(directory: Path) -> GoldenCase:
    with (directory / "input.txt").open(encoding="utf-8", newline="") as handle:
        text = handle.read()
    tools = directory / "tools.json"
    registry = ToolRegistry.load(str(tools if tools.exists() else CASES_DIR / "tools.json"))
    options_path = directory / "options.json"
    options = json.loads(options_path.read_text()) if options_path.exists() else {}
    if "max_risk" in options:
        options["max_risk"] = Risk.parse(options["max_risk"])
    report = json.loads((directory / "expected.report.json").read_text(encoding="utf-8"))
    return GoldenCase(
        name=directory.name,
        text=text,
        registry=registry,
        options=options,
        expected=json.loads((directory / "expected.json").read_text(encoding="utf-8")),
        status=Status(report["status"]),
        format=report["format"],
        codes=tuple(report["codes"]),
    )


CASES = [_load(d) for d in sorted(CASES_DIR.iterdir()) if (d / "input.txt").is_file()]
IDS = [c.name for c in CASES]


def _check(case: GoldenCase, text: str | None = None) -> Any:
    return check_tool_calls(case.text if text is None else text, case.registry, **case.options)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_golden_value(case: GoldenCase) -> None:
    assert _check(case).value == case.expected


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_golden_status(case: GoldenCase) -> None:
    assert _check(case).status is case.status


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_golden_codes(case: GoldenCase) -> None:
    result = _check(case)
    codes = {d.code for d in result.diagnostics if d.severity is not Severity.INFO}
    assert codes | ({"tools.no_calls"} & {d.code for d in result.diagnostics}) == set(case.codes)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_golden_format_detected_without_hint(case: GoldenCase) -> None:
    assert extract_tool_calls(case.text, registry=case.registry).format == case.format


STABLE = [
    c
    for c in CASES
    if c.status not in (Status.INVALID, Status.UNPARSEABLE) and c.options.get("emit") is None
]


@pytest.mark.parametrize("case", STABLE, ids=[c.name for c in STABLE])
def test_golden_output_is_stable(case: GoldenCase) -> None:
    """Checking the canonical output again gives it back unchanged."""
    again = check_tool_calls(json.dumps(case.expected), case.registry)
    assert again.value == case.expected


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_has_a_golden_case(fmt: str) -> None:
    assert fmt in {c.format for c in CASES}


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.format], ids=[c.name for c in CASES if c.format]
)
def test_golden_calls_same_with_format_forced(case: GoldenCase) -> None:
    forced = check_tool_calls(case.text, case.registry, fmt=case.format, **case.options)
    assert forced.value == case.expected


# -- extraction -------------------------------------------------------------------------------


def _calls(text: str, registry: ToolRegistry | None = None) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in extract_tool_calls(text, registry=registry).calls]


TRUNCATED = [
    pytest.param('<tool_call>\n{"name": "f", "arguments": {"a": "x', id="hermes"),
    pytest.param('[TOOL_CALLS]f{"a": "x', id="mistral"),
    pytest.param('[TOOL_CALLS][{"name": "f", "arguments": {"a": 1', id="mistral-list"),
    pytest.param("<tool_call>\n<function=f>\n<parameter=a>\nx", id="qwen3-xml"),
    pytest.param('<function_calls>\n<invoke name="f">\n<parameter name="a">x', id="anthropic-xml"),
    pytest.param('<|tool_call>call:f{a:<|"|>x', id="gemma4"),
    pytest.param("<|python_start|>[f(a='x", id="llama4"),
    pytest.param(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
        '<|tool_call_argument_begin|>{"a": "x',
        id="kimi-k2",
    ),
    pytest.param("<tool_call>f<arg_key>a</arg_key><arg_value>x", id="glm"),
    pytest.param('<function name="f"><param name="a">x', id="minicpm5"),
    pytest.param('<|channel|>commentary to=functions.f<|message|>{"a": "x', id="harmony"),
]


@pytest.mark.parametrize("text", TRUNCATED)
def test_truncated_call_is_incomplete(text: str) -> None:
    calls = extract_tool_calls(text).calls
    assert [(c.name, c.complete) for c in calls] == [("f", False)]


@pytest.mark.parametrize("text", TRUNCATED)
def test_truncated_call_keeps_what_was_written(text: str) -> None:
    assert extract_tool_calls(text).calls[0].arguments in ({"a": "x"}, {"a": 1})


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('<tool_call>{"name": "f", "arguments": {"a": 1}</tool_call>', id="hermes"),
        pytest.param(
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
            '<|tool_call_argument_begin|>{"a": 1<|tool_call_end|><|tool_calls_section_end|>',
            id="kimi-k2",
        ),
    ],
)
def test_malformed_json_in_closed_envelope_is_repaired_not_truncated(text: str) -> None:
    call = extract_tool_calls(text).calls[0]
    assert (call.arguments, call.complete) == ({"a": 1}, True)


def test_unclosed_envelope_with_closed_json_is_complete() -> None:
    call = extract_tool_calls('<tool_call>\n{"name": "f", "arguments": {"a": 1}}').calls[0]
    assert call.complete


REGISTRY = ToolRegistry.from_value(
    [
        {
            "name": "f",
            "input_schema": {
                "type": "object",
                "properties": {
                    "zip": {"type": "string"},
                    "n": {"type": "integer"},
                    "flag": {"type": "boolean"},
                    "opts": {"type": "object"},
                    "tags": {"type": "array"},
                    "maybe": {"type": ["integer", "null"]},
                },
            },
        }
    ]
)

TYPED = [
    pytest.param("zip", "02134", "02134", id="string-stays-text"),
    pytest.param("n", "42", 42, id="integer"),
    pytest.param("n", "007", 7, id="integer-leading-zero"),
    pytest.param("n", "5.0", 5, id="integral-float"),
    pytest.param("flag", "True", True, id="boolean-any-case"),
    pytest.param("opts", "{'a': 1}", {"a": 1}, id="python-dict"),
    pytest.param("opts", '{"a": [1, 2]}', {"a": [1, 2]}, id="json-object"),
    pytest.param("tags", '["x", "y"]', ["x", "y"], id="array"),
    pytest.param("maybe", "None", None, id="null"),
]


@pytest.mark.parametrize(("key", "raw", "value"), TYPED)
def test_xml_value_typed_by_schema(key: str, raw: str, value: Any) -> None:
    text = f"<tool_call>\n<function=f>\n<parameter={key}>\n{raw}\n</parameter>\n</function>"
    assert _calls(text, REGISTRY) == [("f", {key: value})]


@pytest.mark.parametrize(
    ("raw", "value"),
    [("42", 42), ("true", True), ("hello world", "hello world"), ('"quoted"', '"quoted"')],
)
def test_xml_value_without_schema(raw: str, value: Any) -> None:
    text = f'<invoke name="g"><parameter name="a">{raw}</parameter></invoke>'
    assert _calls(text) == [("g", {"a": value})]


def test_xml_value_read_as_json_without_schema_is_reported() -> None:
    call = extract_tool_calls('<invoke name="g"><parameter name="a">42</parameter></invoke>').calls[
        0
    ]
    assert [(d.code, d.risk) for d in call.diagnostics] == [("tools.typed_arguments", Risk.SAFE)]


@pytest.mark.parametrize(("flag", "value"), [("true", "42"), ("false", 42)])
def test_dsml_string_attribute(flag: str, value: Any) -> None:
    text = (
        '<｜DSML｜function_calls><｜DSML｜invoke name="g">'
        f'<｜DSML｜parameter name="a" string="{flag}">42</｜DSML｜parameter>'
        "</｜DSML｜invoke></｜DSML｜function_calls>"
    )
    assert _calls(text) == [("g", {"a": value})]


@pytest.mark.parametrize("wrapper", ["arguments", "input", "parameters"])
def test_single_wrapper_parameter_is_unwrapped(wrapper: str) -> None:
    text = f'<invoke name="g"><parameter name="{wrapper}">{{"city": "Oslo"}}</parameter></invoke>'
    assert _calls(text) == [("g", {"city": "Oslo"})]


def test_duplicate_xml_argument_is_an_error() -> None:
    pair = "<arg_key>a</arg_key><arg_value>{}</arg_value>"
    text = "<tool_call>g" + pair.format(1) + pair.format(2) + "</tool_call>"
    codes = [(d.code, d.severity) for d in extract_tool_calls(text).calls[0].diagnostics]
    assert ("tools.duplicate_argument", Severity.ERROR) in codes


def test_pythonic_is_never_evaluated() -> None:
    text = "[f(a=__import__('os').getcwd())]"
    call = extract_tool_calls(text).calls[0]
    assert (call.arguments, [d.code for d in call.diagnostics]) == (
        {},
        ["tools.malformed_argument"],
    )


def test_pythonic_positional_argument_is_an_error() -> None:
    call = extract_tool_calls("[f('x')]").calls[0]
    assert [d.code for d in call.diagnostics] == ["tools.positional_argument"]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            '{"answer": "<tool_call>{\\"name\\": \\"f\\"}</tool_call>"}', id="marker-in-json-string"
        ),
        pytest.param('Example payload: {"name": "Bob", "age": 3}', id="json-data-not-a-call"),
        pytest.param('{"name": "toolWithoutParams"}', id="bare-json-without-arguments"),
        pytest.param("Call [get_weather] when needed.", id="brackets-in-prose"),
        pytest.param("Use <tool_call> tags to call tools.", id="tag-named-in-prose"),
    ],
)
def test_not_a_call(text: str) -> None:
    assert _calls(text) == []


def test_bare_json_naming_an_unregistered_tool_is_text() -> None:
    """In prose, JSON naming no registered tool is data; a whole answer is a call."""
    extraction = extract_tool_calls('See {"name": "zzz", "arguments": {}}', registry=REGISTRY)
    assert ([c.name for c in extraction.calls], [d.code for d in extraction.diagnostics]) == (
        [],
        ["tools.not_a_call"],
    )


def test_content_and_reasoning_are_separated() -> None:
    text = '<think>plan it</think>Sure.<tool_call>{"name": "f", "arguments": {}}</tool_call> Done.'
    extraction = extract_tool_calls(text)
    assert (extraction.content, extraction.reasoning) == ("Sure.\nDone.", "plan it")


def test_call_inside_reasoning_is_marked() -> None:
    text = '<think>try <tool_call>{"name": "f", "arguments": {}}</tool_call></think>'
    assert [c.in_reasoning for c in extract_tool_calls(text).calls] == [True]


def test_forced_format_ignores_others() -> None:
    text = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert extract_tool_calls(text, fmt="mistral").calls == ()


def test_unknown_format_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="did you mean 'hermes'"):
        extract_tool_calls("x", fmt="hermez")


def test_parallel_calls_keep_their_order() -> None:
    text = '[TOOL_CALLS][{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]'
    assert [name for name, _ in _calls(text)] == ["a", "b"]


def test_openai_arguments_string_is_decoded() -> None:
    text = json.dumps(
        {
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"n": 1}'}}
            ]
        }
    )
    assert _calls(text) == [("f", {"n": 1})]


def test_call_spans_point_at_the_calls() -> None:
    text = 'ok <tool_call>{"name": "f", "arguments": {}}</tool_call>'
    span = extract_tool_calls(text).calls[0].span
    assert text[span.start : span.end] == '{"name": "f", "arguments": {}}'


# -- checks -----------------------------------------------------------------------------------

TOOLS = ToolRegistry.from_value(
    [
        {
            "name": "get_weather",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
        {
            "name": "search_web",
            "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    ]
)


def _hermes(*calls: dict[str, Any]) -> str:
    return "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)


def _codes(text: str, **options: Any) -> list[str]:
    return [d.code for d in check_tool_calls(text, TOOLS, **options).diagnostics]


def test_clean_calls_have_no_diagnostics() -> None:
    text = _hermes({"name": "get_weather", "arguments": {"city": "Oslo"}})
    assert _codes(text) == []


def test_case_only_rename_is_safe() -> None:
    result = check_tool_calls(
        _hermes({"name": "GetWeather", "arguments": {"city": "Oslo"}}), TOOLS, max_risk=Risk.SAFE
    )
    assert (result.value[0]["name"], result.risk) == ("get_weather", Risk.SAFE)


def test_unknown_name_error_names_the_closest_tool() -> None:
    result = check_tool_calls(
        _hermes({"name": "search_webb", "arguments": {}}), TOOLS, max_risk=Risk.SAFE
    )
    (error,) = [d for d in result.diagnostics if d.code == "tools.unknown_name"]
    assert error.hint == "did you mean 'search_web'?"


def test_argument_coerced_with_patch_into_the_call() -> None:
    result = check_tool_calls(
        _hermes({"name": "get_weather", "arguments": {"city": "Oslo", "days": "3"}}), TOOLS
    )
    assert [op.to_json_patch() for op in result.patch] == [
        {"op": "replace", "path": "/0/arguments/days", "value": 3}
    ]


def test_patch_applies_to_the_extracted_calls() -> None:
    text = _hermes({"name": "get_wether", "arguments": {"city": "Oslo", "days": "3"}})
    before = [c.to_dict() for c in extract_tool_calls(text).calls]
    result = check_tool_calls(text, TOOLS)
    patched = jsonpatch.apply_patch(before, [op.to_json_patch() for op in result.patch])
    assert patched == result.value


def test_unknown_argument_is_a_warning() -> None:
    result = check_tool_calls(
        _hermes({"name": "search_web", "arguments": {"query": "x", "lang": "en"}}), TOOLS
    )
    (warning,) = [d for d in result.diagnostics if d.code == "tools.unknown_argument"]
    assert (warning.severity, warning.pointer, result.status) == (
        Severity.WARNING,
        "/0/arguments/lang",
        Status.EXTRACTED,
    )


def test_missing_argument_is_an_error() -> None:
    result = check_tool_calls(_hermes({"name": "get_weather", "arguments": {}}), TOOLS)
    assert (_codes(_hermes({"name": "get_weather", "arguments": {}})), result.status) == (
        ["tools.missing_argument"],
        Status.INVALID,
    )


def test_arguments_not_an_object() -> None:
    text = '[TOOL_CALLS][{"name": "search_web", "arguments": [1, 2]}]'
    assert "schema.type" in _codes(text)


def test_expected_sequence_matches() -> None:
    text = _hermes(
        {"name": "search_web", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "x"}}
    )
    assert _codes(text, expect_sequence=["search_web", "get_weather"]) == []


def test_expected_sequence_differs() -> None:
    text = _hermes({"name": "search_web", "arguments": {}})
    assert _codes(text, expect_sequence=["get_weather"]) == ["tools.sequence"]


@pytest.mark.parametrize(
    ("prose", "flagged"),
    [
        ("I would call check_network_status next.", ["check_network_status"]),
        ("Run `reset_router()` first.", ["reset_router"]),
        ("The city and days fields are set.", []),
        ("I used get_weather for that.", []),
        ("See config_file.py and user@exa_mple.com.", []),
        ("Call it with print(x).", []),
    ],
)
def test_unregistered_names_in_prose(prose: str, flagged: list[str]) -> None:
    text = prose + _hermes({"name": "get_weather", "arguments": {"city": "x"}})
    result = check_tool_calls(text, TOOLS)
    names = [
        d.data["name"]
        for d in result.diagnostics
        if d.code == "tools.unregistered_in_prose" and d.data
    ]
    assert names == flagged


def test_strict_turns_warnings_into_failure() -> None:
    text = _hermes({"name": "search_web", "arguments": {"query": "x", "lang": "en"}})
    assert check_tool_calls(text, TOOLS, strict=True).status is Status.INVALID


def test_salvaged_call_is_a_guess() -> None:
    result = check_tool_calls(
        '<tool_call>{"name": "search_web", "arguments": {"query": "ab', TOOLS, salvage=True
    )
    assert (result.value, result.risk) == (
        [{"id": None, "name": "search_web", "arguments": {"query": "ab"}}],
        Risk.GUESS,
    )


def test_marker_without_a_readable_call_is_unparseable() -> None:
    assert check_tool_calls("[TOOL_CALLS] sorry, no", TOOLS).status is Status.UNPARSEABLE


def test_no_registry_still_extracts() -> None:
    result = check_tool_calls(_hermes({"name": "anything", "arguments": {"a": 1}}), None)
    assert (result.value, result.status) == (
        [{"id": None, "name": "anything", "arguments": {"a": 1}}],
        Status.EXTRACTED,
    )


@pytest.mark.parametrize(
    ("emit", "value"),
    [
        ("canonical", [{"id": None, "name": "search_web", "arguments": {"query": "x"}}]),
        (
            "openai",
            [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "search_web", "arguments": '{"query": "x"}'},
                }
            ],
        ),
        (
            "anthropic",
            [{"type": "tool_use", "id": "toolu_0", "name": "search_web", "input": {"query": "x"}}],
        ),
    ],
)
def test_emit_shapes(emit: str, value: Any) -> None:
    assert (
        check_tool_calls(
            _hermes({"name": "search_web", "arguments": {"query": "x"}}), TOOLS, emit=emit
        ).value
        == value
    )


def test_unknown_emit_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        check_tool_calls("", TOOLS, emit="gemini")


def test_diagnostics_have_line_and_column() -> None:
    text = "Hi.\n" + _hermes({"name": "get_weather", "arguments": {}})
    (error,) = [
        d for d in check_tool_calls(text, TOOLS).diagnostics if d.code == "tools.missing_argument"
    ]
    assert (error.position.line, error.position.column) == (2, 12)  # type: ignore[union-attr]


def test_whole_answer_naming_an_unregistered_tool_is_a_call() -> None:
    text = '{"name": "zzz", "arguments": {}}'
    assert _codes(text) == ["tools.unknown_name"]


def test_calls_in_an_api_message_text_are_read() -> None:
    content = '<tool_call>{"name": "search_web", "arguments": {"query": "x"}}</tool_call>'
    text = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
    extraction = extract_tool_calls(text)
    assert (extraction.format, [c.name for c in extraction.calls]) == ("hermes", ["search_web"])


def test_harmony_answer_without_a_call_has_no_calls() -> None:
    text = (
        "<|channel|>analysis<|message|>easy<|end|>"
        "<|start|>assistant<|channel|>final<|message|>The answer is 4.<|return|>"
    )
    result = check_tool_calls(text, None)
    assert (result.status, extract_tool_calls(text).content) == (
        Status.EXTRACTED,
        "The answer is 4.",
    )


def test_check_tool_calls_is_part_of_the_public_api() -> None:
    import llmfix

    tools = [{"name": "f", "parameters": {"properties": {"x": {"type": "integer"}}}}]
    result = llmfix.check_tool_calls('<tool_call>{"name": "f", "arguments": {"x": "1"}}', tools)
    assert "check_tool_calls" in llmfix.__all__
    assert [c["name"] for c in result.value] == ["f"]
    assert result.value[0]["arguments"] == {"x": 1}


# -- without a registry: `--tool-calls` ------------------------------------------------------

# Golden cases whose value does not depend on the registry (no renaming, typing or repair of
# arguments, no options): read without one, through the command line, they give the same calls.
REGISTRY_FREE = [
    c for c in CASES if c.format and not c.options and c.status in (Status.VALID, Status.EXTRACTED)
]


def _cli(*args: str, input: str | None = None) -> Any:
    from typer.testing import CliRunner

    from llmfix.cli import app

    return CliRunner().invoke(app, list(args), input=input)


def test_registry_free_cases_cover_every_format() -> None:
    assert {c.format for c in REGISTRY_FREE} == set(FORMATS)


@pytest.mark.parametrize("case", REGISTRY_FREE, ids=[c.name for c in REGISTRY_FREE])
def test_repair_tool_calls_without_a_registry(case: GoldenCase) -> None:
    result = _cli("repair", "--tool-calls", "--compact", input=case.text)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == case.expected


def test_repair_tool_calls_reads_the_issue_example() -> None:
    result = _cli(
        "repair",
        "--tool-calls",
        "--compact",
        input="<|tool_call_start|>[get_weather()]<|tool_call_end|>",
    )
    assert (result.exit_code, result.stdout) == (
        0,
        '[{"id":null,"name":"get_weather","arguments":{}}]\n',
    )


def test_repair_tool_calls_with_tools_still_checks_them() -> None:
    text = '<tool_call>{"name": "get_wether", "arguments": {"city": "Oslo"}}</tool_call>'
    tools = str(CASES_DIR / "tools.json")
    result = _cli("repair", "--tool-calls", "--tools", tools, "--max-risk", "safe", input=text)
    assert result.exit_code == 1
    assert "tools.unknown_name" in result.stderr


def test_check_tool_calls_without_a_registry(tmp_path: Path) -> None:
    answer = tmp_path / "answer.txt"
    answer.write_text("Checking.<|tool_call_start|>[get_weather(city='Oslo')]<|tool_call_end|>")
    result = _cli("check", str(answer), "--tool-calls", "--no-config", "-q", "-f", "json")
    [item] = json.loads(result.stdout)["items"]
    assert (result.exit_code, item["status"], item["value"]) == (
        0,
        "extracted",
        [{"id": None, "name": "get_weather", "arguments": {"city": "Oslo"}}],
    )


def test_check_tool_calls_refuses_to_write_fixed_copies(tmp_path: Path) -> None:
    answer = tmp_path / "answer.txt"
    answer.write_text("<|tool_call_start|>[f()]<|tool_call_end|>")
    result = _cli("check", str(answer), "--tool-calls", "--no-config", "--write-fixed", "out")
    assert result.exit_code == 2


def test_extract_lists_tool_call_candidates_with_format_and_span() -> None:
    text = 'Sure. <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    result = _cli("extract", input=text)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    [call] = [r for r in records if r.get("kind") == "tool_call"]
    start = call["span"]["start"]
    assert (call["format"], call["name"], call["arguments"]) == ("hermes", "f", {"a": 1})
    assert text[start:].startswith("<tool_call>") or text[start:].startswith("{")
    assert call["complete"] is True


def test_invoke_tags_in_any_case_with_or_without_their_prefix_are_one_call() -> None:
    text = (
        '<function_calls><NS:Invoke name="f"><parameter name="a">1</ns:PARAMETER>'
        "</ns:invoke></function_calls>"
    )
    extraction = extract_tool_calls(text)
    assert [(c.name, c.arguments, c.complete) for c in extraction.calls] == [("f", {"a": 1}, True)]


# -- deadline -------------------------------------------------------------------------

# Thousands of calls whose JSON needs repair, invokes never closed, and bare objects.
_PATHOLOGICAL_CALLS = [
    '<tool_call>{"name": "f", "arguments": {"a": 1, b: [1, 2,}}</tool_call>\n' * 3000,
    '<function_calls><invoke name="f"><parameter name="a">1' * 3000,
    'text {"name": "f", "arguments": {"a": [' * 3000,
]


def _spent_deadline() -> Deadline:
    deadline = Deadline(0.001, "tool_calls")
    time.sleep(0.002)
    return deadline


@pytest.mark.parametrize("text", _PATHOLOGICAL_CALLS)
def test_tool_call_readers_stop_at_their_deadline(text: str) -> None:
    with pytest.raises(OutOfTime) as raised:
        extract_tool_calls(text, deadline=_spent_deadline())
    assert raised.value.stage == "tool_calls"


def test_check_tool_calls_reports_a_spent_budget_naming_the_stage() -> None:
    started = time.perf_counter()
    result = check_tool_calls(_PATHOLOGICAL_CALLS[0], time_budget=1e-9)
    assert time.perf_counter() - started < 1
    assert (result.status, result.value) == (Status.UNPARSEABLE, [])
    [late] = [d for d in result.diagnostics if d.code == "limits.time"]
    assert (late.severity, late.stage, late.data) == (
        Severity.ERROR,
        "tools",
        {"stage": "tool_calls"},
    )
    assert late.message == "tool-call checking took longer than the 1e-09 s time budget"


def test_a_budget_with_time_left_changes_nothing() -> None:
    text = _PATHOLOGICAL_CALLS[0][:2000]
    assert check_tool_calls(text, time_budget=60).value == check_tool_calls(text).value


def test_the_parser_under_a_tool_call_runs_on_the_same_deadline() -> None:
    from llmfix.toolcalls.base import Scan, lenient_json

    text = "{" + ", ".join(f"k{i}: [1, 2,]" for i in range(5000)) + "}"
    assert lenient_json(Scan(text), 0, len(text)) is not None
    with pytest.raises(OutOfTime) as raised:
        lenient_json(Scan(text, deadline=_spent_deadline()), 0, len(text))
    assert raised.value.stage == "tool_calls"


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        # found by the fuzzer: a list closed by "}" left Gemma's reader looping on the "}"
        (
            '<|tool_call>call:f{to:[<|"|>a@b.c<|"|>}<x<|"|>],s:<|"|>hi<|"|>}<tool_call|>',
            {"to": ["a@b.c"]},
        ),
        ("<|tool_call>call:f{to:[1, 2}<tool_call|>", {"to": [1, 2]}),
        ("<|tool_call>call:f{to:[}, b:1}<tool_call|>", {"to": []}),
    ],
)
def test_gemma_list_closed_by_a_brace_ends_there(text: str, arguments: dict[str, Any]) -> None:
    assert _calls(text) == [("f", arguments)]
