"""Turn a piece of text into the value a (sub)schema wants: the readers' shared last step.

Types are made only where the text says so plainly (``**Update**`` → the member ``Update``,
``1,200`` → 1200 for an integer, a bullet list for an array, JSON text for an object);
everything else stays a string, and schema repair (which reports each change) does the rest.
"""

from __future__ import annotations

import json
from typing import Any

from llmfix.deadline import CHECK_EVERY, Deadline
from llmfix.guided import shape
from llmfix.guided.lists import item_value, read_lists
from llmfix.guided.reading import NEVER


def text_value(text: str, schema: Any, root: Any, deadline: Deadline = NEVER) -> Any:
    """The value ``text`` (one field of a YAML-less format) stands for under ``schema``."""
    s = text.strip()
    if shape.wants(schema, root, "array") or shape.wants(schema, root, "object"):
        if s[:1] in ("[", "{"):
            try:
                return json.loads(s)
            except ValueError:
                pass
        if shape.wants(schema, root, "array"):
            found = read_lists(s, 0, schema, root, deadline)
            if found is not None:
                return found.value
    if shape.wants(schema, root, "null") and s.casefold() in ("null", "none", ""):
        return None
    return item_value(s, schema, root, deadline) if s else s


_MAX_NODES = 300_000


def plain_json(value: Any, deadline: Deadline = NEVER) -> Any:
    """A YAML value made JSON: dates to ISO text, non-string keys to text, sets to lists.

    Raises ``ValueError`` past 300,000 values (YAML aliases can make a small text stand
    for an exponentially large value) or 200 levels of nesting, and
    :class:`~llmfix.deadline.OutOfTime` when ``deadline`` passes (checked every
    :data:`~llmfix.deadline.CHECK_EVERY` values).
    """
    budget = [_MAX_NODES]
    return _plain(value, 0, budget, deadline)


def _plain(value: Any, depth: int, budget: list[int], deadline: Deadline) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > 200:
        raise ValueError("YAML value too large or too deep")
    if not budget[0] & (CHECK_EVERY - 1):
        deadline.check()
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1, budget, deadline) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v, depth + 1, budget, deadline) for v in value]
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    iso = getattr(value, "isoformat", None)
    if callable(iso):
        return str(iso())
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
