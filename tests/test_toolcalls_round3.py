"""Tool calls, round 3 (issue 32): marker text inside arguments, cut-off parallel calls, the
newest formats, untyped values, and calls left in an API response's text.

The corpus cases of each kind are in ``tests/corpora/tool_call_families.jsonl`` (scored by
``tests/tool_conformance.py``); the recorded server responses are golden cases under
``tests/cases_tools/response_*``. These tests pin what the corpus cannot: the
diagnostics, the ``--partial`` gate, the command line, and a few shapes each reader has.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmfix.cli import app
from llmfix.model import Severity, Status
from llmfix.toolcalls import check_tool_calls, extract_tool_calls
from llmfix.toolcalls.registry import ToolRegistry

CASES = Path(__file__).parent / "cases_tools"
ALARM = [
    {
        "name": "set_alarm",
        "parameters": {
            "type": "object",
            "properties": {
                "hour": {"type": "integer"},
                "code": {"type": "string"},
                "enabled": {"type": "boolean"},
            },
            "required": ["hour"],
        },
    }
]


def calls(text: str, **options: Any) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in extract_tool_calls(text, **options).calls]


# ------------------------------------------------------------------ marker text in values


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            '<tool_call>{"name": "f", "arguments": {"v": "a </tool_call> b"}}</tool_call>',
            "a </tool_call> b",
        ),
        (
            "<tool_call>\n<function=f>\n<parameter=v>\nsee </parameter> here\n</parameter>\n"
            "</function>\n</tool_call>",
            "see </parameter> here",
        ),
        (
            "<tool_call>f<arg_key>v</arg_key><arg_value>x </arg_value> y</arg_value></tool_call>",
            "x </arg_value> y",
        ),
        (
            '<invoke name="f"><parameter name="v">1 </parameter> 2</parameter></invoke>',
            "1 </parameter> 2",
        ),
        (
            "<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
            '{"v": "<|tool_call_end|>"}<|tool_call_end|>',
            "<|tool_call_end|>",
        ),
        ('[TOOL_CALLS]f[ARGS]{"v": "[TOOL_CALLS] x"}', "[TOOL_CALLS] x"),
        (
            '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"v": "<|call|>"}'
            "<|call|>",
            "<|call|>",
        ),
        ('<|python_start|>[f(v="<|python_end|>")]<|python_end|>', "<|python_end|>"),
        ('<|tool_call>call:f{v:<|"|><tool_call|><|"|>}<tool_call|>', "<tool_call|>"),
    ],
    ids=["hermes", "qwen3", "glm", "invoke", "kimi-k2", "mistral", "harmony", "llama4", "gemma4"],
)
def test_a_marker_inside_a_value_stays_in_it(text: str, value: str) -> None:
    assert calls(text) == [("f", {"v": value})]


def test_a_marker_after_the_calls_in_prose_is_not_read_into_a_value() -> None:
    text = (
        '<invoke name="f"><parameter name="v">1</parameter></invoke>\n'
        "Values end with </parameter>, as shown."
    )
    found = extract_tool_calls(text)
    assert [(c.name, c.arguments) for c in found.calls] == [("f", {"v": 1})]
    assert found.content == "Values end with </parameter>, as shown."


@pytest.mark.parametrize(
    "text",
    [
        '<think>I could write <tool_call>{"name": "f", "arguments": {</think>It is 4 pm.',
        "[THINK]Mistral writes [TOOL_CALLS]f[ARGS]{...}[/THINK]It is 4 pm.",
        'The format: <|open|>call tool="f"<|sep|><|close|>think<|sep|>It is 4 pm.',
    ],
    ids=["think", "THINK", "k3-think"],
)
def test_markers_in_reasoning_are_not_calls(text: str) -> None:
    found = extract_tool_calls(text)
    assert found.calls == ()
    assert not found.markers  # nothing that reads as broken tool-call syntax either
    result = check_tool_calls(text)
    assert result.status is Status.EXTRACTED
    assert "It is 4 pm." in found.content


def test_a_whole_call_in_reasoning_is_still_found_there() -> None:
    text = '<think>\n<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    (call,) = extract_tool_calls(text).calls
    assert call.in_reasoning


# ---------------------------------------------------------------------- cut-off calls


CUT = (
    '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>\n'
    '<tool_call>{"name": "g", "arguments": {"q": "cut mid'
)


def test_a_cut_parallel_call_keeps_the_whole_one_and_reports_the_cut() -> None:
    result = check_tool_calls(CUT)
    assert result.status is Status.TRUNCATED
    assert result.value == [{"id": None, "name": "f", "arguments": {"a": 1}}]
    (cut,) = [d for d in result.diagnostics if d.code == "tools.truncated_call"]
    assert cut.severity is Severity.ERROR
    assert cut.data is not None
    assert cut.data["name"] == "g"


def test_partial_makes_the_cut_a_warning_and_the_gate_pass() -> None:
    result = check_tool_calls(CUT, partial=True)
    assert result.status is Status.TRUNCATED
    assert not result.errors
    out = CliRunner().invoke(app, ["repair", "--tool-calls", "--partial", "--compact"], input=CUT)
    assert out.exit_code == 0, out.stderr
    assert json.loads(out.stdout) == [{"id": None, "name": "f", "arguments": {"a": 1}}]
    failed = CliRunner().invoke(app, ["repair", "--tool-calls", "--compact"], input=CUT)
    assert failed.exit_code == 1
    assert "pass --partial" in failed.stderr


def test_salvage_still_keeps_the_cut_call_as_a_guess() -> None:
    result = check_tool_calls(CUT, salvage=True)
    assert [c["name"] for c in result.value] == ["f", "g"]
    assert result.value[1]["arguments"] == {"q": "cut mid"}


def test_a_cut_list_has_only_its_last_item_cut() -> None:
    text = '[TOOL_CALLS][{"name": "f", "arguments": {}}, {"name": "g", "arguments": {}}, {"na'
    found = extract_tool_calls(text).calls
    assert [(c.name, c.complete) for c in found] == [("f", True), ("g", True)]


# ------------------------------------------------------------------- the newest formats


def test_kimi_k3_ids_reasoning_and_content() -> None:
    text = (
        "Two steps.<|close|>think<|sep|><|open|>response<|sep|>On it.<|close|>response<|sep|>"
        '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|>'
        '<|open|>argument key="n" type="integer"<|sep|>2<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"
    )
    found = extract_tool_calls(text)
    (call,) = found.calls
    assert (call.id, call.name, call.arguments, call.format) == ("f:1", "f", {"n": 2}, "kimi-k3")
    assert found.reasoning == "Two steps."
    assert found.content == "On it."


def test_kimi_k3_cut_mid_call() -> None:
    text = '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="v"'
    text += ' type="string"<|sep|>hal'
    (call,) = extract_tool_calls(text).calls
    assert not call.complete
    assert call.arguments == {"v": "hal"}


def test_dsml_self_closing_invoke_and_spaced_tags() -> None:
    text = (
        '<｜DSML｜ calls>\n<｜DSML｜ invoke name="ping"/>\n<｜DSML｜ invoke name="f">\n'
        '<｜DSML｜ parameter name="v" string="false">{"a": [1]}</｜DSML｜ parameter>\n'
        "</｜DSML｜ invoke>\n</｜DSML｜ calls>"
    )
    assert calls(text) == [("ping", {}), ("f", {"v": {"a": [1]}})]


def test_harmony_final_channel_json_is_text() -> None:
    text = '<|channel|>final<|message|>{"name": "f", "arguments": {}}<|return|>'
    found = extract_tool_calls(text)
    assert found.calls == ()
    assert found.content == '{"name": "f", "arguments": {}}'


# ------------------------------------------------------------------- untyped values


QWEN_ALARM = (
    "<function=set_alarm>\n<parameter=hour>\n7\n</parameter>\n<parameter=code>\n1234\n"
    "</parameter>\n<parameter=enabled>\ntrue\n</parameter>\n</function>"
)


def test_untyped_values_follow_json_literal_rules_without_a_registry() -> None:
    assert calls(QWEN_ALARM) == [("set_alarm", {"hour": 7, "code": 1234, "enabled": True})]


def test_the_registry_types_what_only_it_can() -> None:
    registry = ToolRegistry.from_value(ALARM)
    found = calls(QWEN_ALARM, registry=registry)
    assert found == [("set_alarm", {"hour": 7, "code": "1234", "enabled": True})]


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [('string="true"', "7"), ('string="false"', 7), ('type="string"', "7"), ("", 7)],
)
def test_the_format_attribute_wins_over_the_schema(attribute: str, expected: Any) -> None:
    text = f'<invoke name="set_alarm"><parameter name="hour" {attribute}>7</parameter></invoke>'
    registry = ToolRegistry.from_value(ALARM)
    assert calls(text, registry=registry) == [("set_alarm", {"hour": expected})]


def test_a_string_attribute_wins_over_a_schema_that_says_integer() -> None:
    text = '<invoke name="set_alarm"><parameter name="code" string="false">12</parameter></invoke>'
    registry = ToolRegistry.from_value(ALARM)
    assert calls(text, registry=registry) == [("set_alarm", {"code": 12})]


# --------------------------------------------------------- calls left in a response's text


def _response(name: str) -> str:
    return (CASES / name / "input.txt").read_text(encoding="utf-8")


def test_left_in_content_moves_the_calls_into_tool_calls() -> None:
    result = check_tool_calls(_response("response_vllm_left_in_content"), emit="openai")
    assert result.status is Status.REPAIRED
    (call,) = result.value
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Oslo", "days": 3}
    (note,) = [d for d in result.diagnostics if d.code == "tools.left_in_content"]
    assert note.severity is Severity.WARNING
    assert note.data is not None
    assert note.data["format"] == "qwen3-xml"
    assert note.data["calls"] == [
        {"id": None, "name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}
    ]


def test_server_mismatch_keeps_the_servers_call_and_shows_both_readings() -> None:
    result = check_tool_calls(_response("response_sglang_server_mismatch"))
    (note,) = [d for d in result.diagnostics if d.code == "tools.server_mismatch"]
    assert note.data is not None
    assert note.data["server"] == {"city": "Oslo", "days": "3"}
    assert note.data["text"] == {"city": "Oslo", "days": 3}
    assert [c["name"] for c in result.value] == ["get_weather", "search_web"]


def test_markup_the_server_also_parsed_is_left_out_of_the_content() -> None:
    found = extract_tool_calls(_response("response_vllm_markup_also_parsed"))
    assert found.content == ""
    assert [c.name for c in found.calls] == ["get_weather"]


def test_a_forced_text_format_reads_a_response_text() -> None:
    text = _response("response_llamacpp_left_in_content")
    assert [c.name for c in extract_tool_calls(text, fmt="glm").calls] == ["search_web"]
    assert extract_tool_calls(text, fmt="hermes").calls == ()


def test_check_audits_each_response_of_a_batch(tmp_path: Path) -> None:
    lines = [
        json.dumps(json.loads(_response(name)))
        for name in ("response_vllm_left_in_content", "response_sglang_server_mismatch")
    ]
    batch = tmp_path / "responses.jsonl"
    batch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = CliRunner().invoke(app, ["check", str(batch), "-f", "json"])
    report = json.loads(out.stdout)
    found = {
        item["id"].rsplit(":", 1)[-1]: [d["code"] for d in item["diagnostics"]]
        for item in report["items"]
    }
    assert "tools.left_in_content" in found["1#msg0"]
    assert {"tools.left_in_content", "tools.server_mismatch"} <= set(found["2#msg0"])


def test_ollama_native_response_is_read() -> None:
    result = check_tool_calls(_response("response_ollama_tool_calls"))
    assert result.status is Status.VALID
    assert result.value == [{"id": None, "name": "get_weather", "arguments": {"city": "Oslo"}}]
    cut = json.loads(_response("response_ollama_tool_calls"))
    cut["done_reason"] = "length"
    assert check_tool_calls(json.dumps(cut)).status is Status.TRUNCATED


def test_read_response_items_carry_the_audit() -> None:
    import llmfix

    items = llmfix.read_response(_response("response_vllm_left_in_content"))
    assert [d.code for d in items[0].diagnostics] == ["tools.left_in_content"]
    clean = json.loads(_response("response_vllm_left_in_content"))
    clean["choices"][0]["message"]["content"] = '{"answer": 42}'
    assert llmfix.read_response(clean)[0].diagnostics == ()
