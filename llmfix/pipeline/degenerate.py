"""Answers that are valid JSON, may pass their schema, and still hold no data.

A model stuck or confused writes things no schema forbids: the schema it was given (or its
``properties``, or its example) instead of an answer; template values (``"string"``,
``"<name>"``, ``"John Doe"``, ``"example@example.com"``, ``"TODO"``); the same phrase
repeated until the token limit; whitespace until the limit; an object whose every value
is empty; an array of one element repeated. :func:`degenerate` finds each, as a warning
with its own code (``degenerate.*``) and rule id (so ``--disable-rule`` turns one off);
:func:`llmfix.pipeline.finish.finish` calls it on every value it finishes.

Cost: one walk over the value that only sorts its leaves; its strings are then looked at
together (:func:`_quiet`: lowered and stripped in one join, met with the placeholders as a
set), and only an answer where something may be found is walked again with the checks on
each string, which write the warnings. A loop is looked for in a string as long as one by
comparing its last ``loop_chars`` characters with themselves shifted by each period up to
``loop_period`` (C-speed slice equality that does not grow with the string); a whitespace
run by searching every ``whitespace_run/4``-th character, taken in one slice, for four
whitespace ones in a row, and measuring only there. Linear in the size of the answer.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from itertools import compress
from typing import Any

from llmfix import codes
from llmfix.model import Diagnostic, LineIndex, Span
from llmfix.options import Degenerate

__all__ = ["PLACEHOLDERS", "RULE_IDS", "degenerate", "is_placeholder"]

# rule id → its code (see llmfix.rules.DEGENERATE_RULES)
RULE_IDS = (
    "schema_echo",
    "placeholder",
    "repetition_loop",
    "whitespace_run",
    "all_empty",
    "repeated_elements",
)

# The values taken as placeholders, compared without case and surrounding whitespace. The
# type names count only under a key that does not name a type (see _TYPE_KEYS).
PLACEHOLDERS: tuple[str, ...] = (
    "string",
    "integer",
    "number",
    "boolean",
    "john doe",
    "jane doe",
    "john smith",
    "example@example.com",
    "user@example.com",
    "email@example.com",
    "john.doe@example.com",
    "johndoe@example.com",
    "your name",
    "your name here",
    "your email",
    "insert name here",
    "todo",
    "tbd",
    "fixme",
    "placeholder",
    "lorem ipsum",
    "xxx",
)
_TYPE_NAMES = frozenset({"string", "integer", "number", "boolean"})
# keys under which a type name is data (a schema, a form, a column list)
_TYPE_KEYS = ("type", "format", "kind", "dtype")
# Template markers: <name>, {{name}}, {name}, [INSERT NAME], [your name]; lorem ipsum text.
_TEMPLATE = re.compile(
    r"<[A-Za-z_][\w .-]{0,40}>|\{\{\s*[\w .-]{1,40}\s*\}\}|\{[A-Za-z_]\w{0,40}\}"
    r"|\[(?:insert|your|enter|add)\b[^\]]{0,40}\]|lorem ipsum\b.*",
    re.IGNORECASE | re.DOTALL,
)
_TEMPLATE_STARTS = frozenset("<{[l")
_PLACEHOLDER_MAX = 80  # longer strings are no placeholder (lorem ipsum: its start)
_WHITESPACE = " \t\r\n"


_SPACE = frozenset(_WHITESPACE)
_SPACES = re.compile(r"[ \t\r\n]*")


def _whitespace_run(text: str, threshold: int) -> tuple[int, int] | None:
    """``(start, end)`` of the first run of ``threshold`` whitespace characters or more.

    A run that long holds at least ``need = threshold // step`` consecutive positions of
    the grid ``step - 1 + k·step`` (``step`` a quarter of ``threshold``). The grid's
    characters are taken in one slice and searched, at C speed, for ``need`` whitespace
    ones in a row; only such a group (an indented document has few, prose none) is
    measured, each run once: its end by a regular expression anchored there, its start
    by stripping the ``step`` characters before it (the grid point before the group is
    not whitespace, so the run starts after it).
    """
    step = max(1, threshold // 4)
    need = threshold // step
    grid = text[step - 1 :: step]
    groups = _grid_runs(need)
    if groups.search(grid) is None:  # (most texts: one C-speed look)
        return None
    done = 0  # where the last measured run ends
    for group in groups.finditer(grid):
        last = group.end()
        for k in range(group.start(), last):
            if last - k < need:
                break  # a run from here on would reach past the group
            i = step - 1 + k * step
            if i < done:
                continue
            found = _SPACES.match(text, i)
            end = found.end() if found is not None else i + 1
            before = text[max(0, i - step) : i]
            start = i - (len(before) - len(before.rstrip(_WHITESPACE)))
            if end - start >= threshold:
                return start, end
            done = end
    return None


@functools.lru_cache(maxsize=8)
def _grid_runs(need: int) -> re.Pattern[str]:
    return re.compile(f"[ \\t\\r\\n]{{{need},}}")


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


# A place in the walk: (value, the key it is under, its step in the pointer, the parent's
# place). The pointer is built from the chain only for a warning.
_Place = tuple[Any, Any, Any, Any]


def _pointer(place: _Place) -> str:
    steps = []
    while place[3] is not None:
        steps.append(f"/{_escape(str(place[2]))}")
        place = place[3]
    return "".join(reversed(steps))


def _shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


class _Placeholders:
    """The placeholder test, built once per list."""

    def __init__(self, values: tuple[str, ...], templates: bool) -> None:
        self.exact = frozenset(v.strip().lower() for v in values)
        self.templates = templates  # also <name>, {{name}}, [insert ...], lorem ipsum ...

    def __call__(self, text: str, key: Any) -> bool:
        if len(text) > _PLACEHOLDER_MAX:
            return self.templates and text[:12].lower() == "lorem ipsum "
        stripped = text.strip()
        folded = stripped.lower()
        if folded in self.exact:
            if folded in _TYPE_NAMES and isinstance(key, str):
                lowered = key.lower()
                return not any(word in lowered for word in _TYPE_KEYS)
            return True
        # (the template markers all start with one of these: most strings end here)
        if not self.templates or folded[:1] not in _TEMPLATE_STARTS:
            return False
        return _TEMPLATE.fullmatch(stripped) is not None


_DEFAULT_TEST = _Placeholders(PLACEHOLDERS, templates=True)


def is_placeholder(text: str, key: str | None = None) -> bool:
    """Whether ``text`` (under ``key``) is one of the default placeholders."""
    return _DEFAULT_TEST(text, key)


def _placeholder_test(options: Degenerate) -> _Placeholders:
    if options.placeholders is None and not options.extra_placeholders:
        return _DEFAULT_TEST
    base = PLACEHOLDERS if options.placeholders is None else options.placeholders
    return _Placeholders((*base, *options.extra_placeholders), options.placeholders is None)


def _loop(text: str, options: Degenerate) -> tuple[int, int] | None:
    """``(period, length)`` of the repetition that ends ``text``, or None.

    A tail of ``span`` characters (at least ``loop_chars`` and ``loop_repeats`` units)
    that repeats with period ``p`` holds its last ``K`` characters again ``p`` earlier
    (``K`` at most half of ``loop_chars``, so within the span). So the candidates are the
    places the last ``K`` characters recur within ``loop_period`` before the end (found
    with ``rfind``: none, in prose), nearest first; each is checked by comparing the tail
    with itself shifted (slice equality). The loop's length is then counted back from the
    end, one unit at a time.
    """
    n = len(text)
    k = max(1, min(32, options.loop_chars // 2, n // 2))
    tail = text[n - k :]
    low = max(0, n - k - options.loop_period)
    end = n - 1
    while True:
        at = text.rfind(tail, low, end)
        if at < 0:
            return None
        end = at + k - 1  # the next candidate starts before this one
        p = n - k - at
        span = max(options.loop_chars, p * options.loop_repeats)
        if span > n:
            return None  # a longer period needs a longer span still
        if text[n - span + p :] != text[n - span : n - p]:
            continue
        if not text[n - p :].strip():  # whitespace repeated: a whitespace run's business
            return None
        start = n - span // p * p  # whole units, counted from the end
        unit = text[n - p :]
        while start >= p and text[start - p : start] == unit:
            start -= p
        return p, n - start


class _Strings:
    """The checks of one non-empty string: placeholder, loop, whitespace run."""

    __slots__ = ("loop", "options", "out", "runs", "test")

    def __init__(
        self,
        out: list[Diagnostic],
        test: _Placeholders | None,
        options: Degenerate,
        loop: bool,
        runs: bool,
    ) -> None:
        self.out, self.test, self.options, self.loop, self.runs = out, test, options, loop, runs

    def check(self, text: str, key: Any, step: Any, parent: _Place | None) -> None:
        """``text``, the value under ``key`` at ``step`` of ``parent`` (None: the root)."""
        options = self.options
        size = len(text)
        if self.test is not None and self.test(text, key):
            self.out.append(
                codes.DEGENERATE_PLACEHOLDER.at(
                    f"placeholder value {_shown(text)}",
                    pointer=_child_pointer(parent, step),
                    hint="the model left a template value: check that the prompt gives it the data",
                )
            )
        if self.loop and size >= options.loop_chars:
            found = _loop(text, options)
            if found is not None:
                period, length = found
                self.out.append(
                    codes.DEGENERATE_REPETITION.at(
                        f"the last {length:,} characters repeat {_shown(text[size - period :])} "
                        f"{length // period:,} times",
                        pointer=_child_pointer(parent, step),
                        hint="a repetition loop, often cut by the token limit: lower the "
                        "temperature, add a repetition penalty or a stop sequence",
                        data={"period": period, "length": length},
                    )
                )
        if self.runs and size >= options.whitespace_run:
            run = _whitespace_run(text, options.whitespace_run)
            if run is not None:
                self.out.append(_run_diagnostic(run, _child_pointer(parent, step), None))


def _child_pointer(parent: _Place | None, step: Any) -> str:
    if parent is None:
        return ""
    return f"{_pointer(parent)}/{_escape(str(step))}"


_ON: dict[frozenset[str], tuple[bool, ...]] = {}  # the checks on, per set of rules off


def degenerate(
    value: Any,
    text: str | None,
    schema: Any,
    options: Degenerate,
    disabled: frozenset[str] = frozenset(),
) -> list[Diagnostic]:
    """The degenerate-answer warnings of ``value`` (read from ``text``, checked against
    ``schema`` when there is one), but for the rules in ``disabled``. A warning about a
    place in the value has its JSON Pointer and no span (the caller places it); one about
    the text has its span and position."""
    out: list[Diagnostic] = []
    on = _ON.get(disabled)
    if on is None:
        if len(_ON) > 64:  # (a library caller's many sets of rules: kept bounded)
            _ON.clear()
        on = _ON[disabled] = tuple(rule not in disabled for rule in RULE_IDS)
    echo, placeholder, loop, whitespace, empty, repeated = on
    if echo and schema is not None and isinstance(value, (dict, list)):
        found = _echo(value, schema)
        if found is not None:
            out.append(
                codes.DEGENERATE_SCHEMA_ECHO.at(
                    f"the answer is {found}, not data",
                    pointer="",
                    hint="say in the prompt that the schema describes the answer, or use "
                    "the provider's structured output",
                )
            )
    text_run = False
    if whitespace and text is not None and len(text) >= options.whitespace_run:
        run = _whitespace_run(text, options.whitespace_run)
        if run is not None:
            text_run = True
            out.append(_run_diagnostic(run, None, text))
    if not (placeholder or loop or whitespace or empty or repeated):
        return out
    test = _placeholder_test(options) if placeholder else None
    # A string holds a run the text does not only through escapes (\n, \t): with no
    # backslash in the text, the strings need no look.
    runs = whitespace and not text_run and (text is None or "\\" in text)
    strings = _Strings(out, test, options, loop, runs)
    leaves = empties = blanks = 0
    if type(value) is not dict and type(value) is not list:  # a scalar answer
        if type(value) is str and value:
            strings.check(value, None, None, None)
        return out
    if _quiet(value, test, options, loop, runs, empty, repeated):
        return out
    # Containers only are queued (breadth first); their strings and scalars are looked at
    # in place, so a leaf costs no allocation.
    queue: list[_Place] = [(value, None, None, None)]
    at = 0
    while at < len(queue):
        place = queue[at]
        at += 1
        node, key = place[0], place[1]
        if type(node) is dict:
            children: Any = node.items()
        else:
            children = enumerate(node)
            if repeated and len(node) >= options.repeated_elements:
                found_run = _repeated(node, options.repeated_elements)
                if found_run is not None:
                    start, length = found_run
                    out.append(
                        codes.DEGENERATE_REPEATED_ELEMENTS.at(
                            f"{length:,} identical elements in a row, from index {start}",
                            pointer=_pointer(place),
                            hint="the model repeated itself: a loop, or one item copied",
                            data={"start": start, "count": length},
                        )
                    )
        named = type(node) is dict
        for step, child in children:
            kind = type(child)
            if kind is str:
                leaves += 1
                if child:
                    strings.check(child, step if named else key, step, place)
                else:
                    empties += 1
                    blanks += 1
            elif kind is dict or kind is list:
                if child:
                    queue.append((child, step if named else key, step, place))
                else:
                    leaves += 1
                    empties += 1
            else:
                leaves += 1
                if child is None:
                    empties += 1
                    blanks += 1
    if empty and leaves >= 2 and empties == leaves and blanks:
        out.append(
            codes.DEGENERATE_ALL_EMPTY.at(
                f"every one of the {leaves} values is empty",
                pointer="",
                hint="the model answered with the shape and no data",
            )
        )
    return out


def _quiet(
    value: dict[str, Any] | list[Any],
    test: _Placeholders | None,
    options: Degenerate,
    loop: bool,
    runs: bool,
    empty: bool,
    repeated: bool,
) -> bool:
    """Whether the walk of :func:`degenerate` surely finds nothing in ``value`` (a
    container): most answers, which then cost a walk that only sorts the leaves, not one
    that calls the checks on each string.

    The strings are gathered and looked at together, at C speed: lowered and stripped,
    they meet the placeholders as a set; stripped and joined, a template's first
    characters are searched after each separator; only strings as long as a loop or a run
    are looked at one by one. Any doubt (a string that may be a placeholder, a type name
    under a key that names a type) is False: the walk decides, and it alone writes
    warnings, so what is found is the same either way.
    """
    strings: list[str] = []
    add = strings.append
    queue: list[Any] = [value]
    least = options.repeated_elements
    hollow = nones = other = 0  # empty containers, nulls, numbers and booleans
    for node in queue:  # (the queue grows while it is read)
        if type(node) is dict:
            children: Any = node.values()
        else:
            children = node
            if repeated and len(node) >= least and _repeated(node, least) is not None:
                return False
        for child in children:
            kind = type(child)
            if kind is str:
                add(child)
            elif kind is dict or kind is list:
                if child:
                    queue.append(child)
                else:
                    hollow += 1
            elif child is None:
                nones += 1
            else:
                other += 1
    if empty and not other and hollow + nones + len(strings) >= 2:
        blank = strings.count("")
        if blank == len(strings) and blank + nones:
            return False  # every value empty
    if not strings:
        return True
    longest = max(map(len, strings))
    if test is not None:
        # (a string longer than _PLACEHOLDER_MAX is no placeholder but for its start)
        short: Any = strings
        if longest > _PLACEHOLDER_MAX:
            short = compress(strings, map(_PLACEHOLDER_MAX.__ge__, map(len, strings)))
        if not test.exact.isdisjoint(map(str.strip, map(str.lower, short))):
            return False
        if test.templates and _TEMPLATE_START.search("\x00" + "\x00".join(map(str.strip, strings))):
            return False
    shortest = min(
        options.loop_chars if loop else _NEVER, options.whitespace_run if runs else _NEVER
    )
    if longest >= shortest:
        for text in strings:
            size = len(text)
            if size < shortest:
                continue
            if loop and size >= options.loop_chars and _loop(text, options) is not None:
                return False
            if (
                runs
                and size >= options.whitespace_run
                and _whitespace_run(text, options.whitespace_run) is not None
            ):
                return False
    return True


# What a stripped string that may be a template begins with, after the separator (see
# _TEMPLATE: <name>, {{name}}, {name}, [insert ...], lorem ipsum; the same case folding).
_TEMPLATE_START = re.compile("\x00(?:[<{[]|(?i:lorem ipsum))")
_NEVER = 1 << 62


def _run_diagnostic(run: tuple[int, int], pointer: str | None, text: str | None) -> Diagnostic:
    """A whitespace run: in the answer's ``text`` (its span), or in a string (``pointer``)."""
    where = "in the answer" if pointer is None else "in a string"
    length = run[1] - run[0]
    span = position = None
    if text is not None:
        span = Span(run[0], run[1])
        position = LineIndex(text).position(run[0])
    return codes.DEGENERATE_WHITESPACE_RUN.at(
        f"{length:,} whitespace characters in a row {where}",
        pointer=pointer,
        span=span,
        position=position,
        hint="the model wrote whitespace until it stopped (a known failure of JSON modes): "
        "add a stop sequence or use the provider's structured output",
        data={"length": length},
    )


