"""Bounded schema evaluation: patterns that cannot backtrack forever, and a step budget.

A schema is untrusted input, and jsonschema evaluates it in pure Python: ``"pattern":
"^(a+)+$"`` against ``"aaaa…!"`` backtracks for ever in :mod:`re`, and nine levels of
``allOf`` with nine ``$ref`` each apply 9⁹ subschemas to one value.

- **Patterns**: one that :mod:`re` could backtrack on without end (a repetition that holds
  another repetition or an alternation, or a backreference) runs on jsonschema-rs's regex
  engine (Rust's ``regex``, linear in the text; backtracking only for lookaround and
  backreferences, under its backtrack limit). Every other pattern runs on :mod:`re` as
  before. A risky pattern jsonschema-rs cannot take is :class:`TooCostly`.
- **Steps**: :func:`bounded_class` wraps a jsonschema validator class so that every keyword
  it applies counts one step against the budget of :func:`steps` (and reads the deadline
  given there every so many steps); past the budget it raises :class:`TooCostly`.
  Without a budget (outside :func:`steps`) nothing is counted.
"""

from __future__ import annotations

import functools
import importlib
import re
import reprlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llmfix.deadline import CHECK_EVERY, Deadline

__all__ = [
    "STEPS_BASE",
    "STEPS_PER_VALUE",
    "TooCostly",
    "allowance",
    "bounded_class",
    "no_more",
    "pattern_is_risky",
    "search",
    "steps",
]

# Keywords applied in one validation: a base for any value, plus so many per JSON value it
# holds (an ordinary schema applies a handful of keywords to each value).
STEPS_BASE = 50_000
STEPS_PER_VALUE = 200

_MASK = CHECK_EVERY - 1


def no_more() -> int:
    """No steps past :data:`STEPS_BASE`."""
    return 0


class TooCostly(Exception):
    """Evaluating the schema would take too long (a step budget spent, a risky pattern)."""


class _Budget:
    __slots__ = ("deadline", "extra", "left", "limit")

    def __init__(self, extra: Callable[[], int], deadline: Deadline | None) -> None:
        # The allowance per JSON value is added only when the base is spent: counting the
        # values of a large one costs its size, which most validations need not pay.
        self.extra: Callable[[], int] | None = extra
        self.limit = self.left = STEPS_BASE
        self.deadline = deadline if deadline is not None and deadline.limited else None

    def step(self) -> None:
        self.left -= 1
        if self.left < 0:
            if self.extra is None:
                raise TooCostly(
                    f"the schema applied more than {self.limit:,} keywords to the value"
                )
            more, self.extra = self.extra(), None
            self.limit += more
            self.left += more
        if self.deadline is not None and not self.left & _MASK:
            self.deadline.check()


_BUDGET: ContextVar[_Budget | None] = ContextVar("llmfix_schema_budget", default=None)


def allowance(value: Any) -> int:
    """The steps a validation of ``value`` may take past :data:`STEPS_BASE`."""
    count, stack = 0, [value]
    while stack:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return STEPS_PER_VALUE * count


@contextmanager
def steps(extra: Callable[[], int], deadline: Deadline | None = None) -> Iterator[None]:
    """Count the keywords bounded validators apply in this block: :data:`STEPS_BASE`, then
    ``extra()`` more (asked once, when the base is spent); past them, :class:`TooCostly`."""
    token = _BUDGET.set(_Budget(extra, deadline))
    try:
        yield
    finally:
        _BUDGET.reset(token)


# --- patterns ----------------------------------------------------------------------------------

_parser: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})


def _children(argument: Any) -> Iterator[Any]:
    """The parsed subpatterns inside one node's argument."""
    if isinstance(argument, _parser.SubPattern):
        yield argument
    elif isinstance(argument, (tuple, list)):
        for part in argument:
            yield from _children(part)


def _holds_choice(subpattern: Any) -> bool:
    """Whether a parsed pattern repeats something or branches (or refers back)."""
    stack = [subpattern]
    while stack:
        for op, argument in stack.pop():
            name = str(op)
            if name in _REPEATS and argument[1] > 1:
                return True
            if name in ("BRANCH", "GROUPREF", "GROUPREF_EXISTS"):
                return True
            stack.extend(_children(argument))
    return False


