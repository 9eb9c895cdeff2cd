"""Every diagnostic code llmfix emits, registered once as data.

This module is long because it is a table: one entry per code (id, stage, severity, risk,
summary, doc and, where a library call shows it, an example input). Every
:class:`~llmfix.model.Diagnostic` is made through a code here: ``PARSE_FAILED.at(message,
...)`` fills in the code, stage and severity; a code whose id is built at run time
(``schema.<keyword>``, ``repair.<rule>``, a reading's code) is looked up with :func:`get`,
which refuses an id that is not registered. The README's table of codes is written from
this registry (``scripts/readme_tables.py``), and ``llmfix explain CODE`` prints an
entry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llmfix.model import Diagnostic, Position, Risk, Severity, Span

__all__ = ["CODES", "FAMILIES", "Code", "Example", "closest", "get", "markdown"]

ERROR = Severity.ERROR
WARNING = Severity.WARNING
INFO = Severity.INFO
LOSSLESS = Risk.LOSSLESS
SAFE = Risk.SAFE
GUESS = Risk.GUESS


@dataclass(frozen=True)
class Example:
    """An input that produces a code through the library, run ``via``:

    - ``"repair"``: ``llmfix.repair(text, schema, **options)``;
    - ``"tools"``: ``llmfix.check_tool_calls(text, tools, **options)``;
    - ``"parse"``: the parse stage alone, ``llmfix.parse.core.parse_json(text)`` (a repair
      of the reader's that a whole answer gets from extraction instead).

    ``llmfix explain`` runs it to show the real diagnostics; a test checks that each
    example still produces its code."""

    text: str
    schema: Any = None
    tools: Any = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    via: str = "repair"


@dataclass(frozen=True, eq=False)
class Code:
    """One diagnostic code: what it is and how to make a :class:`Diagnostic` of it.

    ``risks`` are the risk tiers its repairs may carry, the usual one first (empty for a
    code that is not a change); ``doc`` says what it means and what the user can do."""

    id: str
    stage: str
    severity: Severity
    risks: tuple[Risk, ...]
    summary: str
    doc: str
    example: Example | None = None

    @property
    def risk(self) -> Risk | None:
        """The default risk tier (``None`` for a code that is not a change)."""
        return self.risks[0] if self.risks else None

    @property
    def family(self) -> str:
        return self.id.partition(".")[0]

    def at(
        self,
        message: str,
        *,
        pointer: str | None = None,
        span: Span | None = None,
        rule: str | None = None,
        risk: Risk | None = None,
        hint: str | None = None,
        position: Position | None = None,
        data: Mapping[str, Any] | None = None,
        related: tuple[Span, ...] = (),
        related_positions: tuple[Position, ...] = (),
        severity: Severity | None = None,
        stage: str | None = None,
    ) -> Diagnostic:
        """A diagnostic of this code. ``severity`` and ``stage`` default to the registered
        ones; pass them only where the code genuinely varies (a cut-off answer is a warning
        with ``--partial``; ``limits.time`` names the stage that ran out of time)."""
        return Diagnostic(
            self.id,
            severity or self.severity,
            stage or self.stage,
            message,
            pointer,
            span,
            rule,
            risk,
            hint,
            position,
            data,
            related,
            related_positions,
        )

    def instead_of(self, diagnostic: Diagnostic, **changes: Any) -> Diagnostic:
        """``diagnostic`` recast as this code (its code, severity and stage), with ``changes``
        (a schema error that is a missing tool argument, say)."""
        return dataclasses.replace(
            diagnostic, code=self.id, severity=self.severity, stage=self.stage, **changes
        )


CODES: dict[str, Code] = {}


def _code(
    id: str,
    stage: str,
    severity: Severity,
    risks: Risk | tuple[Risk, ...] | None,
    summary: str,
    doc: str,
    example: Example | None = None,
) -> Code:
    if id in CODES:
        raise ValueError(f"code {id!r} registered twice")
    if risks is None:
        risks = ()
    elif isinstance(risks, Risk):
        risks = (risks,)
    code = Code(id, stage, severity, risks, summary, " ".join(doc.split()), example)
    CODES[id] = code
    return code


def get(id: str) -> Code:
    """The registered code ``id``; a ``KeyError`` naming the closest one when there is none."""
    try:
        return CODES[id]
    except KeyError:
        near = closest(id)
        raise KeyError(
            f"unregistered diagnostic code {id!r}" + (f" (did you mean {near!r}?)" if near else "")
        ) from None


def closest(id: str) -> str | None:
    """The registered id nearest to ``id`` (for a misspelt ``llmfix explain``)."""
    import difflib  # only for a misspelt id

    found = difflib.get_close_matches(id, list(CODES), n=1, cutoff=0.5)
    return found[0] if found else None


def _ex(text: str, schema: Any = None, **options: Any) -> Example:
    return Example(text, schema, None, options)


def _tools_ex(text: str, tools: Any, **options: Any) -> Example:
    return Example(text, None, tools, options, via="tools")


_WEATHER = [
    {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    }
]
_PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
_COLOURS = {"type": "array", "items": {"enum": ["red", "green", "blue"]}}

# --- normalize ---------------------------------------------------------------------------

NORMALIZE_REASONING_BLOCK = _code(
    "normalize.reasoning_block",
    "normalize",
    INFO,
    None,
    "a `<think>`/`<thinking>`/`<reasoning>`/`<scratchpad>` block set aside",
    """A reasoning model wrote its thinking in a block before the answer. The block is set
    aside and the answer is read from the text around it; a value found only inside the
    block is reported as `extract.only_in_reasoning`.""",
    _ex('<think>the user wants JSON</think>{"a": 1}'),
)
NORMALIZE_UNTERMINATED_REASONING = _code(
    "normalize.unterminated_reasoning",
    "normalize",
    WARNING,
    None,
    "a reasoning block that never closes",
    """The answer opens a reasoning block and never closes it: the model was probably cut
    off while still thinking. Raise the request's token limit.""",
    _ex('<think>first {"a": 1} then'),
)
NORMALIZE_BOM = _code(
    "normalize.bom",
    "normalize",
    INFO,
    None,
    "the text starts with a byte order mark (U+FEFF)",
    """A byte order mark before the JSON is removed; nothing else changes.""",
    _ex('\ufeff{"a": 1}'),
)
NORMALIZE_INVISIBLE_CHARS = _code(
    "normalize.invisible_chars",
    "normalize",
    INFO,
    (LOSSLESS, SAFE),
    "invisible characters removed from the JSON payload",
    """Zero-width spaces, joiners and other invisible characters between tokens are removed
    (lossless). A NUL deleted inside a string changes the string: then the risk is `safe`
    and the answer is `repaired`.""",
    _ex('{"a":\u200b 1}'),
)
NORMALIZE_NFKC = _code(
    "normalize.nfkc",
    "normalize",
    INFO,
    LOSSLESS,
    "fullwidth or other compatibility characters in the JSON structure normalised",
    """Brackets, quotes, colons or commas written as fullwidth or other compatibility forms
    (`｛`, `：`) are replaced by their ASCII forms; strings are left as written.""",
    _ex('\uff5b"a"\uff1a 1\uff5d'),
)

# --- extract -----------------------------------------------------------------------------

