"""Every repair rule llmfix has, as one kind of record: the lenient reader's parse repairs,
schema repair's rules, the schema-guided readings and the tool-name fix.

A :class:`RuleRecord` says what a rule is (id, kind, risk tiers, description) and names the
diagnostic code its changes carry, whose registry entry (:mod:`llmfix.codes`) holds the
example input. ``--disable-rule``/``--rules`` (:func:`rule_ids`), ``llmfix rules``, the
README's rules table (``scripts/readme_tables.py``) and ``llmfix explain`` read
this table; :mod:`llmfix.schema.repair` points each schema rule at the function that
carries it out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from llmfix import codes
from llmfix.codes import Code, Example
from llmfix.errors import ConfigError
from llmfix.model import Risk

__all__ = ["KINDS", "RULES", "RuleRecord", "all_rule_ids", "get", "markdown", "rule_ids"]

# What each kind of rule repairs, in the order ``llmfix explain`` lists them.
KINDS: dict[str, str] = {
    "parse": "a repair of the lenient reader",
    "schema": "a schema repair rule, making a parsed value fit its schema",
    "tools": "a tool-call repair, with --tools",
    "guided": "a schema-guided reading of an answer that is not JSON",
    "degenerate": "a check for an answer that is valid but worthless (a warning, no change)",
}


@dataclass(frozen=True)
class RuleRecord:
    """One repair rule: its id (``trailing_comma``, ``coerce_number``, ``boolean``), kind,
    the risk tiers its changes carry (the usual one first), what it does, and the code of
    its diagnostics. ``note`` is more the README says about it."""

    id: str
    kind: str
    risks: tuple[Risk, ...]
    description: str
    code: Code
    note: str = ""

    @property
    def risk(self) -> Risk:
        """The usual risk tier (a check that changes nothing, a degenerate one, has none:
        ``lossless``, as it loses nothing)."""
        return self.risks[0] if self.risks else Risk.LOSSLESS

    @property
    def example(self) -> Example | None:
        """An input it repairs, from its code's registry entry."""
        return self.code.example


def _from_code(kind: str, code: Code) -> RuleRecord:
    return RuleRecord(code.id.partition(".")[2], kind, code.risks, code.summary, code)


def _schema(id: str, risk: Risk, description: str, note: str = "") -> RuleRecord:
    return RuleRecord(id, "schema", (risk,), description, codes.get(f"repair.{id}"), note)


_SAFE = Risk.SAFE
_GUESS = Risk.GUESS

# Schema repair's rules, in the order they are listed (``llmfix rules``, the README).
SCHEMA_RULES: tuple[RuleRecord, ...] = (
    _schema(
        "parse_json_string",
        _SAFE,
        'JSON object/array sent as a string where one is wanted: "{\\"a\\": 1}" → {"a": 1}',
    ),
    _schema(
        "unwrap_object",
        _SAFE,
        'object wrapped in one undeclared key holding all required keys: {"result": {...}} → {...}',
    ),
    _schema("wrap_array", _SAFE, 'single value where an array is wanted: "red" → ["red"]'),
    _schema(
        "unwrap_array", _SAFE, 'one-element array where its element is wanted: ["red"] → "red"'
    ),
    _schema(
        "coerce_number",
        _SAFE,
        'number written as a string: "12" → 12, " 1e3 " → 1000.0; with thousands separators, '
        '"12,111" → 12111 where an integer is wanted, and "1,234,567" or "12,111.5" for any '
        'number (a lone "12,111" where a number is wanted could be a decimal comma: left alone)',
    ),
    _schema(
        "coerce_percent",
        _GUESS,
        'percentage on the scale the maximum implies: "87%" → 87 (maximum 100), 0.87 (maximum 1)',
    ),
    _schema(
        "coerce_fraction",
        _GUESS,
        'fraction: "7/10" → 7 when the maximum is 10, "1/5" → 0.2 when it is at most 1 or absent',
    ),
    _schema(
        "coerce_integer",
        _SAFE,
        'integer from an integral number or numeral: 12.0 → 12, "12" → 12',
    ),
    _schema("coerce_string", _SAFE, 'string from a number or boolean: 12 → "12", true → "true"'),
    _schema(
        "coerce_boolean",
        _SAFE,
        'boolean from "true"/"false"/"yes"/"no"/"1"/"0" (any case) or 1/0: "Yes" → true',
    ),
    _schema(
        "coerce_null",
        _SAFE,
        'null from "null"/"None"/"nil"/"undefined"/"N/A"/"" where null is allowed: "N/A" → null',
    ),
    _schema(
        "enum_case",
        _SAFE,
        'enum/const value equal after folding case and punctuation: "In Progress" → "in_progress"',
    ),
    _schema(
        "enum_nearest",
        _GUESS,
        'enum/const value nearest by edit distance (≥ 0.8 similar, unique): "complet" → "complete"',
    ),
    _schema(
        "rename_key_case",
        _SAFE,
        'key equal to a missing declared key after folding case/_/-: "firstName" → "first_name"',
    ),
    _schema(
        "rename_key_fuzzy",
        _GUESS,
        'near-miss of a missing declared key (≥ 0.8 similar, unique): "reasonning" → "reasoning"',
    ),
    # A guess, not safe: the model wrote the value, and dropping it loses data (a key it
    # misnamed, a field the schema forgot); --max-risk safe keeps it and fails instead.
    _schema(
        "remove_additional",
        _GUESS,
        "property that additionalProperties: false forbids, removed (value kept in the diagnostic)",
        note="a guess, since the model wrote it (a misnamed key, a field the schema lacks); with "
        "`--max-risk safe` it is kept and the answer fails. Tool-call arguments alike",
    ),
    _schema(
        "fill_default",
        _SAFE,
        'missing required property with a default filled: {} → {"n": 1}',
    ),
)

