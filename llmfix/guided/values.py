"""Readings inside a value: a string where the schema wants a scalar that is not a string.

``{"choice": "ONE - the first option"}`` under ``{"choice": {"enum": ["ONE", "TWO"]}}``,
``{"ok": "Yes, it compiles"}`` where a boolean is wanted, or a markdown list of several lines
where an array is wanted: each such string is read the way a whole answer is
(:mod:`llmfix.guided.scalars`, :mod:`llmfix.guided.lists`), at its place in the value.
Strings where a string is allowed are never touched. The reading is as risky as the
riskiest string read.

Also here: an answer that is not JSON where the schema wants an object with exactly one
property is read as that property's value when that value is a member, boolean, null or
number read from the text (``**Yes**`` → ``{"ok": true}``), a guess. The whole answer as a
string property is not offered: any text would fit it.

And the other way round: an object with one key where the schema wants no object is read
as that key's value (:func:`unwrap`, ``{"answer": 4}`` → ``4``), a guess.
"""

from __future__ import annotations

import re
from typing import Any

from llmfix.deadline import Deadline
from llmfix.guided import shape
from llmfix.guided.lists import read_lists
from llmfix.guided.reading import NEVER, Reading
from llmfix.guided.scalars import read_scalars
from llmfix.model import Risk, Span, max_risk
from llmfix.schema import walk as sw

_MAX_DEPTH = 64
_MAX_STRING = 20_000


def refine_strings(
    value: Any, schema: Any, span: Span, *, guesses: bool = True, deadline: Deadline = NEVER
) -> Reading | None:
    """``value`` with its mistyped strings read against their schemas (``None``: no change).

    Without ``guesses`` only whole-string readings are made (``"**true**"``, ``"$1,250"``,
    ``"ONE - the first"``), and enum or const members named in a sentence (``"I would say
    BLUE"``, a guess), not numbers or yes/no words picked out of prose (``"about 36"``): for
    an answer that is strict JSON, where the model wrote that string on purpose.
    ``deadline`` is checked once per value walked.
    """
    changes: list[tuple[str, Risk]] = []
    refined = _refine(value, schema, schema, "", changes, 0, guesses, deadline)
    if not changes:
        return None
    risk = max_risk([r for _, r in changes]) or Risk.SAFE
    where = ", ".join(p or "/" for p, _ in changes[:5]) + (" …" if len(changes) > 5 else "")
    return Reading(
        refined,
        "guided.in_value",
        span,
        risk,
        f"read {len(changes)} string(s) as the scalar the schema wants at {where}",
    )


def _refine(
    value: Any,
    schema: Any,
    root: Any,
    pointer: str,
    changes: list[tuple[str, Risk]],
    depth: int,
    guesses: bool,
    deadline: Deadline,
) -> Any:
    if depth > _MAX_DEPTH:
        return value
    facts = _facts(schema, root)
    if not facts.refinable:
        return value  # no string under it can change
    deadline.check()
    if isinstance(value, dict):
        props = facts.properties
        return {
            k: _refine(
                v,
                props[k],
                root,
                sw.child_pointer(pointer, k),
                changes,
                depth + 1,
                guesses,
                deadline,
            )
            if k in props and _facts(props[k], root).refinable
            else v
            for k, v in value.items()
        }
    if isinstance(value, list):
        items = facts.items
        if items is None or not _facts(items, root).refinable:
            return value
        return [
            _refine(
                v, items, root, sw.child_pointer(pointer, i), changes, depth + 1, guesses, deadline
            )
            for i, v in enumerate(value)
        ]
    if not isinstance(value, str) or len(value) > _MAX_STRING or facts.takes_strings:
        return value
    readings, _ = read_scalars(value, 0, schema, root, deadline)
    if facts.wants_array:
        listed = read_lists(value, 0, schema, root, deadline)
        if listed is not None and "\n" in value:
            readings.insert(0, listed)
    for reading in readings:
        if not guesses and reading.risk is Risk.GUESS and reading.code != "guided.enum":
            # A member picked out of a sentence is still read ("I would say BLUE" where
            # only BLUE or RED may stand); a number or a yes/no in prose is not.
            continue
        if reading.code != "guided.string" and not sw.json_equal(reading.value, value):
            changes.append((pointer, reading.risk))
            return reading.value
    return value


class _Facts:
    """What :func:`_refine` asks of one subschema, worked out once: the properties its
    alternatives declare, the items schema of the first that wants an array, whether one
    takes any string (a string there is left as it is), whether one wants an array, and
    whether any string under it may be read at all (``refinable``: when not, a value
    under it comes back as it is, and the walk skips it)."""

    __slots__ = ("items", "properties", "refinable", "takes_strings", "wants_array")

    def __init__(self, schema: Any, root: Any) -> None:
        alts = shape.alternatives(schema, root)
        props: dict[str, Any] = {}
        for alt in alts:
            props.update(shape.properties(alt, root))
        self.properties = props
        self.items: Any = next((shape.items(a) for a in alts if "array" in shape.types(a)), None)
        self.takes_strings = any(
            "string" in shape.types(a) and shape.members(a) is None for a in alts
        )
        self.wants_array = any("array" in shape.types(a) for a in alts)
        self.refinable = True


# (id(schema), id(root)) → (schema, root, its facts): kept for the next answer against the
# same schema; the entry holds both objects, so an id is not reused while it is kept.
_FACTS: dict[tuple[int, int], tuple[Any, Any, _Facts]] = {}
_FACTS_SIZE = 4096