EXTRACT_FENCE = _code(
    "extract.fence",
    "extract",
    INFO,
    LOSSLESS,
    "the value was taken from a markdown code fence",
    """The answer holds its JSON in a ```` ```json ```` fence; the fence's content is read.""",
    _ex('Here it is:\n```json\n{"a": 1}\n```'),
)
EXTRACT_UNTERMINATED_FENCE = _code(
    "extract.unterminated_fence",
    "extract",
    WARNING,
    None,
    "a markdown fence that never closes",
    """The fence opens and the text ends before it closes: the output was probably cut
    off. Raise the request's token limit.""",
    _ex('```json\n{"a": 1}'),
)
EXTRACT_PROSE = _code(
    "extract.prose",
    "extract",
    INFO,
    LOSSLESS,
    "a value found in prose",
    """The JSON value was found inside text around it; the prose is not part of the value.
    Asking the model for JSON only (or a structured-output mode) avoids it.""",
    _ex('Sure! The result is {"a": 1} as requested.'),
)
EXTRACT_JSONP = _code(
    "extract.jsonp",
    "extract",
    INFO,
    LOSSLESS,
    "a `callback(...)` wrapper around the value",
    """The value is wrapped in a JSONP function call; the argument is read.""",
    _ex('callback({"a": 1});'),
)
EXTRACT_XML_ENVELOPE = _code(
    "extract.xml_envelope",
    "extract",
    INFO,
    LOSSLESS,
    "the value was taken from an XML-like envelope",
    """The value sits in a `<json>`, `<output>`, `<answer>`, `<tool_call>`, `<result>` or
    `<response>` element; its content is read.""",
    _ex('<answer>{"a": 1}</answer>'),
)
EXTRACT_UNTERMINATED_ENVELOPE = _code(
    "extract.unterminated_envelope",
    "extract",
    WARNING,
    None,
    "an XML-like envelope that never closes",
    """An `<answer>`-like element opens and the text ends before it closes: the output
    was probably cut off.""",
    _ex('<answer>{"a": 1}'),
)
EXTRACT_FUNCTION_CALLS = _code(
    "extract.function_calls",
    "extract",
    INFO,
    (LOSSLESS, SAFE),
    'an Anthropic `<invoke>` turned into `{"name", "arguments"}`',
    """A tool call written in Anthropic's `<function_calls>`/`<invoke>` XML is read as an
    object with the tool's name and its arguments.""",
    _ex(
        '<function_calls><invoke name="get_weather">'
        '<parameter name="city">Paris</parameter></invoke></function_calls>'
    ),
)
EXTRACT_DOUBLE_ENCODED = _code(
    "extract.double_encoded",
    "extract",
    INFO,
    LOSSLESS,
    "a JSON document inside a JSON string",
    """The whole answer is a JSON string whose content is a JSON document; the inner
    document is read.""",
    _ex('"{\\"a\\": 1}"', {"type": "object"}),
)
EXTRACT_IN_REASONING = _code(
    "extract.in_reasoning",
    "extract",
    WARNING,
    None,
    "a candidate value inside a reasoning block",
    """A JSON-like value was found inside a reasoning block; it is a candidate only when
    the answer outside the block has none.""",
    _ex('<think>maybe {"a": 1}</think>'),
)
EXTRACT_ONLY_IN_REASONING = _code(
    "extract.only_in_reasoning",
    "select",
    WARNING,
    None,
    "the value used was found only inside a reasoning block",
    """The answer outside the reasoning block has no value, so the one from inside the
    block was used: it may be a draft the model discarded.""",
    _ex('<think>maybe {"a": 1}</think>'),
)
EXTRACT_AMBIGUOUS = _code(
    "extract.ambiguous",
    "select",
    WARNING,
    None,
    "two different valid values in one answer; both spans named",
    """The answer holds more than one different value that could be the answer; the one
    picked is said, the other's place named. Pick another with `--pick`, or ask the model
    for one value.""",
    _ex('First {"a": 1} and then {"b": 2}'),
)
EXTRACT_NONE = _code(
    "extract.none",
    "extract",
    WARNING,
    None,
    "nothing JSON-like in the text",
    """No fence, envelope, bracket or other sign of JSON was found; the whole text is
    passed on as it is (a schema may still read it; see `guided.*`).""",
    _ex("just some words here"),
)
EXTRACT_TOO_MANY = _code(
    "extract.too_many",
    "extract",
    WARNING,
    None,
    "the candidate limit was hit",
    """The text holds more candidate values than extraction looks at; the rest were not
    considered.""",
)

# --- parse -------------------------------------------------------------------------------


def _parse(
    name: str,
    risks: Risk | tuple[Risk, ...] | None,
    summary: str,
    doc: str,
    text: str | None,
    *,
    reader: bool = False,
) -> Code:
    example = Example(text, via="parse" if reader else "repair") if text is not None else None
    return _code(f"parse.{name}", "parse", WARNING, risks, summary, doc, example)


_REPAIR = "The lenient reader repaired the text; the span and line:column say where."

PARSE_TRAILING_COMMA = _parse(
    "trailing_comma",
    LOSSLESS,
    "a comma before a closing bracket, or a doubled comma, removed",
    _REPAIR + " JSON allows no comma before `}` or `]`.",
    '{"a": 1,}',
)
PARSE_LEADING_COMMA = _parse(
    "leading_comma",
    LOSSLESS,
    "a comma right after an opening bracket removed",
    _REPAIR,
    "[, 1, 2]",
)
PARSE_COMMENT = _parse(
    "comment", LOSSLESS, "a `/* */`, `//` or `#` comment removed", _REPAIR, '{"a": 1 // one\n}'
)
PARSE_FENCE = _parse(
    "fence",
    LOSSLESS,
    "a markdown code fence around the value removed",
    _REPAIR + " Reported when the reader itself met the fence (inside a value).",
    '{"a": ```json\n[1]\n```}',
)
PARSE_JSONP = _parse(
    "jsonp",
    LOSSLESS,
    "a JSONP `callback(...)` wrapper removed",
    _REPAIR + " Reported when the reader itself met the wrapper (extraction usually does).",
    'cb({"a": 1});',
    reader=True,
)
PARSE_MONGO_WRAPPER = _parse(
    "mongo_wrapper",
    LOSSLESS,
    'a MongoDB type wrapper removed (`ObjectId("…")` → `"…"`)',
    _REPAIR,
    '{"_id": ObjectId("5f1d")}',
)
PARSE_SPECIAL_WHITESPACE = _parse(
    "special_whitespace",
    LOSSLESS,
    "a non-JSON space character (no-break space, BOM, …) removed",
    _REPAIR + " In a whole answer, normalization usually replaces it first (`normalize.nfkc`).",
    "[\u00a01]",
    reader=True,
)
PARSE_SINGLE_QUOTES = _parse(
    "single_quotes", SAFE, "a string in single quotes", _REPAIR, "{'a': 'b'}"
)
PARSE_SMART_QUOTES = _parse(
    "smart_quotes",
    SAFE,
    "a string in curly quotes, backticks or other quote marks",
    _REPAIR,
    "{\u201ca\u201d: 1}",
)
PARSE_UNQUOTED_KEY = _parse("unquoted_key", SAFE, "an object key without quotes", _REPAIR, "{a: 1}")
PARSE_PYTHON_LITERAL = _parse(
    "python_literal",
    SAFE,
    "Python `True`/`False`/`None` (and case variants), a tuple or a set",
    _REPAIR,
    '{"a": True}',
)
PARSE_JS_LITERAL = _parse(
    "js_literal",
    SAFE,
    "JavaScript `undefined`/`NaN`/`Infinity`, read as null",
    _REPAIR + " JSON has no such values; null stands for them.",
    '{"a": undefined}',
)
PARSE_UNESCAPED_CONTROL = _parse(
    "unescaped_control",
    SAFE,
    "a raw newline, tab or control character inside a string",
    _REPAIR,
    '{"a": "one\ntwo"}',
)
PARSE_INVALID_ESCAPE = _parse(
    "invalid_escape",
    SAFE,
    "a backslash escape JSON does not define (the backslash is kept)",
    _REPAIR,
    '{"a": "C:\\d"}',
)
PARSE_ESCAPED_DOCUMENT = _parse(
    "escaped_document",
    SAFE,
    'a whole document written as escaped string contents (`\\"…\\"`)',
    _REPAIR,
    '{\\"a\\": 1}',
)
PARSE_REGEX_LITERAL = _parse(
    "regex_literal",
    SAFE,
    "a `/regular expression/` read as a string",
    _REPAIR,
    '{"a": /ab+c/}',
)
PARSE_MISSING_COLON = _parse(
    "missing_colon", SAFE, "a colon added between a key and its value", _REPAIR, '{"a" 1}'
)
PARSE_LEADING_ZERO = _parse(
    "leading_zero", SAFE, "a number with leading zeros, kept as a string", _REPAIR, '{"a": 007}'
)
PARSE_TRUNCATED = _parse(
    "truncated",
    (SAFE, GUESS),
    "the input ended early: brackets closed, a string or number completed",
    _REPAIR
    + """ Safe when only closing brackets were missing, a guess when a string or
    number was cut. The answer was probably cut off at the token limit: raise it, or pass
    `--partial` to keep only what is complete.""",
    '{"a": [1, 2',
)
PARSE_UNESCAPED_QUOTE = _parse(
    "unescaped_quote",
    GUESS,
    "a quote inside a string that was not escaped",
    _REPAIR,
    '{"a": "say "hi" now"}',
)
PARSE_MISSING_COMMA = _parse(
    "missing_comma", GUESS, "a comma added between two items", _REPAIR, '{"a": 1 "b": 2}'
)
PARSE_MISSING_VALUE = _parse(
    "missing_value", GUESS, "a key without a value, read as null", _REPAIR, '{"a": }'
)
PARSE_MISSING_CLOSER = _parse(
    "missing_closer",
    GUESS,
    "a closing bracket added before a bracket of another kind",
    _REPAIR,
    '{"a": [1, 2}',
)
PARSE_MISSING_OPENER = _parse(
    "missing_opener",
    GUESS,
    "an opening brace added for a `key: value` inside an array",
    _REPAIR,
    '[{"a": 1}, "b": 2}]',
)
PARSE_MISSING_QUOTE = _parse(
    "missing_quote",
    GUESS,
    "a closing quote added where the string must have ended",
    _REPAIR,
    '{"a": "b, "c": 1}',
)
PARSE_REDUNDANT_CLOSER = _parse(
    "redundant_closer",
    GUESS,
    "a bracket with nothing to match removed (`}}`, `{{`)",
    _REPAIR,
    '{"a": 1}}',
)
PARSE_INVALID_NUMBER = _parse(
    "invalid_number",
    (GUESS, SAFE),
    "a malformed number completed or kept as a string, or (json-repair engine) a number "
    "beyond the float range read as null",
    _REPAIR,
    '{"a": 1.}',
)
PARSE_ELLIPSIS = _parse(
    "ellipsis",
    GUESS,
    "an ellipsis (`...`) standing for omitted items removed",
    _REPAIR + " The model left items out; the list is shorter than it meant.",
    "[1, 2, ...]",
)
PARSE_STRING_CONCAT = _parse(
    "string_concat", GUESS, "strings joined with `+`, concatenated", _REPAIR, '{"a": "x" + "y"}'
)
PARSE_UNQUOTED_STRING = _parse(
    "unquoted_string", GUESS, "a string value without quotes", _REPAIR, '{"a": hello}'
)
PARSE_LEADING_TEXT = _parse(
    "leading_text",
    GUESS,
    "text before the JSON value removed",
    _REPAIR + " Reported when the reader itself met the text (extraction usually does).",
    'Sure: {"a": 1',
    reader=True,
)
PARSE_TRAILING_TEXT = _parse(
    "trailing_text",
    GUESS,
    "text after the JSON value removed",
    _REPAIR + " Reported when the reader itself met the text (extraction usually does).",
    '{"a": 1} thanks!',
    reader=True,
)
PARSE_STRAY_TEXT = _parse(
    "stray_text",
    GUESS,
    "a token that belongs to no key or value removed",
    _REPAIR,
    '{"a": 1 x}',
)
PARSE_NDJSON = _parse(
    "ndjson", GUESS, "several top-level values read as one array", _REPAIR, '{"a": 1}\n{"a": 2'
)
PARSE_DUPLICATE_KEY = _parse(
    "duplicate_key",
    GUESS,
    "a key written twice in one object: the last value is kept (both spans given)",
    _REPAIR,
    '{"a": 1, "a": 2}',
)
PARSE_JSON_REPAIR = _parse(
    "json_repair",
    GUESS,
    "`--engine json-repair` only: json-repair read the text differently from llmfix's reader "
    "(the value is json-repair's), or a json-repair log entry with no llmfix code (its text in "
    "the message)",
    """With `--engine json-repair`, where json-repair reads another value than llmfix's
    reader, each entry of its repair log becomes the llmfix code for the same fix; this
    code says the readings differ, or stands for a log entry no llmfix code names.""",
    None,
)
PARSE_NUMBER_OUT_OF_RANGE = _parse(
    "number_out_of_range",
    None,
    "a number beyond a 64-bit float, kept as written",
    """A number too large for a 64-bit float is kept exactly as written (not rounded to
    infinity); nothing was changed, so it is a note, not a repair.""",
    '{"a": 1e999}',
)
PARSE_FAILED = _code(
    "parse.failed",
    "parse",
    ERROR,
    None,
    "no JSON value could be recovered",
    """Neither the reader nor the schema-guided readings found a value: the status is
    `unparseable`. Look at the answer: it may be a refusal or plain prose.""",
    _ex("   "),
)
PARSE_CUT_OFF = _code(
    "parse.cut_off",
    "parse",
    ERROR,
    None,
    "the text ends inside a value: status `truncated` (a warning with `--partial`)",
    """The answer stops in the middle of a value, so what was closed at the end is not
    what the model wrote. Raise the request's token limit, or pass `--partial` to keep
    what is complete.""",
    _ex('{"a": [1, 2'),
)