TOOL_RULES: tuple[RuleRecord, ...] = (
    RuleRecord(
        "tool_name",
        "tools",
        (Risk.SAFE, Risk.GUESS),
        "(with `--tools`) an unknown tool name renamed to the registered one: case/separator "
        "variants are safe, near-misses a guess",
        codes.REPAIR_TOOL_NAME,
    ),
)

# The lenient reader's repairs: every parse code that is a change (has a risk tier).
PARSE_RULES: tuple[RuleRecord, ...] = tuple(
    _from_code("parse", code)
    for code in codes.CODES.values()
    if code.family == "parse" and code.risks and code is not codes.PARSE_JSON_REPAIR
)

# The schema-guided readings: every guided code that is a reading (has a risk tier).
GUIDED_RULES: tuple[RuleRecord, ...] = tuple(
    _from_code("guided", code)
    for code in codes.CODES.values()
    if code.family == "guided" and code.risks
)

# The degenerate-answer checks (issue 35): no change, a warning each; rules so that
# --disable-rule turns one off.
DEGENERATE_RULES: tuple[RuleRecord, ...] = tuple(
    RuleRecord(rule_id, "degenerate", (), code.summary, code)
    for rule_id, code in (
        ("schema_echo", codes.DEGENERATE_SCHEMA_ECHO),
        ("placeholder", codes.DEGENERATE_PLACEHOLDER),
        ("repetition_loop", codes.DEGENERATE_REPETITION),
        ("whitespace_run", codes.DEGENERATE_WHITESPACE_RUN),
        ("all_empty", codes.DEGENERATE_ALL_EMPTY),
        ("repeated_elements", codes.DEGENERATE_REPEATED_ELEMENTS),
    )
)

# Every rule, keyed by kind and id (a parse repair and a guided reading may share an id).
RULES: dict[tuple[str, str], RuleRecord] = {
    (rule.kind, rule.id): rule
    for rule in (
        *PARSE_RULES,
        *SCHEMA_RULES,
        *TOOL_RULES,
        *GUIDED_RULES,
        *DEGENERATE_RULES,
    )
}


def get(id: str) -> list[RuleRecord]:
    """The rules called ``id`` (``enum-case`` or ``enum_case``), of any kind."""
    wanted = id.strip().replace("-", "_")
    return [rule for (_, rule_id), rule in RULES.items() if rule_id == wanted]


def all_rule_ids() -> frozenset[str]:
    """The ids ``--disable-rule`` and ``--rules`` take: schema repair's rules,
    ``tool_name`` (renaming an unknown tool, --tools) and the degenerate-answer checks."""
    return frozenset(rule.id for rule in (*SCHEMA_RULES, *TOOL_RULES, *DEGENERATE_RULES))


def rule_ids(names: Iterable[str]) -> frozenset[str]:
    """Rule ids as written by a user (``enum-case`` or ``enum_case``).

    Both spellings name the same rule everywhere (flags, config files, the library); an
    unknown id is a :class:`~llmfix.errors.ConfigError` with the closest known one.
    """
    names = list(names)
    if not names:
        return frozenset()
    known = all_rule_ids()
    found = set()
    for name in names:
        rule = str(name).strip().replace("-", "_")
        if rule not in known:
            import difflib

            close = difflib.get_close_matches(rule, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else " (see `llmfix rules`)"
            raise ConfigError(f"unknown rule {name!r}{hint}")
        found.add(rule)
    return frozenset(found)


def markdown() -> str:
    """The README's table of schema repair rules, ``tool_name`` and the degenerate-answer
    checks (``degenerate.*`` warnings), written from here."""
    out = ["| rule | risk | what it does (example) |", "|---|---|---|"]
    for rule in (*SCHEMA_RULES, *TOOL_RULES, *DEGENERATE_RULES):
        risk = " / ".join(r.value for r in rule.risks) or "— (a check)"
        text = rule.description + (f": {rule.note}" if rule.note else "")
        out.append(f"| `{rule.id}` | {risk} | {text} |")
    return "\n".join(out) + "\n"
