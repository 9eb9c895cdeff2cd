"""How a result's status is decided, where a new user found it wrong (issues 28 and 27):

- a cut-off answer is ``truncated`` even when its schema errors remain (28.2);
- a refusal written as plain text is ``refused``, not ``unparseable`` (28.9);
- dropping a property the model wrote (``remove_additional``) is a guess, not safe (28.4);
- ``repair --tools`` reads a Gemini response's ``functionCall`` parts as ``check`` does (28.5);
- a tool call whose name no tool can have fails the answer (``tools.bad_name``) instead of
  being dropped in silence (27.14).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import llmfix
from llmfix.batch.gate import gate_failures
from llmfix.batch.responses import repair_response
from llmfix.cli import app
from llmfix.model import Risk, Severity, Status
from llmfix.pipeline.refusals import LONGEST, text_refusal
from llmfix.toolcalls import check_tool_calls, extract_tool_calls
from llmfix.toolcalls.registry import ToolRegistry

REPO = Path(__file__).resolve().parent.parent

TRIAGE = {
    "type": "object",
    "properties": {
        "ticket_id": {"type": "string"},
        "priority": {"enum": ["low", "medium", "high"]},
        "category": {"type": "string"},
        "summary": {"type": "string"},
        "urgent": {"type": "boolean"},
    },
    "required": ["ticket_id", "priority", "category", "summary", "urgent"],
}
CUT = '{"ticket_id": "T-1", "priority": "low", "category": "bil'


@pytest.fixture
def cli() -> Any:
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(app, list(args), input=input)

    return invoke


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "triage.json").write_text(json.dumps(TRIAGE))
    return tmp_path


def _codes(result: llmfix.Result) -> set[str]:
    return {d.code for d in result.diagnostics}


def _chat(content: str, finish_reason: str = "length") -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}


# -- 28.2: truncation outranks schema errors ----------------------------------------------------


def test_a_cut_off_answer_with_a_schema_is_truncated_and_keeps_its_cut_off_error(
    cli: Any, here: Path
) -> None:
    result = cli("repair", "-s", "triage.json", input=CUT)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "<stdin>: truncated" in result.stderr
    assert "error parse.cut_off" in result.stderr
    assert "the answer was cut off (pass --partial" in result.stderr
    # the schema errors are still listed
    assert 'missing required property "summary"' in result.stderr


def test_without_a_schema_the_same_answer_is_truncated_too(cli: Any) -> None:
    result = cli("repair", input=CUT)
    assert (result.exit_code, "<stdin>: truncated" in result.stderr) == (1, True)


def test_the_library_says_truncated_and_lists_the_schema_errors() -> None:
    result = llmfix.repair(CUT, TRIAGE)
    assert result.status is Status.TRUNCATED
    assert {"parse.cut_off", "schema.required"} <= {d.code for d in result.errors}
    cut = next(d for d in result.diagnostics if d.code == "parse.cut_off")
    assert "token limit" in (cut.hint or "")


def test_truncated_ranks_after_invalid() -> None:
    order = list(Status)
    assert order.index(Status.TRUNCATED) > order.index(Status.INVALID)


def test_pick_all_with_a_cut_off_last_value_is_truncated() -> None:
    text = '{"ticket_id": "T-1"}\n{"ticket_id": "T-2", "priority": "lo'
    result = llmfix.repair(text, TRIAGE, pick="all")
    assert result.status is Status.TRUNCATED


CLOSED_BUT_CUT = '{"ticket_id": "T-1", "priority": "low"}'
API_CUTS = {
    "openai-chat": _chat(CLOSED_BUT_CUT),
    "openai-responses": {
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": CLOSED_BUT_CUT}],
            }
        ],
    },
    "anthropic": {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": CLOSED_BUT_CUT}],
        "stop_reason": "max_tokens",
    },
    "gemini": {
        "candidates": [
            {"content": {"parts": [{"text": CLOSED_BUT_CUT}]}, "finishReason": "MAX_TOKENS"}
        ]
    },
}


@pytest.mark.parametrize("shape", sorted(API_CUTS))
def test_an_api_cut_off_answer_that_violates_the_schema_is_truncated(shape: str) -> None:
    ((_, result),) = repair_response(API_CUTS[shape], TRIAGE)
    assert result.status is Status.TRUNCATED
    assert {"response.cut_off", "schema.required"} <= {d.code for d in result.errors}


def test_with_partial_an_api_cut_off_answer_has_its_missing_fields_not_arrived() -> None:
    ((_, result),) = repair_response(API_CUTS["openai-chat"], TRIAGE, partial=True)
    assert result.status is Status.TRUNCATED
    assert not result.errors
    assert "partial.missing" in _codes(result)
    assert gate_failures(result, partial=True) == []


def test_a_batch_of_cut_off_responses_is_counted_truncated(cli: Any, here: Path) -> None:
    answers = here / "answers"
    answers.mkdir()
    for i in range(4):
        (answers / f"r{i}.json").write_text(json.dumps(_chat(CLOSED_BUT_CUT)))
    (answers / "ok.json").write_text(
        json.dumps(
            _chat(
                CLOSED_BUT_CUT[:-1] + ', "category": "x", "summary": "s", "urgent": false}', "stop"
            )
        )
    )
    result = cli("check", "answers", "-s", "triage.json", "-f", "json", "-o", "report.json")
    assert result.exit_code == 1
    summary = json.loads((here / "report.json").read_text())["summary"]
    assert summary["status"] == {"truncated": 4, "valid": 1}
    text = cli("check", "answers", "-s", "triage.json")
    assert "truncated" in text.stdout + text.stderr


def test_partial_keeps_what_arrived_when_it_is_right(cli: Any, here: Path) -> None:
    result = cli("repair", "-s", "triage.json", "--partial", "--compact", input=CUT)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"ticket_id": "T-1", "priority": "low"}


def test_partial_does_not_pass_a_cut_off_answer_whose_arrived_part_is_wrong(
    cli: Any, here: Path
) -> None:
    wrong = '{"ticket_id": 7, "priority": "low", "category": "bil'
    result = cli("repair", "-s", "triage.json", "--partial", "--no-schema-repair", input=wrong)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "<stdin>: truncated" in result.stderr
    assert "what arrived has 1 error" in result.stderr


def test_a_guided_reading_of_a_cut_off_answer_is_still_truncated() -> None:
    # the ordinary reading invents "bar": null, which the schema refuses; the schema-guided
    # reading leaves the cut-off key out, and the answer is still said to be cut off
    schema = {
        "type": "object",
        "properties": {"foo": {"type": "string"}, "bar": {"type": "string"}},
    }
    result = llmfix.repair('{"foo": "bar", "bar":', schema)
    assert (result.status, result.value) == (Status.TRUNCATED, {"foo": "bar"})
    assert "parse.cut_off" in {d.code for d in result.errors}
    assert gate_failures(result)
    kept = llmfix.repair('{"foo": "bar", "bar":', schema, partial=True)
    assert (kept.status, kept.value, gate_failures(kept, partial=True)) == (
        Status.TRUNCATED,
        {"foo": "bar"},
        [],
    )


# -- 28.9: a refusal in words is refused --------------------------------------------------------

REFUSALS = [
    # OpenAI
    "I'm sorry, but I can't help with that.",
    "I'm sorry, but I can't assist with that.",
    "I’m sorry — I can’t help with that request.",
    "Sorry, I can't do that.",
    "I'm sorry, but I cannot comply with that request.",
    "I apologize, but as an AI developed by OpenAI, I can't assist with that.",
    # Anthropic
    "I can't help with creating that. If you're working on something else, I'm glad to help.",
    "I apologize, but I cannot provide instructions for that.",
    "I'm not able to help with that request.",
    "I don't feel comfortable writing that.",
    "I must decline this request.",
    # Llama
    "I can't fulfill that request.",
    "I cannot provide information or guidance on illegal or harmful activities. "
    "Can I help you with something else?",
    # Gemini
    "I'm just a language model, so I can't help you with that.",
    "I'm a language model and don't have the capacity to help with that.",
    "I'm not able to help with that, as I'm only a language model.",
    # Mistral, Qwen, DeepSeek and others
    "As an AI language model, I cannot generate that content.",
    "I'm unable to assist with that.",
    "Unfortunately, I'm unable to provide that information.",
    "I won't be able to help with this request.",
    "That's not something I can help with.",
    "Sorry, that's beyond my current scope. Let's talk about something else.",
    "I'm sorry for any inconvenience, but I can't help with that.",
    "I'm sorry. I can't help with that.",
    # decorated: markdown, quotes, a reasoning block before it
    "**I'm sorry, but I can't help with that.**",
    "> “I’m sorry, but I can’t help with that.”",
    "<think>The user asks for something I should not give.</think>\n"
    "I'm sorry, but I can't help with that.",
    # other languages
    "Je suis désolé, mais je ne peux pas vous aider avec cela.",
    "Es tut mir leid, aber ich kann dabei nicht helfen.",
    "Lo siento, pero no puedo ayudar con eso.",
    "抱歉，我无法帮助您完成这个请求。",
]

NEAR_MISSES = [
    "Sorry for the delay! The meeting is at 3pm.",
    "I'm sorry to hear that. Here's how to fix it: restart the service.",
    "Sorry about that, the answer is 42.",
    "I can't help but notice the data is missing a field.",
    "I cannot find any JSON in the input you provided.",
    "I can't wait to help!",
    "I can help with that. Please share the document.",
    "I won't lie, this was hard.",
    "I will not give up on this.",
    "As an AI, I think the answer is 4.",
    "Unfortunately, the data you sent is incomplete, so the name is unknown.",
    "I'm unable to access the URL, but here is a summary of the title.",
    "The user said: I'm sorry, but I can't help with that.",
    "Here is my answer. I can't help with that part.",
    "Name: Ada. I can't help with the age.",
    "There is no JSON in this answer.",
]


@pytest.mark.parametrize("text", REFUSALS)
def test_a_refusal_in_words_is_refused(text: str) -> None:
    result = llmfix.repair(text)
    assert (result.status, result.value) == (Status.REFUSED, None)
    (refusal,) = result.diagnostics
    assert (refusal.code, refusal.severity) == ("response.refused", Severity.ERROR)
    assert (refusal.data or {}).get("refusal")


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_prose_that_is_no_refusal_stays_unparseable(text: str) -> None:
    assert text_refusal(text) is None
    assert llmfix.repair(text).status is Status.UNPARSEABLE


def test_a_refusal_is_not_read_as_the_string_a_schema_asks_for() -> None:
    result = llmfix.repair("I'm sorry, but I can't help with that.", {"type": "string"})
    assert result.status is Status.REFUSED


@pytest.mark.parametrize(
    "text",
    [
        'I\'m sorry, I can\'t help with that. {"error": "declined"}',
        "I'm sorry, but I can't help with that.\n```json\n{\"a\": 1}\n```",
        json.dumps("I'm sorry, but I can't help with that."),  # a JSON string
    ],
)
def test_an_answer_holding_json_is_never_refused(text: str) -> None:
    assert llmfix.repair(text).status not in (Status.REFUSED, Status.UNPARSEABLE)


def test_a_long_text_is_not_read_as_a_refusal() -> None:
    text = "I'm sorry, but I can't help with that. " + "More words follow here. " * LONGEST
    assert llmfix.repair(text).status is Status.UNPARSEABLE


def test_refused_in_the_cli_and_in_a_check_summary(cli: Any, here: Path) -> None:
    result = cli("repair", input="I'm sorry, but I can't help with that.")
    assert result.exit_code == 1
    assert "<stdin>: refused" in result.stderr
    answers = here / "answers"
    answers.mkdir()
    (answers / "a.txt").write_text("I'm sorry, but I can't assist with that.")
    (answers / "b.txt").write_text("There is no JSON in this answer.")
    cli("check", "answers", "-f", "json", "-o", "report.json")
    summary = json.loads((here / "report.json").read_text())["summary"]
    assert summary["status"] == {"refused": 1, "unparseable": 1}


def test_a_refusal_in_a_chat_completion_is_refused() -> None:
    ((_, result),) = repair_response(_chat("I can't help with that.", "stop"), TRIAGE)
    assert result.status is Status.REFUSED


def test_the_llm_is_not_asked_to_repair_a_refusal() -> None:
    from llmfix.llm.loop import needs_llm

    assert not needs_llm(llmfix.repair("I'm sorry, but I can't help with that."))
    assert not needs_llm(llmfix.repair(CUT, TRIAGE))


# -- 28.4: removing a property the model wrote is a guess ---------------------------------------

PERSON_ANSWER = {"name": "Ada", "age": 36, "mail": "ada@example.com", "languages_spoken": ["en"]}


def test_remove_additional_is_a_guess() -> None:
    from llmfix.schema.repair import RULES

    assert RULES["remove_additional"].risk is Risk.GUESS


def test_max_risk_safe_keeps_the_models_properties_and_fails(cli: Any, tmp_path: Path) -> None:
    answer = tmp_path / "p.json"
    answer.write_text(json.dumps(PERSON_ANSWER))
    schema = str(REPO / "samples" / "person.schema.json")
    result = cli("repair", str(answer), "-s", schema, "--max-risk", "safe")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "schema.additional_properties" in result.stderr
    assert "repair.remove_additional" not in result.stderr


def test_without_a_limit_the_removal_is_reported_as_a_guess(tmp_path: Path) -> None:
    schema = json.loads((REPO / "samples" / "person.schema.json").read_text())
    result = llmfix.repair(json.dumps(PERSON_ANSWER), schema)
    assert (result.status, result.risk) == (Status.REPAIRED, Risk.GUESS)
    removed = {op.path: op.before for op in result.patch if op.rule == "remove_additional"}
    assert removed == {"/mail": "ada@example.com", "/languages_spoken": ["en"]}


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_web",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    }
]


def _openai_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": name}}
    call["function"]["arguments"] = json.dumps(arguments)
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


def test_a_tool_calls_extra_argument_is_kept_under_max_risk_safe() -> None:
    registry = ToolRegistry.from_value(TOOLS)
    text = json.dumps(_openai_call("search_web", {"query": "x", "lang": "pt"}))
    result = check_tool_calls(text, registry, max_risk=Risk.SAFE)
    assert result.status is Status.INVALID
    assert result.value[0]["arguments"] == {"query": "x", "lang": "pt"}
    assert gate_failures(result, max_risk=Risk.SAFE)


# -- 28.5: Gemini tool calls in `repair` --------------------------------------------------------

GEMINI = {
    "candidates": [
        {
            "content": {
                "parts": [
                    {
                        "functionCall": {
                            "name": "search_web",
                            "args": {"query": "weather Lisbon", "max_results": "3"},
                        }
                    }
                ]
            },
            "finishReason": "STOP",
        }
    ]
}


@pytest.fixture
def gemini_files(tmp_path: Path) -> tuple[Path, Path]:
    answer, tools = tmp_path / "g.json", tmp_path / "tools.json"
    answer.write_text(json.dumps(GEMINI))
    tools.write_text(json.dumps(TOOLS))
    return answer, tools


def test_repair_tools_reads_a_gemini_function_call(
    cli: Any, gemini_files: tuple[Path, Path]
) -> None:
    answer, tools = gemini_files
    result = cli("repair", str(answer), "--tools", str(tools), "--compact")
    assert result.exit_code == 0, result.stderr
    (call,) = json.loads(result.stdout)
    assert (call["name"], call["arguments"]) == (
        "search_web",
        {"query": "weather Lisbon", "max_results": 3},
    )
    assert "repaired" in result.stderr


def test_repair_tool_calls_reads_a_gemini_function_call(
    cli: Any, gemini_files: tuple[Path, Path]
) -> None:
    answer, _ = gemini_files
    result = cli("repair", str(answer), "--tool-calls", "--compact")
    assert result.exit_code == 0, result.stderr
    (call,) = json.loads(result.stdout)
    assert (call["name"], call["arguments"]) == (
        "search_web",
        {"query": "weather Lisbon", "max_results": "3"},
    )


def test_repair_and_check_read_the_same_gemini_call(
    cli: Any, gemini_files: tuple[Path, Path], tmp_path: Path
) -> None:
    answer, tools = gemini_files
    report = tmp_path / "report.json"
    cli("check", str(answer), "--tools", str(tools), "-f", "json", "-o", str(report))
    (item,) = json.loads(report.read_text())["items"]
    repaired = json.loads(cli("repair", str(answer), "--tools", str(tools)).stdout)
    assert [(c["name"], c["arguments"]) for c in repaired] == [(item["tool"], item["value"])]


def test_the_gemini_format_is_detected_and_a_second_candidate_noted() -> None:
    two = {"candidates": [GEMINI["candidates"][0], GEMINI["candidates"][0]]}
    found = extract_tool_calls(json.dumps(two))
    assert (found.format, [c.name for c in found.calls]) == ("gemini", ["search_web"])
    assert "tools.choices" in {d.code for d in found.diagnostics}


# -- 27.14: a tool call with an unusable name fails ---------------------------------------------

BAD = "rm -rf /"


@pytest.mark.parametrize("fail_on", ["invalid", "repaired"])
@pytest.mark.parametrize("flag", ["--tools", "--tool-calls"])
def test_repair_fails_a_call_with_an_unusable_name(
    cli: Any, tmp_path: Path, fail_on: str, flag: str
) -> None:
    answer, tools = tmp_path / "bad.json", tmp_path / "tools.json"
    answer.write_text(json.dumps(_openai_call(BAD, {})))
    tools.write_text(json.dumps(TOOLS))
    args = [str(answer), flag, *([str(tools)] if flag == "--tools" else [])]
    result = cli("repair", *args, "--fail-on", fail_on)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert 'tools.bad_name: a tool call named "rm -rf /"' in result.stderr


@pytest.mark.parametrize("fail_on", ["invalid", "repaired"])
def test_check_fails_a_call_with_an_unusable_name(cli: Any, here: Path, fail_on: str) -> None:
    (here / "bad.json").write_text(json.dumps(_openai_call(BAD, {"q": 1})))
    result = cli("check", "bad.json", "--fail-on", fail_on)
    assert result.exit_code == 1
    assert "tools.bad_name" in result.stdout + result.stderr


@pytest.mark.parametrize(
    "text",
    [
        json.dumps([{"name": BAD, "arguments": {}}]),  # a whole bare JSON call
        f"<tool_call>{json.dumps({'name': BAD, 'arguments': {}})}</tool_call>",  # an envelope
        json.dumps({"toolCalls": [{"toolName": BAD, "args": {}}]}),
        json.dumps({"tool_calls": [{"function": {"name": 42, "arguments": "{}"}}]}),
        # readers that take any name as written (an XML attribute)
        '<function_calls><invoke name="rm -rf /"><parameter name="a">1</parameter></invoke>'
        "</function_calls>",
        '<minimax:tool_call><invoke name="rm -rf /"><parameter name="a">1</parameter></invoke>'
        "</minimax:tool_call>",
    ],
)
def test_an_unusable_name_is_an_error_in_every_json_shape(text: str) -> None:
    result = check_tool_calls(text)
    assert not result.ok
    assert "tools.bad_name" in {d.code for d in result.errors}


def test_a_good_call_beside_a_bad_one_is_kept_and_the_answer_still_fails() -> None:
    calls = [{"name": BAD, "arguments": {}}, {"name": "search_web", "arguments": {"query": "x"}}]
    text = "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
    result = check_tool_calls(text, ToolRegistry.from_value(TOOLS))
    assert [c["name"] for c in result.value] == ["search_web"]
    assert result.status is Status.INVALID


def test_a_call_named_in_an_xml_attribute_is_never_output_with_an_unusable_name() -> None:
    text = (
        '<function_calls><invoke name="search_web"><parameter name="query">x</parameter>'
        '</invoke><invoke name="rm -rf /"><parameter name="a">1</parameter></invoke>'
        "</function_calls>"
    )
    result = check_tool_calls(text)
    assert [c["name"] for c in result.value] == ["search_web"]
    assert result.status is Status.INVALID


def test_the_name_is_shown_escaped() -> None:
    text = json.dumps([{"name": "a\x1b[31m\u202eb\nc", "arguments": {}}])
    (bad,) = [d for d in check_tool_calls(text).diagnostics if d.code == "tools.bad_name"]
    assert not {"\x1b", "\u202e", "\n"} & set(bad.message)
    assert '"a\\u001b[31m\\u202eb\\nc"' in bad.message


def test_data_that_names_no_call_is_not_a_bad_call() -> None:
    # an object with a name and no arguments is data, whatever the name
    result = check_tool_calls(json.dumps({"name": "Bob Smith"}))
    assert "tools.bad_name" not in {d.code for d in result.diagnostics}
