"""Inputs: files and directories to items, every record format, ids and positions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from llmfix.errors import ConfigError, InputError
from llmfix.inputs import (
    Item,
    ReadOptions,
    discover_files,
    field_tokens,
    fixed_record,
    glob_match,
    items_from_file,
    items_from_text,
    resolve_field,
)
from llmfix.model import Position

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "transcripts"


def items_of(path: Path, **options: Any) -> list[Item]:
    return list(items_from_file(str(path), ReadOptions(**options)))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------- discovery


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in (
        "b.txt",
        "a.json",
        "sub/c.jsonl",
        "sub/deep/d.md",
        ".git/x.txt",
        "sub/.cache/y.txt",
    ):
        write(tmp_path / name, "{}")
    return tmp_path


def test_directory_walk_is_sorted_recursive_and_skips_dot_directories(tree: Path) -> None:
    found = [Path(p).relative_to(tree).as_posix() for p in discover_files([str(tree)])]
    assert found == ["a.json", "b.txt", "sub/c.jsonl", "sub/deep/d.md"]


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        (["*.jsonl"], [], ["sub/c.jsonl"]),
        (["sub/**"], [], ["sub/c.jsonl", "sub/deep/d.md"]),
        ([], ["*.md", "a.*"], ["b.txt", "sub/c.jsonl"]),
        (["**/*.md"], [], ["sub/deep/d.md"]),
    ],
)
def test_include_and_exclude_globs_filter_the_walk(
    tree: Path, include: list[str], exclude: list[str], expected: list[str]
) -> None:
    found = discover_files([str(tree)], include, exclude)
    assert [Path(p).relative_to(tree).as_posix() for p in found] == expected


def test_an_explicit_file_is_checked_whatever_the_globs(tree: Path) -> None:
    path = str(tree / "b.txt")
    assert list(discover_files([path], include=["*.json"])) == [path]


def test_a_walk_lists_what_os_walk_lists_but_its_links_and_knows_the_links_named(
    tree: Path,
) -> None:
    (tree / "sub" / "link.txt").symlink_to(tree / "b.txt")
    (tree / "sub" / "broken.txt").symlink_to(tree / "nowhere.txt")
    (tree / "sub" / "dir_link").symlink_to(tree / "sub" / "deep")  # listed, not walked
    expected = []  # what discovery gave when it walked with os.walk, less the links
    for directory, dirnames, filenames in os.walk(str(tree)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        names = sorted(filenames)
        expected += [os.path.join(directory, n) for n in names]
    expected = [path for path in expected if not os.path.islink(path)]
    links: set[str] = set()
    found = list(discover_files([str(tree), str(tree / "sub" / "link.txt")], links=links))
    assert found == [*expected, str(tree / "sub" / "link.txt")]  # a link named is checked
    assert links == {str(tree / "sub" / "link.txt")}


def test_a_missing_path_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        list(discover_files([str(tmp_path / "nope")]))


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.txt", "a/b/c.txt", True),
        ("a/*.txt", "a/b/c.txt", False),
        ("a/**/c.txt", "a/b/c.txt", True),
        ("a/**/c.txt", "a/c.txt", True),
        ("evals/goals/*.jsonl", "evals/goals/run1.jsonl", True),
        ("file?.md", "file1.md", True),
        ("[ab].txt", "c.txt", False),
    ],
)
def test_glob_match(pattern: str, path: str, matches: bool) -> None:
    assert glob_match(pattern, path) is matches


# ----------------------------------------------------------------------- raw text


def test_a_raw_answer_is_one_item_whose_text_is_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "answer.md", "Sure:\n```json\n{}\n```\n")
    [item] = items_of(path)
    assert (item.id, item.kind, item.origin, item.whole_file) == (
        str(path),
        "text",
        Position(1, 1),
        True,
    )


def test_invalid_utf8_is_a_warning_on_the_item(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b'{"a": "\xff"}')
    [item] = items_of(path)
    assert [d.code for d in item.diagnostics] == ["input.invalid_utf8"]


def test_an_unreadable_file_is_an_error_item(tmp_path: Path) -> None:
    path = tmp_path / "bin.txt"
    path.write_bytes(b"\x00" * 100)
    [item] = items_of(path)
    assert item.error is not None
    assert item.error.code == "input.unreadable"


# --------------------------------------------------------------------------- .json


def test_a_plain_json_document_is_checked_whole(tmp_path: Path) -> None:
    path = write(tmp_path / "fixture.json", '{"name": "Ada"}')
    [item] = items_of(path)
    assert (item.id, item.kind, item.text, item.origin) == (
        str(path),
        "document",
        '{"name": "Ada"}',
        Position(1, 1),
    )


def test_a_broken_json_file_is_a_document_to_repair(tmp_path: Path) -> None:
    path = write(tmp_path / "fixture.json", '{"name": "Ada",}')
    [item] = items_of(path)
    assert (item.kind, item.text, item.error) == ("document", '{"name": "Ada",}', None)


def test_openai_chat_completion_gives_content_and_tool_call_items() -> None:
    items = items_of(SAMPLES / "openai" / "chat_completion_tools.json")
    assert [(i.id.rsplit("/", 1)[-1], i.kind, i.tool) for i in items] == [
        ("chat_completion_tools.json#msg0.call0", "tool-call", "issue_refund"),
        ("chat_completion_tools.json#msg0.call1", "tool-call", "escalate_ticket"),
    ]


def test_tool_call_arguments_are_the_text_as_the_model_wrote_them() -> None:
    items = items_of(SAMPLES / "openai" / "chat_completion_tools.json")
    assert items[0].text.startswith("{'order_id': 'ORD-104233'")


def test_responses_api_output_text_is_an_item() -> None:
    [item] = items_of(SAMPLES / "openai" / "responses_api.json")
    assert (item.kind, item.target) == ("response", ("output", 0, "content", 0, "text"))


def test_anthropic_message_gives_text_and_tool_use_items() -> None:
    items = items_of(SAMPLES / "anthropic" / "message.json")
    assert [(i.kind, i.tool) for i in items] == [
        ("anthropic-message", None),
        ("tool-call", "lookup_order"),
    ]


def test_anthropic_tool_use_input_is_serialised_as_json() -> None:
    items = items_of(SAMPLES / "anthropic" / "message.json")
    assert json.loads(items[1].text) == {"order_id": "127730", "include_items": True}


def test_transcript_json_checks_the_last_assistant_turn() -> None:
    [item] = items_of(SAMPLES / "chats" / "session_s-0142.json")
    assert item.id.endswith("session_s-0142.json#msg1")
    assert '"category": "returns"' in item.text


# -------------------------------------------------------------------------- JSONL


def test_openai_batch_output_gives_one_item_per_request() -> None:
    items = items_of(SAMPLES / "openai" / "batch_output.jsonl")
    lines = [i.line for i in items]
    assert lines == sorted(lines)
    assert len(set(lines)) == 9


def test_openai_batch_ids_name_line_and_choice() -> None:
    items = items_of(SAMPLES / "openai" / "batch_output.jsonl")
    path = SAMPLES / "openai" / "batch_output.jsonl"
    assert items[0].id == f"{path}:1[ticket-10231]#msg0"


def test_openai_batch_tool_call_item_is_labelled_with_the_tool() -> None:
    items = items_of(SAMPLES / "openai" / "batch_output.jsonl")
    [call] = [i for i in items if i.kind == "tool-call"]
    assert (call.line, call.tool, call.id.endswith("#msg0.call0")) == (5, "lookup_order", True)


@pytest.mark.parametrize(
    ("path", "line"),
    [(("openai", "batch_output.jsonl"), 6), (("anthropic", "batch_results.jsonl"), 3)],
)
def test_failed_batch_requests_are_error_items(path: tuple[str, str], line: int) -> None:
    items = items_of(SAMPLES.joinpath(*path))
    [failed] = [i for i in items if i.line == line]
    assert failed.error is not None
    assert failed.error.code == "input.batch_error"


def test_anthropic_batch_results_message_text_is_an_item() -> None:
    items = items_of(SAMPLES / "anthropic" / "batch_results.jsonl")
    assert items[0].kind == "anthropic-message"
    assert '"category": "account"' in items[0].text


def test_a_bad_jsonl_line_is_an_error_item_and_reading_goes_on(tmp_path: Path) -> None:
    path = write(tmp_path / "log.jsonl", '{"a": 1}\n{not json\n\n{"b": 2}\n')
    items = items_of(path)
    assert [(i.line, i.error.code if i.error else None) for i in items] == [
        (1, None),
        (2, "input.bad_record"),
        (4, None),
    ]


def test_an_unknown_record_is_checked_whole_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "out.jsonl", '{"a": 1}\n{"b": 2}\n')
    items = items_of(path)
    assert [(i.id, i.text, i.origin) for i in items][1] == (
        f"{path}:2",
        '{"b": 2}',
        Position(2, 1),
    )


@pytest.mark.parametrize("messages", ["last", "all"])
def test_messages_option_picks_transcript_turns(messages: str) -> None:
    path = SAMPLES / "chats" / "support_sessions.jsonl"
    items = [i for i in items_of(path, messages=messages) if i.line == 2]
    expected = [":2#msg4"] if messages == "last" else [":2#msg2", ":2#msg4"]
    assert [i.id[len(str(path)) :] for i in items] == expected


@pytest.mark.parametrize("field", ["/output/text", "output.text"])
def test_field_names_the_text_by_pointer_or_dotted_path(tmp_path: Path, field: str) -> None:
    path = write(tmp_path / "eval.jsonl", json.dumps({"output": {"text": "{'a': 1}"}}) + "\n")
    [item] = items_of(path, field=field)
    assert (item.text, item.target) == ("{'a': 1}", ("output", "text"))


def test_a_missing_field_is_an_error_item(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.jsonl", '{"answer": "x"}\n')
    [item] = items_of(path, field="output")
    assert item.error is not None
    assert item.error.code == "input.missing_field"


def test_a_field_holding_json_is_serialised(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.jsonl", '{"output": {"a": [1]}}\n')
    [item] = items_of(path, field="output")
    assert (item.text, item.target_kind) == ('{"a": [1]}', "value")


def test_group_by_reads_the_record_then_the_batch_body() -> None:
    items = items_of(SAMPLES / "openai" / "batch_output.jsonl", group_by="model")
    assert items[0].group == "gpt-4o-2024-08-06"


def test_stdin_text_is_sniffed_as_json_lines() -> None:
    items = list(items_from_text('{"a": 1}\n{"b": 2}\n', "<stdin>", ReadOptions()))
    assert [i.id for i in items] == ["<stdin>:1", "<stdin>:2"]


def test_stdin_prose_is_one_text_item() -> None:
    [item] = items_from_text("Sure! {'a': 1}", "<stdin>", ReadOptions())
    assert (item.id, item.kind) == ("<stdin>", "text")


# --------------------------------------------------------------------- fields, fixes


@pytest.mark.parametrize(
    ("spec", "tokens"),
    [("/a/0/b~1c", ("a", 0, "b/c")), ("a.0.b", ("a", 0, "b")), ("output", ("output",))],
)
def test_field_tokens(spec: str, tokens: tuple[Any, ...]) -> None:
    assert field_tokens(spec) == tokens


def test_an_empty_field_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        field_tokens("  ")


def test_a_digit_key_still_resolves_in_an_object() -> None:
    assert resolve_field({"a": {"0": "x"}}, field_tokens("a.0")) == "x"


def test_fixed_record_puts_the_repaired_json_back_as_a_string() -> None:
    record = json.loads((SAMPLES / "openai" / "batch_output.jsonl").read_text().splitlines()[2])
    [item] = items_from_text(json.dumps(record), "x.json", ReadOptions(), "json")
    fixed = fixed_record(item.record, [(item, {"ok": True})])
    content = fixed["response"]["body"]["choices"][0]["message"]["content"]
    assert json.loads(content) == {"ok": True}


def test_count_records_counts_the_lines_of_a_jsonl_file_for_the_progress_bar(
    tmp_path: Path,
) -> None:
    from llmfix.inputs import count_records

    log = tmp_path / "big.jsonl"
    log.write_text("".join('{"output": "x"}\n' for _ in range(50_000)) + "\n\n{}")
    (tmp_path / "a.txt").write_text("x\ny\n")
    counts = (count_records(str(log)), count_records(str(tmp_path / "a.txt")))
    assert counts == (50_001, 1)


# ------------------------------------------------------------- ids and keys (issue 20)


def test_a_message_id_cannot_be_read_as_line_and_column(tmp_path: Path) -> None:
    record = {
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "{}"}]
    }
    path = write(tmp_path / "chats.jsonl", json.dumps(record) + "\n")
    [item] = items_of(path)
    assert item.id == f"{path}:1#msg1"


def test_a_batch_output_id_carries_its_custom_id() -> None:
    path = SAMPLES / "anthropic" / "batch_results.jsonl"
    [first] = [i for i in items_of(path) if i.line == 1]
    assert (first.id, first.key) == (f"{path}:1[ticket-20481]#msg0", f"{path}[ticket-20481]#msg0")


def test_keys_survive_a_line_inserted_above(tmp_path: Path) -> None:
    records = [
        {"custom_id": "req-1", "response": {"status_code": 200, "body": {"choices": [
            {"message": {"role": "assistant", "content": "{}"}}]}}},
        {"id": 17, "output": "x"},
        {"output": "{'a': 1}"},
        "{not json",
    ]  # fmt: skip
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path = write(tmp_path / "log.jsonl", "\n".join(lines) + "\n")
    before = [(i.key, i.id) for i in items_of(path)]
    write(path, '{"output": "new first line"}\n' + "\n".join(lines) + "\n")
    after = [(i.key, i.id) for i in items_of(path)][1:]
    assert (
        [k for k, _ in after],
        [i == j for (_, i), (_, j) in zip(before, after, strict=True)],
    ) == (
        [k for k, _ in before],
        [False, False, False, False],
    )


def test_keys_name_custom_id_record_id_or_content_hash(tmp_path: Path) -> None:
    records = [
        {"custom_id": "req-1", "response": {"status_code": 200, "body": {"choices": [
            {"message": {"role": "assistant", "content": "{}"}}]}}},
        {"id": 17, "output": "x"},
        {"output": "{'a': 1}"},
    ]  # fmt: skip
    path = write(tmp_path / "log.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    keys = [i.key[len(str(path)) :] for i in items_of(path)]
    assert (keys[0], keys[1], keys[2][0], len(keys[2])) == ("[req-1]#msg0", "[id=17]", "@", 17)


def test_a_missing_field_names_the_closest_field_of_the_record(tmp_path: Path) -> None:
    path = write(tmp_path / "log.jsonl", json.dumps({"response": {"output": "{}"}}) + "\n")
    [item] = items_of(path, field="response.outptu")
    message = item.error.message if item.error is not None else None
    assert message == "the record has no field response.outptu (did you mean 'response.output'?)"


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        (".", ["a.json", "b.txt", "sub/c.jsonl", "sub/deep/d.md"]),
        ("./", ["a.json", "b.txt", "sub/c.jsonl", "sub/deep/d.md"]),
        ("sub/", ["sub/c.jsonl", "sub/deep/d.md"]),
        ("./sub/deep/..", ["sub/deep/../c.jsonl", "sub/deep/../deep/d.md"]),
    ],
)
def test_a_walk_names_each_file_as_its_path_under_the_root(
    tree: Path, monkeypatch: pytest.MonkeyPatch, root: str, expected: list[str]
) -> None:
    monkeypatch.chdir(tree)
    assert list(discover_files([root])) == expected
    assert list(discover_files([root], include=["**/deep/*"])) == expected[-1:]
    assert list(discover_files([root], exclude=["c.jsonl", "**/deep/*"])) == expected[:-2]