def _facts(schema: Any, root: Any) -> _Facts:
    key = (id(schema), id(root))
    hit = _FACTS.get(key)
    if hit is not None and hit[0] is schema and hit[1] is root:
        return hit[2]
    facts = _Facts(schema, root)
    facts.refinable = _refinable(schema, root, set(), 0)
    if len(_FACTS) >= _FACTS_SIZE:
        _FACTS.clear()
    _FACTS[key] = (schema, root, facts)
    return facts


def _refinable(schema: Any, root: Any, active: set[int], depth: int) -> bool:
    """Whether :func:`_refine` could change a string of some value under ``schema``: the
    walk it makes, over the schema alone. A schema met again on its own path (a
    recursive ``$ref``) or too deep counts as refinable (the walk decides value by value)."""
    if not isinstance(schema, dict) or not schema:
        return False  # anything goes: every string is taken as it is, at every depth
    if id(schema) in active or depth > _MAX_DEPTH:
        return True
    facts = _Facts(schema, root)
    if not facts.takes_strings:
        return True  # a string here is read
    active.add(id(schema))
    try:
        if any(_refinable(sub, root, active, depth + 1) for sub in facts.properties.values()):
            return True
        return facts.items is not None and _refinable(facts.items, root, active, depth + 1)
    finally:
        active.discard(id(schema))


def _of_type(value: Any, schema: Any, root: Any) -> bool:
    kind = sw.json_type(value)
    kinds = (kind, "number") if kind == "integer" else (kind,)
    return any(shape.wants(schema, root, k) for k in kinds)


def single_property(
    text: str | None,
    schema: Any,
    ordinary: tuple[Any, Span] | None = None,
    deadline: Deadline = NEVER,
) -> list[Reading]:
    """The answer as the value of the one property an object schema declares: a list or a
    member, boolean, null or number read from ``text``, or the JSON value the ordinary reading
    gave when it is not an object (``[1, 2]`` → ``{"numbers": [1, 2]}``)."""
    out: list[Reading] = []
    for alt in shape.alternatives(schema, schema):
        props = shape.properties(alt, schema)
        if "object" not in shape.types(alt) or len(props) != 1:
            continue
        ((name, prop),) = props.items()
        readings: list[Reading] = []
        if text is not None:
            listed = read_lists(text, 0, prop, schema, deadline)
            readings += [listed] if listed is not None else []
            scalars, _ = read_scalars(text, 0, prop, schema, deadline)
            readings += [r for r in scalars if r.code != "guided.string"]
        if (
            ordinary is not None
            and not isinstance(ordinary[0], dict)
            and _of_type(ordinary[0], prop, schema)
        ):  # only a value already of the property's type: [1, 2] for an array, not 1 for text
            readings.append(Reading(ordinary[0], "", ordinary[1], Risk.SAFE, "the JSON value"))
        for reading in readings:
            out.append(
                Reading(
                    {name: reading.value},
                    "guided.single_property",
                    reading.span,
                    Risk.GUESS,
                    f"the schema wants an object with the one property {name!r}: {reading.message}",
                )
            )
        break
    return out


_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n]*$", re.MULTILINE)
_CUT_KEY = re.compile(r"[{,]\s*[\"']([^\"'\n]{1,200})[\"']\s*:?\s*\Z")


def cut_off_key(text: str, value: Any, schema: Any, span: Span) -> Reading | None:
    """An answer cut off right after a key (``{"a": 1, "b":``): the key is left out when it is
    optional, instead of being given a null its schema does not allow (the parser's reading)."""
    stripped = text.rstrip()
    # (what the pattern ends with: most answers end otherwise, and are not scanned)
    if stripped[-1:] not in ('"', "'", ":"):
        return None
    m = _CUT_KEY.search(stripped)
    if m is None or not isinstance(value, dict) or not value:
        return None
    name = m.group(1)
    if list(value)[-1] != name or value[name] is not None:
        return None
    for alt in shape.alternatives(schema, schema):
        if name in shape.required(alt):
            return None
        prop = shape.properties(alt, schema).get(name)
        if prop is not None and shape.wants(prop, schema, "null"):
            return None
    kept = {k: v for k, v in value.items() if k != name}
    return Reading(
        kept,
        "guided.cut_off_key",
        span,
        Risk.GUESS,
        f"the answer was cut off after the optional key {name!r}: left out, not set to null",
    )


def unwrap(value: Any, schema: Any, span: Span, text: str) -> Reading | None:
    """A scalar (or a list) wrapped in an object with one key, where the schema wants no
    object: ``{"answer": 4}`` for an integer, ``{"label": "spam"}`` for an enum, ``{"items":
    [1, 2]}`` for an array. The value must be of a type the schema allows, or a string where
    it wants another scalar (``{"answer": "4"}``; schema repair reads it). A guess: the key
    is dropped. Only an object that is the whole answer (a fence around it allowed): one in
    prose (``The call {"a": 1} returned 12``) is not the answer wrapped."""
    if not isinstance(value, dict) or len(value) != 1 or not isinstance(schema, dict):
        return None
    outside = text[: span.start] + "\n" + text[span.end :]
    if _FENCE_LINE.sub("", outside).strip():
        return None
    if shape.wants(schema, schema, "object"):
        return None
    ((key, inner),) = value.items()
    if isinstance(inner, dict):
        return None
    if not _of_type(inner, schema, schema) and not (
        isinstance(inner, str) and not shape.wants(schema, schema, "string")
    ):
        return None  # {"a": 1} is not a string; {"answer": "4"} may be an integer
    return Reading(
        inner,
        "guided.unwrap",
        span,
        Risk.GUESS,
        f"the schema wants no object: took the value of the one key {key!r}",
    )