@functools.lru_cache(maxsize=1024)
def pattern_is_risky(pattern: str) -> bool:
    """Whether :mod:`re` may backtrack on ``pattern`` for ever: a repetition of something
    that itself repeats or branches (``(a+)+``, ``(a|aa)*``), or a backreference.
    A pattern :mod:`re` cannot parse is not risky here (compiling it fails anyway)."""
    try:
        parsed = _parser.parse(pattern)
    except Exception:
        return False
    stack = [parsed]
    while stack:
        for op, argument in stack.pop():
            name = str(op)
            if name in ("GROUPREF", "GROUPREF_EXISTS"):
                return True
            if name in _REPEATS and argument[1] > 1 and _holds_choice(argument[2]):
                return True
            stack.extend(_children(argument))
    return False


@functools.lru_cache(maxsize=256)
def _linear_matcher(pattern: str) -> Callable[[str], bool] | None:
    """``pattern`` on jsonschema-rs's regex engine (a search, as JSON Schema means it)."""
    try:
        import jsonschema_rs

        compiled = jsonschema_rs.Draft202012Validator({"pattern": pattern})
    except Exception:  # ECMA-262 cannot read it, or jsonschema-rs is missing
        return None
    return lambda text: bool(compiled.is_valid(text))


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, in time linear in the text for a
    pattern :mod:`re` could backtrack on; :class:`TooCostly` when that cannot be done."""
    if not pattern_is_risky(pattern):
        return re.search(pattern, text) is not None
    matcher = _linear_matcher(pattern)
    if matcher is None:
        raise TooCostly(
            f"the pattern {pattern[:80]!r} could take exponential time, and the linear-time "
            "regex engine cannot read it"
        )
    try:
        return matcher(text)
    except Exception as error:  # its backtrack limit, on lookaround or backreferences
        raise TooCostly(f"the pattern {pattern[:80]!r} took too many steps") from error


# --- the validator class -------------------------------------------------------------------------


def _counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def apply(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = _BUDGET.get()
        if budget is not None:
            budget.step()
        return keyword(validator, value, instance, schema)

    return apply


def _type(validator: Any, types: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``type``, whose message shows at most 80 characters of the value: a
    full repr of a large value costs its size at every place it has the wrong type (the
    diagnostics llmfix writes do not use that message)."""
    from jsonschema.exceptions import ValidationError

    names = [types] if isinstance(types, str) else types
    if not any(validator.is_type(instance, name) for name in names):
        shown = (
            reprlib.repr(instance) if isinstance(instance, (dict, list, str)) else repr(instance)
        )
        expected = ", ".join(repr(name) for name in names)
        yield ValidationError(f"{shown} is not of type {expected}")


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``pattern``, through :func:`search` (same error message)."""
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_BOUNDED: dict[Any, Any] = {}


def bounded_class(cls: Any) -> Any:
    """``cls`` with every keyword counted and ``pattern`` made safe; a subschema that
    switches dialect (``$schema``) gets the bounded class of that dialect too."""
    if getattr(cls, "_llmfix_bounded", False):
        return cls
    found = _BOUNDED.get(cls)
    if found is None:
        from jsonschema import _keywords, validators

        keywords = {name: _counted(function) for name, function in cls.VALIDATORS.items()}
        if "pattern" in keywords:
            keywords["pattern"] = _counted(_pattern)
        if cls.VALIDATORS.get("type") is _keywords.type:  # not draft 3's, which differs
            keywords["type"] = _counted(_type)
        extend: Any = validators.extend  # untyped in jsonschema's stubs
        found = extend(cls, keywords)
        found._llmfix_bounded = True
        found.evolve = _evolve
        _BOUNDED[cls] = found
    return found


def _evolve(self: Any, **changes: Any) -> Any:
    """A copy of the validator with ``changes``, of the bounded class of the schema's
    dialect (jsonschema's own evolve would switch to an unbounded class on ``$schema``)."""
    import attrs
    from jsonschema import validators

    schema = changes.setdefault("schema", self.schema)
    new_class = bounded_class(validators.validator_for(schema, default=type(self)))
    for field in attrs.fields(type(self)):
        if field.init and field.alias not in changes:
            changes[field.alias] = getattr(self, field.name)
    return new_class(**changes)