# --- guided ------------------------------------------------------------------------------


def _guided(name: str, risks: Risk | tuple[Risk, ...], summary: str, example: Example) -> Code:
    return _code(
        f"guided.{name}",
        "guided",
        WARNING,
        risks,
        summary,
        f"""With `--schema`, the answer was not JSON the schema accepts, so it was read the
        way the schema says: {summary}. Safe when the whole answer is the value in another
        notation, a guess when the value was picked out of prose; `--max-risk safe` refuses
        the guesses.""",
        example,
    )


GUIDED_BOOLEAN = _guided(
    "boolean",
    (SAFE, GUESS),
    "a boolean read from words (`**True**`, `Yes, it is`)",
    _ex("The answer is **True**", {"type": "boolean"}),
)
GUIDED_NUMBER = _guided(
    "number",
    (SAFE, GUESS),
    "a number read from text (`12,111`, `$12.50`, `87%`)",
    _ex("12,111", {"type": "integer"}),
)
GUIDED_ENUM = _guided(
    "enum",
    (SAFE, GUESS),
    "an enum or const member read from text",
    _ex("ONE - The description of an enum value", {"enum": ["ONE", "TWO"]}),
)
GUIDED_NULL = _guided(
    "null", SAFE, "null read from a word (`None`, `N/A`)", _ex("N/A", {"type": "null"})
)
GUIDED_STRING = _guided(
    "string", SAFE, "the whole answer read as the string wanted", _ex("hello", {"type": "string"})
)
GUIDED_LIST = _guided(
    "list",
    (SAFE, GUESS),
    "a markdown or comma-separated list, or the enum members prose names, read as an array",
    _ex("red, green, blue", _COLOURS),
)
GUIDED_COLLECT = _guided(
    "collect",
    SAFE,
    "several JSON values collected into the array wanted",
    _ex(
        'prefix {"key": "v1"} text {"key": "v2"}',
        {"type": "array", "items": {"type": "object"}},
    ),
)
GUIDED_KNOWN_KEYS = _guided(
    "known_keys",
    GUESS,
    "an object re-read with its declared keys bounding the values",
    _ex(
        '{"code": ```python\ndef main():\n    print("hi")\n```, "type": "code"}',
        {
            "type": "object",
            "properties": {"code": {"type": "string"}, "type": {"type": "string"}},
            "required": ["code", "type"],
        },
    ),
)
GUIDED_XML = _guided(
    "xml",
    (SAFE, GUESS),
    "XML elements read as an object",
    _ex("<Person><name>Ada</name><age>36</age></Person>", _PERSON),
)
GUIDED_YAML = _guided(
    "yaml",
    (SAFE, GUESS),
    "a YAML block read as a value",
    _ex("```yaml\nname: Ada\nage: 36\n```", _PERSON),
)
GUIDED_KEY_VALUE = _guided(
    "key_value",
    (SAFE, GUESS),
    "`key: value` lines read as an object",
    _ex("- **Name**: Ada\n- **Age**: 36", _PERSON),
)
GUIDED_TABLE = _guided(
    "table",
    (SAFE, GUESS),
    "a markdown table read as an array of objects",
    _ex("| name | age |\n|---|---|\n| Ada | 36 |", {"type": "array", "items": _PERSON}),
)
GUIDED_IN_VALUE = _guided(
    "in_value",
    (SAFE, GUESS),
    "strings inside a value read as the scalar or list wanted",
    _ex(
        '{"choice": "ONE - The description"}',
        {"type": "object", "properties": {"choice": {"enum": ["ONE", "TWO"]}}},
    ),
)
GUIDED_SINGLE_PROPERTY = _guided(
    "single_property",
    GUESS,
    "the answer read as an object's only property",
    _ex(
        "- 1\n- 2",
        {
            "type": "object",
            "properties": {"nums": {"type": "array", "items": {"type": "integer"}}},
            "required": ["nums"],
        },
    ),
)
GUIDED_CUT_OFF_KEY = _guided(
    "cut_off_key",
    GUESS,
    "an optional key the answer was cut off after, left out",
    _ex(
        '{"name": "Ada", "nickname":',
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "nickname": {"type": "string"}},
            "required": ["name"],
        },
    ),
)
# --- guided, round 2 (issue 31): TOON, unwrapping, candidate choice -----------------------

