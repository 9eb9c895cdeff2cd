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
    deadline.check()
    if isinstance(value, dict):
        props: dict[str, Any] = {}
        for alt in shape.alternatives(schema, root):
            props.update(shape.properties(alt, root))
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
            if k in props
            else v
            for k, v in value.items()
        }
    if isinstance(value, list):
        items = next(
            (shape.items(a) for a in shape.alternatives(schema, root) if "array" in shape.types(a)),
            None,
        )
        if items is None:
            return value
        return [
            _refine(
                v, items, root, sw.child_pointer(pointer, i), changes, depth + 1, guesses, deadline
            )
            for i, v in enumerate(value)
        ]
    if not isinstance(value, str) or len(value) > _MAX_STRING:
        return value
    alts = shape.alternatives(schema, root)
    if any("string" in shape.types(a) and shape.members(a) is None for a in alts):
        return value
    readings, _ = read_scalars(value, 0, schema, root, deadline)
    if any("array" in shape.types(a) for a in alts):
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
    m = _CUT_KEY.search(text.rstrip())
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
