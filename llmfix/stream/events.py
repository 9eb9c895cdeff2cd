"""What a stream shows: :class:`Event` objects, and the snapshots they build when read.

A snapshot is a :class:`View` of the live containers (their lengths at that moment), copied
out only when an event's ``value`` is read; ``missing`` lists the schema's required
properties the snapshot lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from typing import Any, Literal

from llmfix.model import Diagnostic

EventKind = Literal["text", "reasoning", "value", "arguments", "tool_call", "stopped"]
NOTHING = object()


class View:
    """What a snapshot shows: the open containers with their lengths at that moment.

    Containers only grow at their end and completed members never change, so the live
    containers plus their lengths then are the snapshot; it is copied out only when read.
    """

    __slots__ = ("levels", "tail")

    def __init__(
        self, levels: tuple[tuple[Any, int], ...], tail: tuple[str | None, str] | None
    ) -> None:
        self.levels = levels
        self.tail = tail

    def build(self) -> Any:
        child: Any = NOTHING
        for depth in range(len(self.levels) - 1, -1, -1):
            container, length = self.levels[depth]
            tail = self.tail if depth == len(self.levels) - 1 else None
            if isinstance(container, dict):
                items = list(islice(container.items(), length))
                if child is not NOTHING:
                    items[-1] = (items[-1][0], child)
                out: Any = dict(items)
                if tail is not None and tail[0] is not None:
                    out[tail[0]] = tail[1]
            else:
                out = container[:length]
                if child is not NOTHING:
                    out[-1] = child
                if tail is not None:
                    out.append(tail[1])
            child = out
        return child


class Event:
    """One thing the stream showed: prose, reasoning, a snapshot, or a released tool call.

    ``kind`` is ``text``/``reasoning`` (``text`` holds the new characters), ``value`` (a
    snapshot of the ``index``-th JSON value of the answer; ``complete`` once it closed),
    ``arguments`` (a snapshot of tool call ``index``'s arguments, ``name`` its tool),
    ``tool_call`` (call ``index``, complete and valid: ``call`` is the canonical
    ``{"id", "name", "arguments"}``) or ``stopped``. ``diagnostics`` are the repairs and
    findings so far; ``missing`` the JSON Pointers of required properties not there yet
    (with a schema). Snapshot values are shared with later snapshots: treat them as
    read-only.
    """

    __slots__ = (
        "_diagnostics",
        "_missing",
        "_noted",
        "_schema",
        "_value",
        "_view",
        "call",
        "complete",
        "index",
        "kind",
        "name",
        "repairs",
        "text",
    )

    def __init__(
        self,
        kind: EventKind,
        *,
        index: int = 0,
        text: str | None = None,
        complete: bool = False,
        view: View | None = None,
        call: dict[str, Any] | None = None,
        name: str | None = None,
        diagnostics: tuple[Diagnostic, ...] | list[Diagnostic] = (),
        schema: Any = None,
        noted: int | None = None,
        repairs: tuple[str, ...] = (),
    ) -> None:
        self.kind = kind
        self.index = index
        self.text = text
        self.complete = complete
        self.call = call
        self.name = name
        # The parser's own list, of which this event saw the first ``noted``: copied only
        # when read, so that a long stream's events do not each copy every repair so far.
        self._diagnostics = diagnostics
        self._noted = len(diagnostics) if noted is None else noted
        self.repairs = repairs  # the codes of the repairs so far, sorted
        self._view = view
        self._schema = schema
        self._value: Any = NOTHING
        self._missing: list[str] | None = None

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """The repairs and findings of the stream up to this event."""
        return tuple(self._diagnostics[: self._noted])

    @property
    def value(self) -> Any:
        """The snapshot (``None`` for events that carry none)."""
        if self._value is NOTHING:
            self._value = self._view.build() if self._view is not None else None
        return self._value

    @property
    def missing(self) -> list[str]:
        """JSON Pointers of the schema's required properties that the snapshot lacks."""
        if self._missing is None:
            self._missing = []
            if self._schema is not None and self._view is not None:
                missing_required(self._schema, self._schema, self.value, "", self._missing, 0)
        return self._missing

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.kind, "index": self.index}
        if self.kind in ("text", "reasoning"):
            out["text"] = self.text
        if self.name is not None:
            out["name"] = self.name
        if self.kind in ("value", "arguments"):
            out["complete"] = self.complete
            out["value"] = self.value
            if self._schema is not None:
                out["missing"] = self.missing
        if self.call is not None:
            out["call"] = self.call
        if self.kind == "stopped":
            out["diagnostics"] = [d.to_dict() for d in self.diagnostics]
        elif self.kind in ("value", "arguments"):
            out["repairs"] = list(self.repairs)
        return out

    def __repr__(self) -> str:
        return f"Event({self.kind!r}, index={self.index}, complete={self.complete})"


def _resolve_ref(root: Any, schema: Any) -> Any:
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        target: Any = root
        for token in ref[1:].split("/")[1:] if ref != "#" else []:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and token in target:
                target = target[token]
            else:
                return schema
        schema = target
        seen += 1
    return schema


def missing_required(
    root: Any, schema: Any, value: Any, pointer: str, out: list[str], depth: int
) -> None:
    schema = _resolve_ref(root, schema)
    if not isinstance(schema, Mapping) or depth > 64:
        return
    for part in schema.get("allOf") or ():
        missing_required(root, part, value, pointer, out, depth + 1)
    if isinstance(value, dict):
        for name in schema.get("required") or ():
            if isinstance(name, str) and name not in value:
                out.append(f"{pointer}/{name.replace('~', '~0').replace('/', '~1')}")
        properties = schema.get("properties") or {}
        for key, member in value.items():
            if key in properties:
                escaped = key.replace("~", "~0").replace("/", "~1")
                missing_required(
                    root, properties[key], member, f"{pointer}/{escaped}", out, depth + 1
                )
    elif isinstance(value, list):
        items = schema.get("items")
        prefix = schema.get("prefixItems") or ()
        for k, member in enumerate(value):
            sub = prefix[k] if k < len(prefix) else items
            if sub is not None:
                missing_required(root, sub, member, f"{pointer}/{k}", out, depth + 1)