GUIDED_TOON = _guided(
    "toon",
    (SAFE, GUESS),
    "a TOON block (`key: value`, `tags[2]: a,b`, `rows[2]{a,b}:`) read as a value",
    _ex(
        "name: Ada\ntags[2]: math,poetry",
        {
            **_PERSON,
            "properties": {
                "name": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["name"],
        },
    ),
)
GUIDED_UNWRAP = _guided(
    "unwrap",
    GUESS,
    'a scalar or list wrapped in an object with one key (`{"answer": 4}`), unwrapped',
    _ex('{"answer": 4}', {"type": "integer"}),
)
GUIDED_CANDIDATE = _guided(
    "candidate",
    (SAFE, GUESS),
    "another JSON value of the answer taken: it fits the schema once repaired, the first does not",
    _ex(
        '```json\n{"note": "ids"}\n```\n```json\n["7", "8"]\n```',
        {"type": "array", "items": {"type": "integer"}},
    ),
)
EXTRACT_CUE = _code(
    "extract.cue",
    "select",
    WARNING,
    (SAFE, GUESS),
    "of two values that fit, the prose said which is the answer (a correction, an example)",
    """The answer holds two different values that both fit. The words before them decided:
    a value introduced as a correction (`Actually, correction:`) replaces the one before
    it; one introduced as an example (`For example`) is not the answer; one introduced as
    the answer (`Extracted:`, `Final answer:`) is. A guess when the only value that fits is
    the one introduced as an example.""",
    _ex('For example {"a": 1}. Final answer: {"a": 2}', {"type": "object"}),
)
EXTRACT_NO_CUE = _code(
    "extract.no_cue",
    "select",
    WARNING,
    GUESS,
    "two different values fit the schema and nothing says which is the answer: a guess",
    """With a schema, the answer holds two different values that both fit, and no words
    before them say which is the answer (no correction, no example, no `Answer:`). The one
    the ordinary ranking prefers is taken, at risk `guess`: `--max-risk safe` fails it.
    Ask the model for one value.""",
    _ex('{"a": 1} or {"a": 2}', {"type": "object"}),
)

GUIDED_REFUSED = _code(
    "guided.refused",
    "guided",
    WARNING,
    None,
    "a reading `--max-risk` did not allow; the value it would have given is in `data`",
    """A schema-guided reading would have given a valid value, but its risk is above
    `--max-risk`, so it was not taken and the answer fails. Allow guesses, or ask the model
    for JSON.""",
    _ex("The answer is **True**", {"type": "boolean"}, max_risk="safe"),
)
GUIDED_AMBIGUOUS = _code(
    "guided.ambiguous",
    "guided",
    ERROR,
    None,
    "two different values competed in the prose; they are named",
    """The prose names more than one value the schema allows (two enum members, two
    numbers), so none was picked.""",
    _ex("It is either ONE or TWO", {"enum": ["ONE", "TWO"]}),
)

# --- limits, partial ---------------------------------------------------------------------

LIMITS_SIZE = _code(
    "limits.size",
    "parse",
    ERROR,
    None,
    "the text is larger than `--max-size`",
    """The lenient parser reads at most `--max-size` characters; a larger text is not
    repaired. Raise the limit if the input is trusted.""",
    _ex("[1, 2, 3,]", max_size=4),
)
LIMITS_DEPTH = _code(
    "limits.depth",
    "parse",
    ERROR,
    None,
    "the value nests deeper than `--max-depth`",
    """The lenient parser stops at `--max-depth` levels of nesting (strict JSON is held
    to the same limit).""",
    _ex("[[[[1]]]]", max_depth=2),
)
LIMITS_TIME = _code(
    "limits.time",
    "parse",
    ERROR,
    None,
    "a stage ran out of its `--time-budget`",
    """Extraction, parsing, schema repair, the schema-guided readings or a tool-call check
    ran out of the time budget; the diagnostic's stage and message name which. Raise
    `--time-budget`, or look at why the input is so costly.""",
)
PARTIAL_INCOMPLETE_VALUE = _code(
    "partial.incomplete_value",
    "partial",
    WARNING,
    None,
    "a value cut off mid-stream, left out (the removed text kept in `data`)",
    """With `--partial`, the last value of a cut-off answer was incomplete (a string or
    number cut in the middle) and is left out rather than guessed.""",
    _ex('{"a": 1, "b": "hal', partial=True),
)
PARTIAL_MISSING = _code(
    "partial.missing",
    "partial",
    WARNING,
    None,
    "a required property or item that has not arrived yet",
    """With `--partial`, a schema error that the cut explains (a required property, a
    minimum count of items) is a warning instead of an error.""",
    _ex('{"name": "Ada", "ag', _PERSON, partial=True),
)

# --- validate ----------------------------------------------------------------------------


def _schema(name: str, summary: str, text: str | None = None, schema: Any = None) -> Code:
    return _code(
        f"schema.{name}",
        "validate",
        ERROR,
        None,
        summary,
        f"""The value does not fit the schema: {summary}. The pointer says where; schema
        repair fixes what the schema makes certain (see `llmfix rules`), and what it cannot
        fix stays an error.""",
        _ex(text, schema, schema_repair=False) if text is not None else None,
    )


SCHEMA_TYPE = _schema(
    "type", "the value has another type than `type` allows", "1", {"type": "string"}
)
SCHEMA_REQUIRED = _schema("required", "a `required` property is missing", "{}", {"required": ["a"]})
SCHEMA_ENUM = _schema("enum", "the value is not one of `enum`", '"x"', {"enum": ["a", "b"]})
SCHEMA_CONST = _schema("const", "the value is not the `const`", '"x"', {"const": "a"})
SCHEMA_ADDITIONAL_PROPERTIES = _schema(
    "additional_properties",
    "a property `additionalProperties` does not allow",
    '{"a": 1, "b": 2}',
    {"properties": {"a": {}}, "additionalProperties": False},
)
SCHEMA_ADDITIONAL_ITEMS = _schema(
    "additional_items",
    "more items than `items` (a list) and `additionalItems` allow",
    "[1, 2]",
    {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{}], "additionalItems": False},
)
SCHEMA_ITEMS = _schema(
    "items",
    "an item `items: false` does not allow",
    "[1, 2]",
    {"prefixItems": [{}], "items": False},
)
SCHEMA_MINIMUM = _schema("minimum", "a number below `minimum`", "1", {"minimum": 2})
SCHEMA_MAXIMUM = _schema("maximum", "a number above `maximum`", "3", {"maximum": 2})
SCHEMA_EXCLUSIVE_MINIMUM = _schema(
    "exclusive_minimum", "a number not above `exclusiveMinimum`", "2", {"exclusiveMinimum": 2}
)
SCHEMA_EXCLUSIVE_MAXIMUM = _schema(
    "exclusive_maximum", "a number not below `exclusiveMaximum`", "2", {"exclusiveMaximum": 2}
)
SCHEMA_MULTIPLE_OF = _schema(
    "multiple_of", "a number that is not a multiple of `multipleOf`", "3", {"multipleOf": 2}
)
SCHEMA_DIVISIBLE_BY = _schema(
    "divisible_by",
    "a number that is not a multiple of `divisibleBy` (draft 3)",
    "3",
    {"$schema": "http://json-schema.org/draft-03/schema#", "divisibleBy": 2},
)
SCHEMA_MIN_LENGTH = _schema(
    "min_length", "a string shorter than `minLength`", '"a"', {"minLength": 2}
)
SCHEMA_MAX_LENGTH = _schema(
    "max_length", "a string longer than `maxLength`", '"abc"', {"maxLength": 2}
)
SCHEMA_PATTERN = _schema(
    "pattern", "a string that does not match `pattern`", '"abc"', {"pattern": "^[0-9]+$"}
)
SCHEMA_MIN_ITEMS = _schema("min_items", "fewer items than `minItems`", "[]", {"minItems": 1})
SCHEMA_MAX_ITEMS = _schema("max_items", "more items than `maxItems`", "[1, 2]", {"maxItems": 1})
SCHEMA_UNIQUE_ITEMS = _schema(
    "unique_items", "repeated items where `uniqueItems` is true", "[1, 1]", {"uniqueItems": True}
)
SCHEMA_CONTAINS = _schema(
    "contains",
    "no item (or not the number `minContains`/`maxContains` ask) matching `contains`",
    '["a"]',
    {"contains": {"type": "integer"}},
)
SCHEMA_MIN_PROPERTIES = _schema(
    "min_properties", "fewer properties than `minProperties`", "{}", {"minProperties": 1}
)
SCHEMA_MAX_PROPERTIES = _schema(
    "max_properties",
    "more properties than `maxProperties`",
    '{"a": 1, "b": 2}',
    {"maxProperties": 1},
)
SCHEMA_DEPENDENT_REQUIRED = _schema(
    "dependent_required",
    "a property `dependentRequired` asks for is missing",
    '{"a": 1}',
    {"dependentRequired": {"a": ["b"]}},
)
SCHEMA_DEPENDENCIES = _schema(
    "dependencies",
    "a property `dependencies` asks for is missing (drafts 3 to 7)",
    '{"a": 1}',
    {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"]}},
)
SCHEMA_DISALLOW = _schema(
    "disallow",
    "a value of a type `disallow` forbids (draft 3)",
    "1",
    {"$schema": "http://json-schema.org/draft-03/schema#", "disallow": "integer"},
)
SCHEMA_NOT = _schema(
    "not", "a value that matches the `not` schema", "1", {"not": {"type": "integer"}}
)
SCHEMA_ANY_OF = _schema(
    "any_of",
    "no `anyOf` branch fits",
    "true",
    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
)
SCHEMA_ONE_OF = _schema(
    "one_of",
    "not exactly one `oneOf` branch fits",
    "1",
    {"oneOf": [{"type": "integer"}, {"type": "number"}]},
)
SCHEMA_UNEVALUATED_ITEMS = _schema(
    "unevaluated_items",
    "an item no keyword evaluated, where `unevaluatedItems` forbids it",
    "[1, 2]",
    {"prefixItems": [{}], "unevaluatedItems": False},
)
SCHEMA_UNEVALUATED_PROPERTIES = _schema(
    "unevaluated_properties",
    "a property no keyword evaluated, where `unevaluatedProperties` forbids it",
    '{"a": 1}',
    {"unevaluatedProperties": False},
)
SCHEMA_FALSE = _schema(
    "false",
    "a value where the schema is `false` (nothing is allowed)",
    '{"a": 1}',
    {"properties": {"a": False}},
)
SCHEMA_RECURSION_LIMIT = _code(
    "schema.recursion_limit",
    "validate",
    ERROR,
    None,
    "the value is nested too deeply to validate",
    """Validation recursed past what the interpreter allows: the value or a `$ref` chain is
    too deep. Such a value is not accepted.""",
)
SCHEMA_TOO_COSTLY = _code(
    "schema.too_costly",
    "validate",
    ERROR,
    None,
    "the schema applied more keywords to the value than its step budget",
    """Validation is bounded: 50,000 keyword applications plus 200 per JSON value the
    value holds. A schema that needs more for this value (a pathological `$ref` or
    `anyOf` nest) is not finished, and the value is not accepted.""",
)
SCHEMA_TOO_MANY_ERRORS = _code(
    "schema.too_many_errors",
    "validate",
    ERROR,
    None,
    "more than 1,000 errors in one value: the first 1,000 found are listed",
    """A value with very many schema errors is reported with its first 1,000; the rest are
    counted only by this code.""",
)
SCHEMA_UNRESOLVABLE_REF = _code(
    "schema.unresolvable_ref",
    "validate",
    ERROR,
    None,
    "a `$ref` of the schema cannot be resolved",
    """The schema refers to a definition that does not exist (or a remote document that
    was not given); the value cannot be checked against it. Fix the schema.""",
    _ex('{"a": 1}', {"$dynamicRef": "#nowhere"}),
)
SCHEMA_UNKNOWN_DIALECT = _code(
    "schema.unknown_dialect",
    "validate",
    WARNING,
    None,
    "unknown `$schema`: validated as 2020-12",
    """The schema's `$schema` names a dialect llmfix does not know; it is validated as
    draft 2020-12.""",
    None,
)

# --- Pydantic models as schemas (llmfix/schema/pydantic_models.py) ------------------------

SCHEMA_PYDANTIC = _code(
    "schema.pydantic",
    "validate",
    ERROR,
    None,
    "the value fits the model's JSON Schema but not the model (Pydantic's own validation)",
    """With a Pydantic model, dataclass or `TypedDict` as the schema, Pydantic validates the
    value once its JSON Schema is satisfied: a `field_validator`, a `model_validator` or a
    strict model can still reject it. The message is Pydantic's, the pointer the part of
    the value it is about (a missing field's: the object that lacks it).""",
)

# --- schema repair -----------------------------------------------------------------------


def _repair(name: str, risks: Risk | tuple[Risk, ...], summary: str, example: Example) -> Code:
    return _code(
        f"repair.{name}",
        "schema_repair",
        WARNING,
        risks,
        summary,
        f"""Schema repair made the value fit its schema with the rule `{name}` ({summary}).
        The change is a JSON Patch operation (`--patch`); turn the rule off with
        `--disable-rule {name}`, or keep guesses out with `--max-risk safe`.""",
        example,
    )


REPAIR_PARSE_JSON_STRING = _repair(
    "parse_json_string",
    SAFE,
    "a JSON object or array sent as a string, parsed",
    _ex('{"a": "{\\"b\\": 1}"}', {"properties": {"a": {"type": "object"}}}),
)
REPAIR_UNWRAP_OBJECT = _repair(
    "unwrap_object",
    SAFE,
    "an object wrapped in one undeclared key, unwrapped",
    _ex('{"result": {"name": "Ada", "age": 36}}', _PERSON),
)
REPAIR_WRAP_ARRAY = _repair(
    "wrap_array", SAFE, "a single value wrapped in an array", _ex('"red"', _COLOURS)
)
REPAIR_UNWRAP_ARRAY = _repair(
    "unwrap_array",
    SAFE,
    "a one-element array replaced by its element",
    _ex('["red"]', {"type": "string"}),
)
REPAIR_COERCE_NUMBER = _repair(
    "coerce_number", SAFE, "a number written as a string", _ex('"12.5"', {"type": "number"})
)
REPAIR_COERCE_PERCENT = _repair(
    "coerce_percent",
    GUESS,
    "a percentage read on the scale the maximum implies",
    _ex('"87%"', {"type": "number", "maximum": 1}),
)
REPAIR_COERCE_FRACTION = _repair(
    "coerce_fraction",
    GUESS,
    "a fraction read on the scale the maximum implies",
    _ex('"7/10"', {"type": "number", "maximum": 10}),
)
REPAIR_COERCE_INTEGER = _repair(
    "coerce_integer",
    SAFE,
    "an integer from an integral number or numeral",
    _ex('"12"', {"type": "integer"}),
)
REPAIR_COERCE_STRING = _repair(
    "coerce_string", SAFE, "a string from a number or boolean", _ex("12", {"type": "string"})
)
REPAIR_COERCE_BOOLEAN = _repair(
    "coerce_boolean", SAFE, "a boolean from a word or 1/0", _ex('"Yes"', {"type": "boolean"})
)
REPAIR_COERCE_NULL = _repair(
    "coerce_null",
    SAFE,
    "null from a word that means none, where null is allowed",
    _ex('"N/A"', {"type": ["integer", "null"]}),
)
REPAIR_ENUM_CASE = _repair(
    "enum_case",
    SAFE,
    "an enum or const value equal after folding case and punctuation",
    _ex('"In Progress"', {"enum": ["in_progress", "done"]}),
)
REPAIR_ENUM_NEAREST = _repair(
    "enum_nearest",
    GUESS,
    "an enum or const value nearest by edit distance",
    _ex('"complet"', {"enum": ["complete", "pending"]}),
)
REPAIR_RENAME_KEY_CASE = _repair(
    "rename_key_case",
    SAFE,
    "a key renamed to the missing declared key it equals after folding case, `_` and `-`",
    _ex(
        '{"firstName": "Ada"}',
        {"properties": {"first_name": {"type": "string"}}, "required": ["first_name"]},
    ),
)
REPAIR_RENAME_KEY_FUZZY = _repair(
    "rename_key_fuzzy",
    GUESS,
    "a key renamed to the missing declared key it nearly spells",
    _ex(
        '{"reasonning": "x"}',
        {"properties": {"reasoning": {"type": "string"}}, "required": ["reasoning"]},
    ),
)
REPAIR_REMOVE_ADDITIONAL = _repair(
    "remove_additional",
    GUESS,
    "a property `additionalProperties: false` forbids, removed",
    _ex(
        '{"a": 1, "b": 2}',
        {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
    ),
)
REPAIR_FILL_DEFAULT = _repair(
    "fill_default",
    SAFE,
    "a missing required property with a default, filled",
    _ex("{}", {"properties": {"n": {"default": 1}}, "required": ["n"]}),
)
REPAIR_TOOL_NAME = _code(
    "repair.tool_name",
    "tools",
    WARNING,
    (SAFE, GUESS),
    "an unknown tool name renamed to the registered one (`--tools`)",
    """A tool call names a tool that is not registered, but one registered name is the
    same after folding case and separators (safe) or a near-miss (a guess); the call is
    renamed. Turn it off with `--disable-rule tool_name`.""",
    _tools_ex('{"name": "GetWeather", "arguments": {"city": "Paris"}}', _WEATHER),
)
REPAIR_BRANCH_TIE = _code(
    "repair.branch_tie",
    "schema_repair",
    INFO,
    None,
    "two `anyOf`/`oneOf` branches fit equally well after repair; the first was kept",
    """Schema repair tried every branch; two gave different values at the same cost, and
    the first was kept. Make the schema's branches distinguishable, or the answer exact.""",
    _ex('"1"', {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}),
)
REPAIR_LIMIT = _code(
    "repair.limit",
    "schema_repair",
    INFO,
    None,
    "the repair walk stopped at its depth or visit bound",
    """Schema repair descends at most 64 levels and visits at most 20,000 subschemas; past
    that the rest of the value is left as it is.""",
)
REPAIR_SCHEMA_UNUSABLE = _code(
    "repair.schema_unusable",
    "schema_repair",
    INFO,
    None,
    "a part of the schema could not be used for repair",
    """A part of the schema could not be evaluated (a bad regular expression, an unknown
    type, an unresolvable `$ref`); repair did not use it.""",
    _ex('{"a": 1}', {"$dynamicRef": "#nowhere"}),
)

# --- tools -------------------------------------------------------------------------------


def _tools(
    name: str,
    severity: Severity,
    summary: str,
    doc: str,
    example: Example | None = None,
    risks: Risk | None = None,
) -> Code:
    return _code(f"tools.{name}", "tools", severity, risks, summary, doc, example)


TOOLS_UNKNOWN_NAME = _tools(
    "unknown_name",
    ERROR,
    "a call to a tool that is not registered (with the closest registered name)",
    """The call names a tool the `--tools` registry does not hold; the hint names the
    closest registered one.""",
    _tools_ex('{"name": "get_time", "arguments": {}}', _WEATHER),
)
TOOLS_BAD_NAME = _tools(
    "bad_name",
    ERROR,
    'a call whose name no tool can have (`"rm -rf /"`, shown escaped)',
    """The call's name is not a usable tool name; the call is left out and the answer
    fails, with or without `--tools`.""",
    _tools_ex('{"name": "rm -rf /", "arguments": {}}', None),
)
TOOLS_MISSING_ARGUMENT = _tools(
    "missing_argument",
    ERROR,
    "a required argument is missing",
    """The tool's parameters schema requires an argument the call does not give.""",
    _tools_ex('{"name": "get_weather", "arguments": {}}', _WEATHER),
)
TOOLS_ARGUMENTS_NOT_OBJECT = _tools(
    "arguments_not_object",
    ERROR,
    "the call's arguments are not an object",
    """A call's arguments must be a JSON object (named arguments).""",
    _tools_ex('{"name": "get_weather", "arguments": [1, 2]}', None),
)
TOOLS_ARGUMENTS_NOT_JSON = _tools(
    "arguments_not_json",
    ERROR,
    "the call's arguments string is not JSON",
    """The arguments were sent as a string (as APIs do) that no reading makes into JSON.""",
    _tools_ex('{"name": "get_weather", "arguments": "}}}"}', None),
)
TOOLS_DUPLICATE_ID = _tools(
    "duplicate_id",
    ERROR,
    "two calls with the same id",
    """Each call of one answer needs its own id for its result to be matched to it.""",
    _tools_ex(
        '[{"id": "c1", "name": "get_weather", "arguments": {"city": "A"}},'
        ' {"id": "c1", "name": "get_weather", "arguments": {"city": "B"}}]',
        _WEATHER,
    ),
)
TOOLS_DUPLICATE_ARGUMENT = _tools(
    "duplicate_argument",
    ERROR,
    "an argument given twice",
    """A call names the same argument twice (in XML or Python-style calls); which value
    was meant is unknown.""",
)
TOOLS_SEQUENCE = _tools(
    "sequence",
    ERROR,
    "the calls are not in the order `--expect-sequence` asks",
    """The tools called, in order, differ from the expected sequence.""",
    _tools_ex(
        '{"name": "get_weather", "arguments": {"city": "A"}}',
        _WEATHER,
        expect_sequence=("get_weather", "get_weather"),
    ),
)
TOOLS_TRUNCATED_CALL = _tools(
    "truncated_call",
    ERROR,
    "a call cut off (a warning with `--partial`, a guess with `--salvage`)",
    """The answer ends inside a tool call: the output was cut off. The call is left out,
    the calls before it are kept, and the result is `truncated`; with `--partial` this is
    a warning (the whole calls are what is complete). With `--salvage` the call is
    completed as a guess.""",
    _tools_ex('{"name": "get_weather", "arguments": {"city": "Par', _WEATHER),
)
TOOLS_MALFORMED_ARGUMENT = _tools(
    "malformed_argument",
    ERROR,
    "an argument that cannot be read",
    """An argument of an XML or Python-style call is written so that no value can be
    read from it.""",
    _tools_ex("[get_weather(city=Paris)]", _WEATHER),
)
TOOLS_POSITIONAL_ARGUMENT = _tools(
    "positional_argument",
    ERROR,
    "a positional argument in a Python-style call",
    """Tool arguments are named; a positional one cannot be matched to a parameter.""",
    _tools_ex('[get_weather("Paris")]', _WEATHER),
)
TOOLS_UNKNOWN_ARGUMENT = _tools(
    "unknown_argument",
    WARNING,
    "an argument the tool does not declare",
    """The call gives an argument the tool's parameters do not name.""",
)
TOOLS_UNREGISTERED_IN_PROSE = _tools(
    "unregistered_in_prose",
    WARNING,
    "a tool-like name in the prose that is not registered",
    """The prose mentions what looks like a call to a tool the registry does not hold; the
    model may have meant to call it.""",
    _tools_ex("I will call get_time now.", _WEATHER),
)
TOOLS_FORMAT_CONFLICT = _tools(
    "format_conflict",
    WARNING,
    "two tool-call formats in one answer; says which won",
    """The answer holds calls in more than one format; the calls of the format named were
    kept.""",
)
TOOLS_IN_REASONING = _tools(
    "in_reasoning",
    WARNING,
    "a tool call inside a reasoning block",
    """A call was found inside the model's reasoning; it is left out when the answer
    makes calls outside it, and used (with this warning) when it makes none.""",
    _tools_ex(
        '<think>{"name": "get_weather", "arguments": {"city": "A"}}</think>'
        '{"name": "get_weather", "arguments": {"city": "B"}}',
        _WEATHER,
    ),
)
TOOLS_MALFORMED_CALL = _tools(
    "malformed_call",
    WARNING,
    "something shaped like a tool call that cannot be read as one",
    """A call in a known format is broken beyond reading (a missing name, a bad
    envelope); it is left out.""",
)
TOOLS_BAD_SCHEMA = _tools(
    "bad_schema",
    WARNING,
    "a tool's parameters schema cannot be used",
    """The registry's schema for this tool could not be loaded; its arguments are not
    checked.""",
)
TOOLS_NO_CALLS = _tools(
    "no_calls",
    INFO,
    "the answer holds no tool call",
    """No tool call was found in the answer.""",
    _tools_ex("It is sunny in Paris.", _WEATHER),
)
TOOLS_TYPED_ARGUMENTS = _tools(
    "typed_arguments",
    INFO,
    "argument text read as the types the schema declares",
    """Arguments written as text (in XML or Python-style calls) were read as the numbers,
    booleans or objects the tool's schema declares.""",
    risks=SAFE,
)
TOOLS_UNWRAPPED_ARGUMENTS = _tools(
    "unwrapped_arguments",
    INFO,
    "arguments wrapped in an extra object, unwrapped",
    """The arguments sat inside an extra wrapper object; its content is taken.""",
    risks=SAFE,
)
TOOLS_NOT_A_CALL = _tools(
    "not_a_call",
    INFO,
    "a value that looks like a call but is not one",
    """A JSON value with tool-call-like keys was found but read as data, not a call.""",
)
TOOLS_CHOICES = _tools(
    "choices",
    INFO,
    "calls taken from an API response's choices",
    """The answer is an API response with several choices; the calls of each are
    reported.""",
)
# --- tool calls left in an API response's text (issue 32) ---------------------------------

_LEFT_IN_CONTENT = (
    '{"choices": [{"message": {"role": "assistant", "content": "<tool_call>\\n'
    '{\\"name\\": \\"get_weather\\", \\"arguments\\": {\\"city\\": \\"Oslo\\"}}\\n'
    '</tool_call>", "tool_calls": []}, "finish_reason": "stop"}]}'
)
TOOLS_LEFT_IN_CONTENT = _tools(
    "left_in_content",
    WARNING,
    "an API response's text holds tool calls its `tool_calls` lacks; moved into the calls",
    """The server (vLLM, SGLang, llama.cpp, Ollama) did not parse the model's tool-call
    markup: the message's `content` holds a call that its `tool_calls` is empty of or
    lacks. The call is read from the text and added to the calls (`--tool-calls` prints
    it in `tool_calls`); `data.calls` lists what was moved. Check the server's tool-call
    parser setting for the model.""",
    _tools_ex(_LEFT_IN_CONTENT, _WEATHER),
    risks=SAFE,
)
TOOLS_SERVER_MISMATCH = _tools(
    "server_mismatch",
    WARNING,
    "the server's call differs from the markup left in the response's text",
    """The message's `content` still holds the markup of a call the server returned in
    `tool_calls`, and the server read it with other arguments (it stopped at a marker
    written inside a value, typed a value otherwise). The server's call is kept;
    `data.server` and `data.text` hold both readings.""",
)

# --- tool results --------------------------------------------------------------------------

TOOLRESULT_IS_ERROR = _code(
    "toolresult.is_error",
    "toolresult",
    ERROR,
    None,
    "the tool reported a failure; its text in the message",
    """The tool result says `isError`: the tool failed and its result holds no value to
    check.""",
)
TOOLRESULT_RPC_ERROR = _code(
    "toolresult.rpc_error",
    "toolresult",
    ERROR,
    None,
    "the `tools/call` request got a JSON-RPC error",
    """The MCP `tools/call` answer is a JSON-RPC error, not a result.""",
)
TOOLRESULT_UNSTRUCTURED = _code(
    "toolresult.unstructured",
    "toolresult",
    INFO,
    None,
    "no `structuredContent`; the text content is checked",
    """The tool result has no structured content, so its text content is read and
    checked against the tool's output schema.""",
)
TOOLRESULT_UNCHECKED = _code(
    "toolresult.unchecked",
    "toolresult",
    INFO,
    None,
    "the tool has no output schema",
    """Nothing to check the result against: the tool declares no output schema.""",
)

# --- stream, llm, response -------------------------------------------------------------------

STREAM_STOPPED = _code(
    "stream.stopped",
    "stream",
    INFO,
    None,
    "the incremental reader stopped sending snapshots; the result is unaffected",
    """The streaming reader met something it does not read incrementally; `close()`
    repairs the whole text as usual.""",
)
STREAM_CUT_OFF = _code(
    "stream.cut_off",
    "input",
    WARNING,
    None,
    "the saved stream ended at the token limit",
    """`check` read a saved stream whose stop reason says the token limit was hit.""",
)
LLM_REPAIRED = _code(
    "llm.repaired",
    "llm",
    WARNING,
    GUESS,
    "a model repaired the answer, and its answer validated",
    """With `--llm`, the answer was sent to a model with the errors, and the model's
    answer validated; its patch operations carry rule `llm.repair`.""",
)
LLM_OUTPUT_VALIDATION_FAILED = _code(
    "llm.output_validation_failed",
    "llm",
    ERROR,
    None,
    "still invalid after `--max-attempts`",
    """The model's answers did not validate within the attempts allowed; the message and
    `data.code` say `OUTPUT_VALIDATION_FAILED`.""",
)
LLM_PROVIDER_UNAVAILABLE = _code(
    "llm.provider_unavailable",
    "llm",
    WARNING,
    None,
    "the model could not be reached after transport retries",
    """The provider did not answer; the best value so far is kept.""",
)
LLM_BAD_RESPONSE = _code(
    "llm.bad_response",
    "llm",
    WARNING,
    None,
    "the provider answered with something that is not an API response",
    """Not JSON, an HTML page, another API's JSON, or over 16 MB; the best value so far is
    kept.""",
)
LLM_REQUEST_REJECTED = _code(
    "llm.request_rejected",
    "llm",
    WARNING,
    None,
    "the provider refused a request with 400/422",
    """The provider rejected the request (a model name, a parameter); the best value so
    far is kept.""",
)
LLM_BUDGET_EXHAUSTED = _code(
    "llm.budget_exhausted",
    "llm",
    WARNING,
    None,
    "`--max-llm-calls` reached; not sent",
    """The run's budget of model calls is spent; this answer was not sent.""",
)
RESPONSE_CUT_OFF = _code(
    "response.cut_off",
    "response",
    ERROR,
    None,
    "the API's stop reason says the answer was cut off",
    """The response's `finish_reason` (or stop reason) says the token limit was hit. A
    warning with `--partial`. Raise the request's token limit.""",
    _tools_ex(
        '{"choices": [{"finish_reason": "length", "message": {"content": null, "tool_calls": '
        '[{"id": "c1", "type": "function", "function": {"name": "get_weather", '
        '"arguments": "{\\"city\\": \\"Pa"}}]}}]}',
        _WEATHER,
    ),
)
RESPONSE_REFUSED = _code(
    "response.refused",
    "response",
    ERROR,
    None,
    "the model refused, or the API filtered the answer",
    """The response carries a refusal, its stop reason says the content was filtered, or
    the answer is a refusal in words with no JSON in it; the refusal text is in the message
    and `data`.""",
    _tools_ex(
        '{"choices": [{"finish_reason": "stop", "message": {"content": null, '
        '"refusal": "I cannot do that"}}]}',
        None,
    ),
)

# --- input, batch, check ---------------------------------------------------------------------

INPUT_INVALID_UTF8 = _code(
    "input.invalid_utf8",
    "input",
    WARNING,
    SAFE,
    "undecodable bytes were replaced with U+FFFD",
    """The input is not valid UTF-8; the bytes that could not be decoded were replaced, so
    the answer is at least `repaired`. The first offset is in the message and
    `data.offset`; pass `--encoding` if the file is in another encoding.""",
)
INPUT_BAD_RECORD = _code(
    "input.bad_record",
    "input",
    ERROR,
    None,
    "a JSONL record that is not what `--field`/`--format` expects",
    """A record of a JSONL or batch file could not be read as an item.""",
)
INPUT_BATCH_ERROR = _code(
    "input.batch_error",
    "input",
    ERROR,
    None,
    "a batch API request failed",
    """A record of a provider's batch results says the request failed.""",
)
INPUT_MISSING_FIELD = _code(
    "input.missing_field",
    "input",
    ERROR,
    None,
    "the record has no field `--field` names",
    """The record lacks the field that holds the answer, or it is null.""",
)
INPUT_NO_ANSWER = _code(
    "input.no_answer",
    "input",
    ERROR,
    None,
    "the record holds no answer text",
    """An API response or batch record was read, but it holds no answer to check.""",
)
INPUT_UNREADABLE = _code(
    "input.unreadable",
    "input",
    ERROR,
    None,
    "a file could not be read",
    """The file does not exist, is not readable, or is outside the allowed directory.""",
)
INPUT_TOO_LARGE = _code(
    "input.too_large",
    "input",
    ERROR,
    None,
    "a file, stdin or JSONL line over the bytes read at most; not read",
    """Inputs are read up to a bound; a larger one is not read at all.""",
)
BATCH_TOO_LARGE = _code(
    "batch.too_large",
    "batch",
    ERROR,
    None,
    "an item too large to send to a worker",
    """An item of a `check` batch is larger than a worker takes; it is not checked.""",
)
BATCH_TIMEOUT = _code(
    "batch.timeout",
    "batch",
    ERROR,
    None,
    "an item ran longer than `--timeout`",
    """Checking the item was stopped after the per-item timeout.""",
)
BATCH_CRASH = _code(
    "batch.crash",
    "batch",
    ERROR,
    None,
    "checking an item failed",
    """Checking the item raised an unexpected error; the message says which. Please report
    it with the input.""",
)
BATCH_WORKER_CRASHED = _code(
    "batch.worker_crashed",
    "batch",
    ERROR,
    None,
    "a worker process died while checking an item",
    """The worker checking this item died (out of memory, a signal); the item is
    reported as failed and the batch goes on.""",
)
CHECK_GATE = _code(
    "check.gate",
    "check",
    ERROR,
    None,
    "an item failed the gate with no diagnostic of its own to show",
    """The item fails `--fail-on`/`--max-risk` for a reason no other diagnostic names;
    the message says why.""",
)

# --- degenerate (issue 35) -------------------------------------------------------------------
# Answers that are valid JSON, and may pass their schema, yet hold no data: warnings, which
# `--fail-on degenerate` (or one code) makes fail. Each is a rule (llmfix.rules) that
# `--disable-rule` turns off; the thresholds are the `degenerate` option.

_ECHO_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
}

DEGENERATE_SCHEMA_ECHO = _code(
    "degenerate.schema_echo",
    "degenerate",
    WARNING,
    None,
    "the answer is the schema (or its properties or example), not data",
    """The model returned the JSON Schema it was given, its `properties`, or the example
    the schema carries, instead of an answer. Say in the prompt that the schema describes
    the answer, or use the provider's structured output. Rule `schema_echo`.""",
    _ex(
        '{"type": "object", "properties": {"name": {"type": "string"}, '
        '"email": {"type": "string"}}}',
        _ECHO_SCHEMA,
    ),
)
DEGENERATE_PLACEHOLDER = _code(
    "degenerate.placeholder",
    "degenerate",
    WARNING,
    None,
    "a placeholder value: `string`, `<name>`, `John Doe`, `example@example.com`, `TODO`, ...",
    """A string is one of the values a template holds rather than data (the list is in
    docs/guide/degenerate-answers.md; the `degenerate` option's `placeholders` replaces it,
    `extra-placeholders` adds to it). Type names (`string`, `integer`) count only where the
    key does not name a type. Rule `placeholder`.""",
    _ex('{"name": "John Doe", "email": "example@example.com"}', _ECHO_SCHEMA),
)
DEGENERATE_REPETITION = _code(
    "degenerate.repetition",
    "degenerate",
    WARNING,
    None,
    "a string ends in the same text repeated: a repetition loop",
    """The end of a string is one short unit repeated many times, the mark of a model stuck
    in a loop (often until the token limit cut it). Looked for in linear time at the end of
    each string; thresholds `loop-chars`, `loop-repeats`, `loop-period`. Rule
    `repetition_loop`.""",
    _ex('{"summary": "The results are' + " very good and" * 30 + '"}'),
)
DEGENERATE_WHITESPACE_RUN = _code(
    "degenerate.whitespace_run",
    "degenerate",
    WARNING,
    None,
    "a long run of whitespace or newlines, in the answer or in a string",
    """The model wrote whitespace until it stopped (a known failure of JSON modes, which
    allow whitespace between tokens), in the text around the value or inside a string.
    Threshold `whitespace-run` characters in a row. Rule `whitespace_run`.""",
    _ex('{"answer": 42}' + "\n" * 300),
)
DEGENERATE_ALL_EMPTY = _code(
    "degenerate.all_empty",
    "degenerate",
    WARNING,
    None,
    'every value in the answer is empty (`""`, `null`, `[]`, `{}`)',
    """The answer has two values or more and every one of them is empty, at least one an
    empty string or null: the shape of an answer with nothing in it. Rule `all_empty`.""",
    _ex('{"name": "", "email": null, "tags": []}'),
)
DEGENERATE_REPEATED_ELEMENTS = _code(
    "degenerate.repeated_elements",
    "degenerate",
    WARNING,
    None,
    "an array holds the same element many times in a row",
    """The same string, object or array appears `repeated-elements` times or more in a row
    in an array (numbers, booleans and null do not count: a vector of zeros is data). Rule
    `repeated_elements`.""",
    _ex('{"tags": ["news", "news", "news", "news", "news", "news"]}'),
)

# A schema error's code is ``schema.<keyword in snake case>``: every keyword jsonschema
# reports an error under, by the name it reports.
SCHEMA_KEYWORDS: dict[str, Code] = {
    "additionalItems": SCHEMA_ADDITIONAL_ITEMS,
    "additionalProperties": SCHEMA_ADDITIONAL_PROPERTIES,
    "anyOf": SCHEMA_ANY_OF,
    "const": SCHEMA_CONST,
    "contains": SCHEMA_CONTAINS,
    "dependencies": SCHEMA_DEPENDENCIES,
    "dependentRequired": SCHEMA_DEPENDENT_REQUIRED,
    "disallow": SCHEMA_DISALLOW,
    "divisibleBy": SCHEMA_DIVISIBLE_BY,
    "enum": SCHEMA_ENUM,
    "exclusiveMaximum": SCHEMA_EXCLUSIVE_MAXIMUM,
    "exclusiveMinimum": SCHEMA_EXCLUSIVE_MINIMUM,
    "false": SCHEMA_FALSE,
    "items": SCHEMA_ITEMS,
    "maxItems": SCHEMA_MAX_ITEMS,
    "maxLength": SCHEMA_MAX_LENGTH,
    "maxProperties": SCHEMA_MAX_PROPERTIES,
    "maximum": SCHEMA_MAXIMUM,
    "minItems": SCHEMA_MIN_ITEMS,
    "minLength": SCHEMA_MIN_LENGTH,
    "minProperties": SCHEMA_MIN_PROPERTIES,
    "minimum": SCHEMA_MINIMUM,
    "multipleOf": SCHEMA_MULTIPLE_OF,
    "not": SCHEMA_NOT,
    "oneOf": SCHEMA_ONE_OF,
    "pattern": SCHEMA_PATTERN,
    "required": SCHEMA_REQUIRED,
    "type": SCHEMA_TYPE,
    "unevaluatedItems": SCHEMA_UNEVALUATED_ITEMS,
    "unevaluatedProperties": SCHEMA_UNEVALUATED_PROPERTIES,
    "uniqueItems": SCHEMA_UNIQUE_ITEMS,
}

# The families in the order the README lists them, each with what its codes have in common.
FAMILIES: dict[str, str] = {
    "normalize": "cleaning the raw text before anything is read",
    "extract": "finding the JSON value in the answer",
    "parse": "every repair of the lenient reader, with the exact span of the change, its "
    "line:column and a risk tier; one code per fix, whichever engine reads the text",
    "guided": "with `--schema`, reading an answer that is not JSON the way the schema says "
    "(see [Schema-guided reading](#schema-guided-reading-answers-that-are-not-json))",
    "limits": "a bound on size, depth or time was hit",
    "partial": "`--partial`: keeping what is complete of a cut-off answer",
    "schema": "validation: one code per failing JSON Schema keyword, in snake case",
    "repair": "schema repair: one code per rule (see [Schema repair rules](#schema-repair-rules)), "
    "each change with its JSON Patch operation",
    "tools": "`--tools`: checking tool calls",
    "toolresult": "tool results, `--tools` with output schemas",
    "stream": "`--stream` and saved streams",
    "llm": "`--llm`: repair by a model",
    "response": "what the API response said",
    "input": "reading the inputs",
    "batch": "running a `check` batch",
    "check": "the `check` gate",
    "degenerate": "answers that are valid JSON but hold no data (warnings; `--fail-on degenerate` "
    "makes them fail)",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown() -> str:
    """The README's table of codes, one table per family, written from the registry."""
    out: list[str] = []
    for family, about in FAMILIES.items():
        out.append(f"**{family}** — {about}.")
        out.append("")
        out.append("| code | severity | risk | meaning |")
        out.append("|---|---|---|---|")
        for code in CODES.values():
            if code.family != family:
                continue
            risk = " / ".join(r.value for r in code.risks) or "—"
            out.append(f"| `{code.id}` | {code.severity.value} | {risk} | {_cell(code.summary)} |")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