def _repeated(items: list[Any], least: int) -> tuple[int, int] | None:
    """``(start, length)`` of the first run of ``least`` or more identical elements that
    are strings, objects or arrays (numbers, booleans and null are data repeated)."""
    start, length = 0, 1
    for i in range(1, len(items)):
        here = items[i]
        if type(here) is type(items[i - 1]) and here == items[i - 1]:
            length += 1
            if length >= least and type(here) in (str, dict, list):
                end = i + 1
                while end < len(items) and items[end] == here and type(items[end]) is type(here):
                    end += 1
                return start, end - start
        else:
            start, length = i, 1
    return None


def _echo(value: Any, schema: Any) -> str | None:
    """What of ``schema`` ``value`` repeats ("the schema", "the schema's properties",
    "the schema's example"), or None."""
    if not isinstance(schema, Mapping):
        return None
    if value == schema:
        return "the schema"
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, Mapping) and properties:
        if value == properties:
            return "the schema's properties"
        echoed = value.get("properties")
        if (
            isinstance(echoed, dict)
            and ("type" in value or "$schema" in value)
            and set(properties) <= set(echoed)
            and all(isinstance(v, dict) for v in echoed.values())
        ):
            return "a schema with the schema's properties"
    examples = schema.get("examples")
    candidates = list(examples) if isinstance(examples, list) else []
    if "example" in schema:
        candidates.append(schema["example"])
    for example in candidates:
        if isinstance(example, (dict, list)) and len(example) >= 2 and value == example:
            return "the schema's example"
    return None
