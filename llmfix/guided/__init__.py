"""Schema-guided reading: when an answer is not JSON, let the schema say how to read it.

The pipeline asks for these readings only when a schema is given and the ordinary reading
(extract → parse → select → schema repair) did not give a valid value, invented keys the
schema does not declare, or had to guess (then only a less risky reading replaces it); an
answer that is valid JSON never gets here. :func:`read_answer` lists every reading the schema
allows, in a fixed order, and the pipeline keeps the best one that validates (least risky,
then fewest schema repairs, then first in this order):

1. the known-keys re-read of an object (:mod:`.known_keys`, always a ``guess``);
2. XML elements (:mod:`.xml_answers`), a markdown table (:mod:`.formats`), TOON
   (:mod:`.toon`);
3. a markdown or comma-separated list, or the enum members prose names (:mod:`.lists`);
4. YAML, ``key: value`` lines (:mod:`.formats`);
5. scalars — enum/const members, booleans, null, numbers, the whole answer as a string
   (:mod:`.scalars`), read from the content of an ``<answer>``-like element when one element
   holding only text makes up the answer; then the answer as the value of an object's only
   property (:mod:`.values`).

Every object or array read (by the ordinary pipeline or by a reader above) is also offered
with its mistyped strings read as the scalars the schema wants there (``"ONE - the first"``
for an enum member, ``"**yes**"`` for a boolean; :mod:`.values`). In a value read from JSON
only whole strings are read so; in one read from another format (a ``key: value`` line, an
XML element) a value may also be picked out of the prose (``verdict: The claim is false.``).

:func:`collect_values` is the one reading made before selection: several JSON values in an
answer where the schema wants an array become that array.

An answer cut off right after an optional key gets that key left out (``guided.cut_off_key``)
rather than the null the parser filled in, where the schema does not allow null: a property the
answer did not give stays missing.

Text inside reasoning blocks (``<think>…</think>``) is never read.

The readings run against a :class:`~llmfix.deadline.Deadline`: each reader checks it once per
line, element, list entry or value it reads (every :data:`~llmfix.deadline.CHECK_EVERY` steps
in a scan), and :func:`read_answer` between readers, so a reading that runs out of time
raises :class:`~llmfix.deadline.OutOfTime` (the pipeline reports ``limits.time``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from llmfix.deadline import Deadline
from llmfix.guided import shape
from llmfix.model import Risk, Span, max_risk

if TYPE_CHECKING:
    from llmfix.guided.reading import Reading, Refusal

__all__ = ["Reading", "Refusal", "collect_values", "invented_keys", "read_answer", "wants_array"]

# The readers themselves, and what they make (:mod:`.reading`), are imported by read_answer
# and collect_values: a pipeline that only asks invented_keys or wants_array (a repaired
# answer, say) does not load them.
_NEVER = Deadline.never("guided")


def __getattr__(name: str) -> Any:
    if name in ("Reading", "Refusal"):
        # (start-up: the schema-guided readers load only when a reading is needed)
        from llmfix.guided import reading

        return getattr(reading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _outside_reasoning(text: str, reasoning: Sequence[Span]) -> str:
    """``text`` with reasoning blocks blanked out (same length, so spans still hold)."""
    if not reasoning:
        return text
    parts = []
    pos = 0
    for block in reasoning:
        parts.append(text[pos : block.start])
        parts.append(" " * (block.end - block.start))
        pos = block.end
    parts.append(text[pos:])
    return "".join(parts)


def read_answer(
    text: str,
    schema: Any,
    reasoning: Sequence[Span] = (),
    parsed: tuple[Any, Span] | None = None,
    *,
    text_readings: bool = True,
    in_values: bool = True,
    deadline: Deadline = _NEVER,
) -> tuple[list[Reading], list[Refusal]]:
    """Every reading of ``text`` that ``schema`` allows, best-first, and what was refused.

    ``parsed`` is the value the ordinary reading gave (and where): its mistyped strings are
    read too (:func:`refine_strings`), but only where the whole string is the value: a JSON
    string the model wrote is not searched for a value in its prose (``"about 36"`` stays a
    string). Without ``text_readings`` only that is done (for an answer that is strict JSON,
    whose text is never re-read). Without ``in_values`` strings inside a parsed value are
    not re-read (the caller turned schema-repair rules off). Raises
    :class:`~llmfix.deadline.OutOfTime` when ``deadline`` passes.
    """
    if not isinstance(schema, dict):
        return [], []
    # (start-up: the schema-guided readers load only when a reading is needed)
    from llmfix.guided.values import cut_off_key, refine_strings, single_property, unwrap

    readings: list[Reading] = []
    if parsed is not None and in_values:
        found = refine_strings(parsed[0], schema, parsed[1], guesses=False, deadline=deadline)
        if found is not None:
            readings.append(found)
        cut = cut_off_key(text, parsed[0], schema, parsed[1])
        if cut is not None:
            readings.append(cut)
        unwrapped = unwrap(parsed[0], schema, parsed[1], text)
        if unwrapped is not None:
            readings.append(unwrapped)
    answer = _outside_reasoning(text, reasoning)
    if not text_readings or not answer.strip():
        return readings + single_property(None, schema, parsed, deadline), []
    # (the readers of text: an answer that is strict JSON, whose text is not re-read, does
    # not look them up)
    from llmfix.guided.formats import (
        read_key_values,
        read_table,
        read_xml,
        read_yaml,
        wrapper_content,
    )
    from llmfix.guided.known_keys import read_known_keys
    from llmfix.guided.lists import read_lists
    from llmfix.guided.scalars import read_scalars
    from llmfix.guided.toon import read_toon

    readers = (read_xml, read_table, read_toon, read_lists, read_yaml, read_key_values)
    ordinary = parsed[0] if parsed is not None else None
    first = read_known_keys(answer, 0, schema, schema, ordinary, deadline)
    for found in (first, *(reader(answer, 0, schema, schema, deadline) for reader in readers)):
        deadline.check()
        if found is not None:
            readings.append(found)
            refined = (
                refine_strings(found.value, schema, found.span, deadline=deadline)
                if in_values
                else None
            )
            if refined is not None:
                risk = max_risk([found.risk, refined.risk]) or found.risk
                message = f"{found.message}; {refined.message}"
                readings.append(replace(found, value=refined.value, risk=risk, message=message))
    refusals: list[Refusal] = []
    deadline.check()
    content = wrapper_content(answer, deadline)
    if content is not None:
        inner, at = content
        more, refused = read_scalars(inner, at, schema, schema, deadline)
        readings += more
        refusals += refused
    more, refused = read_scalars(answer, 0, schema, schema, deadline)
    readings += more
    deadline.check()
    readings += single_property(answer, schema, parsed, deadline)
    if not readings:
        refusals += refused
    return readings, refusals


def wants_array(schema: Any) -> bool:
    """Whether the root of ``schema`` wants an array and not an object."""
    if not isinstance(schema, dict):
        return False
    return shape.wants(schema, schema, "array") and not shape.wants(schema, schema, "object")


def collect_values(
    values: Sequence[tuple[Span, Any]], fits: Callable[[Any], bool]
) -> Reading | None:
    """Several top-level JSON values in an answer, collected (in order) into one array.

    ``values`` are the answer's JSON values with their spans, none inside another; ``fits``
    says whether a value fits the item schema. Only values that fit are collected, and only
    when at least two do.
    """
    kept = [(span, v) for span, v in values if fits(v)]
    if len(kept) < 2:
        return None
    # (start-up: the schema-guided readers load only when a reading is needed)
    from llmfix.guided.reading import Reading

    span = Span(kept[0][0].start, kept[-1][0].end)
    return Reading(
        [v for _, v in kept],
        "guided.collect",
        span,
        Risk.SAFE,
        f"{len(kept)} JSON values in the answer collected into the array the schema wants",
    )


def invented_keys(chosen: Any, schema: Any) -> bool:
    """Whether a parse that had to guess gave an object with keys the schema does not declare
    (the sign of a value split into invented keys at its commas or quotes)."""
    value = chosen.value
    if not isinstance(value, dict) or not isinstance(schema, dict):
        return False
    if not any(d.risk is Risk.GUESS and d.stage == "parse" for d in chosen.diagnostics):
        return False
    declared: set[str] = set()
    for alt in shape.alternatives(schema, schema):
        declared |= set(shape.properties(alt, schema))
    return bool(declared) and any(k not in declared for k in value)
