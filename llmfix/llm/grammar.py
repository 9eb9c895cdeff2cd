"""A grammar for the rest of a cut-off answer: what the model may write after the prefix.

A continuation asked without a constraint may go on past where the value could close (a
model keeps adding array items until the token limit) or, when the prefix ends inside a
word, start from a piece of a token it would never have chosen. llama.cpp's servers take a
GBNF ``grammar`` with a chat request; :func:`continuation_grammar` builds one from the
prefix's state and the schema:

- what is open where the prefix stops: a key, a string, a number or a literal being
  written, the stack of objects and arrays, the keys each object already holds;
- what the schema still asks: the properties not yet written (the required ones must come,
  the optional ones may, in the schema's order; no other key), enums and consts, types,
  and the item counts (``minItems``/``maxItems``);
- nothing after the value closes, so generation ends there.

It does what the continuation prompt asks (finish the value being written, add only what
the schema still requires, close every open bracket): an object or array the prefix
opened gets no more members than the schema requires, so a model cannot loop inside it.
A value the continuation starts afresh (a required property not yet written) is shaped by
its schema, with at most :data:`FRESH_ITEMS` items in an array the schema leaves open.
Where the schema is one this does not follow (``allOf``, ``not``, a remote ``$ref``, or
past :data:`MAX_DEPTH` levels), that value is any JSON value; a grammar larger than
:data:`MAX_GRAMMAR_CHARS` is replaced by the schema-free one.

**Token healing.** When the prefix stops inside a key, a string, a number or a literal, the
prefill is moved back to a boundary a tokenizer does not split (the start of that word or
token, with the space or quote before it), and the grammar begins with the dropped text:
the model chooses its own tokens for it, and the join still holds every written character.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# Items an array may get when the continuation writes it afresh and its schema sets no
# maxItems (at least minItems): a cut-off answer's arrays are closed soon, not filled.
FRESH_ITEMS = 8
# Schema levels followed below the prefix's innermost value; deeper values are any JSON.
MAX_DEPTH = 8
# A grammar longer than this (characters) is replaced by the schema-free one.
MAX_GRAMMAR_CHARS = 24_000
# Enum members offered one by one; a longer enum is any value of its type.
MAX_ENUM = 64
# The longest word the prefill is moved back over; a longer one is not healed.
MAX_HEAL = 48

# The start of a JSON number (what a number cut anywhere looks like).
_NUMBER_START = re.compile(
    r"-?(?:(?:0|[1-9][0-9]*)(?:\.(?:[0-9]+(?:[eE][-+]?[0-9]*)?)?|[eE][-+]?[0-9]*)?)?"
)

_WS = "ws"
_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )'
_BASE_RULES = {
    "ws": r'( " " | "\n" [ \t]{0,40} )?',
    "char": _CHAR,
    "string": r'"\"" char* "\""',
    "number": r'"-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,4} )?',
    "integer": r'"-"? ( "0" | [1-9] [0-9]{0,15} )',
    "boolean": r'"true" | "false"',
    "null": r'"null"',
    "value": r'object | array | string | number | "true" | "false" | "null"',
    "object": r'"{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* ws )? "}"',
    "array": r'"[" ws ( value ( ws "," ws value )* ws )? "]"',
}
# Which base rules each needs (rendered only when used).
_NEEDS = {
    "string": ("char",),
    "value": ("object", "array", "string", "number"),
    "object": ("ws", "string", "value"),
    "array": ("ws", "value"),
}
_TYPE_RULES = {
    "string": "string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "null": "null",
    "object": "object",
    "array": "array",
}


@dataclass(frozen=True)
class ContinuationGrammar:
    """What to send for a constrained continuation: ``prefill`` (the prefix, or less of it
    when healed) and ``text``, the GBNF grammar of what follows it, starting with
    ``healed`` (the prefix's characters the prefill left out). ``from_schema`` is False
    when the schema was not followed (none given, or too large a grammar)."""

    prefill: str
    healed: str
    text: str
    from_schema: bool


class _Unreadable(Exception):
    """The prefix is not the start of one strict JSON value: no grammar is built."""


class _TooLarge(Exception):
    """The grammar grew past :data:`MAX_GRAMMAR_CHARS` while it was built."""


@dataclass
class _Frame:
    kind: str  # "object" or "array"
    node: Any  # its schema (resolved), or None when not known
    state: str  # object: key, key!, colon, value, after; array: first, item, after
    keys: list[str] = field(default_factory=list)
    key: str = ""  # the key whose value is being written (objects)
    count: int = 0  # items complete (arrays)


@dataclass
class _Token:
    kind: str  # "string", "key", "number", "literal"
    start: int  # where it starts in the prefix (the quote, the sign or the first character)
    text: str = ""  # for strings: the content as written (escapes not decoded)


def continuation_grammar(prefix: str, schema: Any = None) -> ContinuationGrammar | None:
    """The grammar of the rest of ``prefix`` (the start of a JSON value, cut off), following
    ``schema`` where it can; ``None`` when the prefix is not the start of one strict JSON
    value (a comment, a single quote, a value already whole)."""
    try:
        stack, token, whole = _scan(prefix, schema)
    except _Unreadable:
        return None
    if whole:
        return None
    cut = _heal_at(prefix, token)
    healed = prefix[cut:]
    for follow in dict.fromkeys((schema is not None, False)):
        builder = _Builder(schema if follow else None)
        try:
            rest = builder.rest(stack, token)
        except _TooLarge:
            continue
        body = _seq(_literal(healed) if healed else "", rest)
        text = builder.render(body)
        if len(text) <= MAX_GRAMMAR_CHARS:
            return ContinuationGrammar(prefix[:cut], healed, text, follow)
    return None


# ------------------------------------------------------------------------- the prefix


def _scan(text: str, schema: Any) -> tuple[list[_Frame], _Token | None, bool]:
    """The open containers, the token being written at the end, and whether the value
    closed (then there is nothing to continue)."""
    resolver = _Resolver(schema)
    stack: list[_Frame] = []
    token: _Token | None = None
    started = False
    escape = ""  # inside a string: "" or the escape written so far ("\\", "\\u12")
    i = 0
    while i < len(text):
        ch = text[i]
        if token is not None and token.kind in ("string", "key"):
            if escape:
                escape += ch
                if escape[1] == "u":
                    if ch not in "0123456789abcdefABCDEF" and len(escape) > 2:
                        raise _Unreadable
                    if len(escape) == 6:
                        escape = ""
                elif ch in '"\\/bfnrt':
                    escape = ""
                elif ch != "u":
                    raise _Unreadable
            elif ch == "\\":
                escape = "\\"
            elif ch == '"':
                if token.kind == "key":
                    owner = stack[-1]
                    owner.key = json.loads(text[token.start : i + 1])
                    owner.state = "colon"
                    token = None
                else:
                    token = None
                    if _value_done(stack):
                        return stack, None, True
                i += 1
                continue
            elif ord(ch) < 0x20:
                raise _Unreadable
            i += 1
            continue
        if token is not None:  # a number or a literal
            if (token.kind == "number" and ch in "0123456789+-.eE") or (
                token.kind == "literal" and ch.isalpha()
            ):
                i += 1
                continue
            _check_scalar(text[token.start : i])
            token = None
            if _value_done(stack):
                return stack, None, True
        if ch in " \t\r\n":
            i += 1
            continue
        frame = stack[-1] if stack else None
        wants_value = (frame is None and not started) or (
            frame is not None and frame.state in ("value", "first", "item")
        )
        if frame is not None and frame.kind == "array" and frame.state == "first" and ch == "]":
            stack.pop()
            if _value_done(stack):
                return stack, None, True
        elif wants_value:
            started = True
            node = resolver.child(frame) if frame is not None else resolver.resolve(schema)
            if ch == "{":
                stack.append(_Frame("object", node, "key"))
            elif ch == "[":
                stack.append(_Frame("array", node, "first"))
            elif ch == '"':
                token = _Token("string", i)
            elif ch == "-" or ch.isdigit():
                token = _Token("number", i)
            elif ch in "tfn":
                token = _Token("literal", i)
            else:
                raise _Unreadable
        elif frame is None:
            raise _Unreadable
        elif frame.kind == "object" and frame.state in ("key", "key!") and ch == '"':
            token = _Token("key", i)
        elif frame.kind == "object" and frame.state == "key" and ch == "}":
            stack.pop()
            if _value_done(stack):
                return stack, None, True
        elif frame.state == "colon" and ch == ":":
            frame.state = "value"
        elif frame.state == "after" and ch == ",":
            frame.state = "key!" if frame.kind == "object" else "item"
        elif frame.state == "after" and ch == ("}" if frame.kind == "object" else "]"):
            stack.pop()
            if _value_done(stack):
                return stack, None, True
        else:
            raise _Unreadable
        i += 1
    if token is not None:
        quoted = token.kind in ("string", "key")
        token.text = text[token.start + (1 if quoted else 0) :]
        if token.kind == "literal" and not any(
            w.startswith(token.text) for w in ("true", "false", "null")
        ):
            raise _Unreadable
        if token.kind == "number" and not _NUMBER_START.fullmatch(token.text):
            raise _Unreadable
    if not stack and token is None:
        raise _Unreadable
    return stack, token, False


def _check_scalar(text: str) -> None:
    try:
        json.loads(text)
    except ValueError:
        raise _Unreadable from None


def _value_done(stack: list[_Frame]) -> bool:
    """A value closed: the frame holding it moves on. True when it was the root."""
    if not stack:
        return True
    frame = stack[-1]
    if frame.kind == "object":
        frame.keys.append(frame.key)
    else:
        frame.count += 1
    frame.state = "after"
    return False


class _Resolver:
    """Schema nodes by position: a property's, an item's, with local ``$ref`` followed."""

    def __init__(self, root: Any) -> None:
        self.root = root

    def resolve(self, node: Any, depth: int = 0) -> Any:
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 16:
            node = _pointer(self.root, node["$ref"])
            depth += 1
        return node if isinstance(node, dict) else None

    def child(self, frame: _Frame) -> Any:
        node = frame.node
        if node is None:
            return None
        if frame.kind == "object":
            props = node.get("properties")
            if isinstance(props, dict) and frame.key in props:
                return self.resolve(props[frame.key])
            extra = node.get("additionalProperties")
            return self.resolve(extra) if isinstance(extra, dict) else None
        prefix_items = node.get("prefixItems")
        if isinstance(prefix_items, list) and frame.count < len(prefix_items):
            return self.resolve(prefix_items[frame.count])
        return self.resolve(node.get("items"))


def _pointer(root: Any, ref: str) -> Any:
    """The node a local JSON Pointer reference names, or None."""
    if not ref.startswith("#"):
        return None
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


# ------------------------------------------------------------------------- token healing


def _heal_at(text: str, token: _Token | None) -> int:
    """Where the prefill stops: the end of ``text``, or, when it stops inside a token, the
    start of the word being written there with the space or quote before it (and the
    whitespace before a key, value or number that starts there)."""
    if token is None:
        return len(text)
    if token.kind in ("number", "literal"):
        return _before_space(text, token.start)
    content_start = token.start + 1
    at = len(text)
    while at > content_start and (text[at - 1].isalnum() or text[at - 1] == "_"):
        at -= 1
    while at > content_start and text[at - 1] == " ":
        at -= 1
    backslashes = 0
    while at - backslashes - 1 >= content_start and text[at - backslashes - 1] == "\\":
        backslashes += 1
    if backslashes % 2:
        at -= 1  # the word starts with an escape's letter (\n, \u00e9): keep it whole
    if at == content_start:
        at = _before_space(text, token.start)
    if len(text) - at > MAX_HEAL:
        return len(text)
    return at


def _before_space(text: str, at: int) -> int:
    while at > 0 and text[at - 1] in " \t\r\n":
        at -= 1
    return at


# ------------------------------------------------------------------------- the grammar


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = []
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _json_literal(value: Any) -> str:
    return _literal(json.dumps(value, ensure_ascii=False))


class _Builder:
    """The rules of one grammar, each value shape written once."""

    def __init__(self, schema: Any) -> None:
        self.resolver = _Resolver(schema)
        self.follow = schema is not None
        self.rules: dict[str, str] = {}
        self.used: set[str] = {_WS}
        self.named: dict[tuple[int, int], str] = {}
        self.size = 0  # characters of the rules so far: past MAX_GRAMMAR_CHARS, _TooLarge

    def _grow(self, text: str) -> str:
        self.size += len(text)
        if self.size > MAX_GRAMMAR_CHARS:
            raise _TooLarge
        return text

    def render(self, root: str) -> str:
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()]
        done: set[str] = set()
        todo = sorted(self.used)
        while todo:
            name = todo.pop()
            if name in done:
                continue
            done.add(name)
            lines.append(f"{name} ::= {_BASE_RULES[name]}")
            todo.extend(_NEEDS.get(name, ()))
        return "\n".join(lines) + "\n"

    def base(self, name: str) -> str:
        self.used.add(name)
        return name

    def _new(self, body: str) -> str:
        name = f"r{len(self.rules) + 1}"
        self.rules[name] = self._grow(body)
        return name

    # -- a whole value of a schema node

    def value(self, node: Any, depth: int) -> str:
        node = self.resolver.resolve(node) if self.follow else None
        if node is None or depth > MAX_DEPTH:
            return self.base("value")
        key = (id(node), depth)
        if key in self.named:
            return self.named[key]
        name = f"r{len(self.rules) + 1}"
        self.rules[name] = ""  # reserved: a recursive schema refers to it
        self.named[key] = name
        self.rules[name] = self._grow(self._shape(node, depth))
        return name

    def _shape(self, node: dict[str, Any], depth: int) -> str:
        if "const" in node:
            return _json_literal(node["const"])
        if "enum" in node:
            members = node["enum"]
            if isinstance(members, list) and 0 < len(members) <= MAX_ENUM:
                return " | ".join(_json_literal(m) for m in members)
            return self.base("value")
        for key in ("anyOf", "oneOf"):
            options = node.get(key)
            if isinstance(options, list) and options and not _has_unfollowed(node, key):
                return " | ".join(self.value(o, depth + 1) for o in options)
        if _has_unfollowed(node, None):
            return self.base("value")
        kinds = node.get("type")
        if isinstance(kinds, list):
            kinds = [k for k in kinds if isinstance(k, str)]
            if not kinds:
                return self.base("value")
            return " | ".join(self._typed(node, k, depth) for k in kinds)
        if kinds is None:
            if isinstance(node.get("properties"), dict):
                kinds = "object"
            elif "items" in node or "prefixItems" in node:
                kinds = "array"
            else:
                return self.base("value")
        return self._typed(node, str(kinds), depth)

    def _typed(self, node: dict[str, Any], kind: str, depth: int) -> str:
        if kind == "object":
            props = _properties(node, [])
            if props is None:
                return self.base("object")
            return '"{" ws ' + self._members(props, depth, opened=True) + ' ws "}"'
        if kind == "array":
            if not isinstance(node.get("items"), (dict, bool)) or "prefixItems" in node:
                return self.base("array")
            low, high = _counts(node, 0, fresh=True)
            item = self.value(node.get("items"), depth + 1)
            if high == 0:
                return '"[" ws "]"'
            more = _repeat(f'ws "," ws {item}', max(0, low - 1), high - 1)
            inner = _seq(item, more, "ws")
            return f'"[" ws {inner} "]"' if low else f'"[" ws ( {inner} )? "]"'
        rule = _TYPE_RULES.get(kind)
        return self.base(rule) if rule else self.base("value")

    def _members(self, props: list[tuple[str, bool, Any]], depth: int, *, opened: bool) -> str:
        """The members of an object from where a key may come (after ``{`` when
        ``opened``, else after a comma: one must come), in order, the required ones
        always, up to where the object may close (the close itself not included)."""
        if not props:
            return "" if opened else self._any_member()
        firsts = []
        for at in range(len(props)):
            name, required, node = props[at]
            member = f'{_json_literal(name)} ws ":" ws {self.value(node, depth + 1)}'
            firsts.append(self._grow(_seq(member, self._after(props[at + 1 :], depth))))
            if required:
                break
        body = " | ".join(f"( {f} )" for f in firsts)
        if opened and all(not required for _, required, _ in props):
            return f"( {body} )?"
        return f"( {body} )"

    def _after(self, props: list[tuple[str, bool, Any]], depth: int) -> str:
        """The members that may follow a value, each with its leading comma."""
        parts = []
        for name, required, node in props:
            member = f'ws "," ws {_json_literal(name)} ws ":" ws {self.value(node, depth + 1)}'
            parts.append(self._grow(member if required else f"( {member} )?"))
        if not parts:
            return ""
        return self._new(" ".join(parts)) if len(parts) > 1 else parts[0]

    def _any_member(self) -> str:
        return f'{self.base("string")} ws ":" ws {self.base("value")}'

    # -- the rest of the prefix

    def rest(self, stack: list[_Frame], token: _Token | None) -> str:
        """What may follow the prefix: the rest of the token at the end, of the innermost
        container, and then of each one around it."""
        parts: list[str] = []
        inner = True
        for frame in reversed(stack):
            parts.append(self._frame_rest(frame, token if inner else None, inner))
            inner = False
        if not stack and token is not None:  # a scalar at the root
            parts.append(self._token_rest(token, self.resolver.resolve(self.resolver.root)))
        return _seq(*parts)

    def _frame_rest(self, frame: _Frame, token: _Token | None, inner: bool) -> str:
        node = frame.node if self.follow else None
        depth = 0
        if frame.kind == "object":
            state = frame.state if inner else "after"
            keys = frame.keys if inner or not frame.key else [*frame.keys, frame.key]
            props = _properties(node, keys) if node is not None else []
            if props is None:
                props = []
            if state == "key" and token is None:
                return _seq("ws", self._members(props, depth, opened=True), 'ws "}"')
            if state in ("key", "key!") and token is not None:  # inside a key
                return _seq(self._key_rest(token, props, node), 'ws "}"')
            if state == "key!":
                return _seq("ws", self._members(props, depth, opened=False), 'ws "}"')
            if state == "after":
                return _seq(self._after(props, depth), 'ws "}"')
            child = self.resolver.child(frame) if self.follow else None
            after = self._after(_properties(node, [*keys, frame.key]) or [], depth)
            if state == "colon":
                head = f'ws ":" ws {self.value(child, depth + 1)}'
            elif token is not None:
                head = self._token_rest(token, child)
            else:
                head = f"ws {self.value(child, depth + 1)}"
            return _seq(head, after, 'ws "}"')
        # an array
        state = frame.state if inner else "after"
        count = frame.count if inner else frame.count + 1
        item = (
            self.resolver.resolve(node.get("items"))
            if node is not None and not isinstance(node.get("prefixItems"), list)
            else None
        )
        item_rule = self.value(item, depth + 1) if node is not None else self.base("value")
        if state == "first" and token is None:
            low, high = _counts(node, 0, fresh=True)
            if high == 0:
                return 'ws "]"'
            more = _repeat(f'ws "," ws {item_rule}', max(0, low - 1), high - 1)
            inner_text = _seq("ws", item_rule, more)
            return _seq(f"( {inner_text} )?" if not low else inner_text, 'ws "]"')
        if state in ("first", "item") and token is not None:
            head = self._token_rest(token, self.resolver.child(frame) if self.follow else None)
            count += 1
        elif state == "item":
            head = f"ws {item_rule}"
            count += 1
        else:
            head = ""
        low, high = _counts(node, count, fresh=False)
        return _seq(head, _repeat(f'ws "," ws {item_rule}', low, high), 'ws "]"')

    def _key_rest(self, token: _Token, props: list[tuple[str, bool, Any]], node: Any) -> str:
        """The rest of a key being written, then its value and the members after it."""
        written = token.text
        options = []
        for at, (name, _, child) in enumerate(props):
            quoted = json.dumps(name, ensure_ascii=False)[1:]
            if quoted.startswith(written) and len(quoted) > len(written):
                others = props[:at] + props[at + 1 :]
                value = self.value(child, 1)
                end = _literal(quoted[len(written) :])
                options.append(_seq(end, 'ws ":" ws', value, self._after(others, 0)))
        if options:
            return "( " + " | ".join(f"( {o} )" for o in options) + " )"
        rest = self._string_rest(written)
        return _seq(rest, 'ws ":" ws', self.base("value"), self._after(props, 0))

    def _token_rest(self, token: _Token, node: Any) -> str:
        """The rest of the string, number or literal being written at the prefix's end."""
        node = node if self.follow else None
        if token.kind == "string":
            members = node.get("enum") if isinstance(node, dict) else None
            if isinstance(node, dict) and "const" in node:
                members = [node["const"]]
            if isinstance(members, list):
                ends = []
                for m in members:
                    if isinstance(m, str):
                        quoted = json.dumps(m, ensure_ascii=False)[1:]
                        if quoted.startswith(token.text) and len(quoted) > len(token.text):
                            ends.append(_literal(quoted[len(token.text) :]))
                if ends:
                    return "( " + " | ".join(ends) + " )"
            return self._string_rest(token.text)
        if token.kind == "literal":
            for word in ("true", "false", "null"):
                if word.startswith(token.text):
                    return _literal(word[len(token.text) :]) if word != token.text else ""
            return ""
        integer = isinstance(node, dict) and node.get("type") == "integer"
        return _number_rest(token.text, integer=integer)

    def _string_rest(self, written: str) -> str:
        """The rest of a string whose content so far is ``written`` (maybe ending inside
        an escape)."""
        self.used.add("char")
        tail = written[written.rfind("\\") :] if "\\" in written else ""
        backslashes = len(written) - len(written.rstrip("\\"))
        if backslashes % 2:
            return r'( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) char* "\""'
        if (
            tail.startswith("\\u")
            and len(tail) < 6
            and _odd_escape(written, len(written) - len(tail))
        ):
            return f'[0-9a-fA-F]{{{6 - len(tail)}}} char* "\\""'
        return 'char* "\\""'


def _odd_escape(text: str, at: int) -> bool:
    """Whether the backslash at ``at`` starts an escape (an odd run of backslashes)."""
    run = 0
    while at - run >= 0 and text[at - run] == "\\":
        run += 1
    return run % 2 == 1


def _number_rest(written: str, *, integer: bool) -> str:
    """What may follow ``written``, the start of a JSON number (no fraction or exponent
    when the schema asks for an integer and none is written yet)."""
    frac = "" if integer else '( "." [0-9]{1,16} )?'
    exp = "" if integer else "( [eE] [-+]? [0-9]{1,4} )?"
    digits = written.lstrip("-")
    if not digits:
        return f'( "0" | [1-9] [0-9]{{0,15}} ) {frac} {exp}'.strip()
    if "e" in digits.lower():
        tail = digits.lower().split("e", 1)[1]
        if tail in ("", "+", "-"):
            return "[0-9]{1,4}" if tail else "[-+]? [0-9]{1,4}"
        return "[0-9]{0,3}"
    if "." in digits:
        return f"[0-9]{{{0 if digits[-1] != '.' else 1},16}} {exp}".strip()
    more = "" if digits.startswith("0") else "[0-9]{0,15} "
    return f"{more}{frac} {exp}".strip()


def _seq(*parts: str) -> str:
    """GBNF parts in sequence (the empty ones left out)."""
    return " ".join(p for p in parts if p)


def _has_unfollowed(node: dict[str, Any], besides: str | None) -> bool:
    """Whether ``node`` uses a keyword this grammar cannot follow (then: any value)."""
    hard = {"allOf", "not", "if", "then", "else", "oneOf", "anyOf", "$dynamicRef"}
    hard.discard(besides or "")
    return bool(hard & node.keys())


def _properties(node: Any, written: list[str]) -> list[tuple[str, bool, Any]] | None:
    """The properties of an object schema not yet ``written``: (name, required, schema),
    in the schema's order; ``None`` when the schema names none."""
    if not isinstance(node, dict):
        return None
    props = node.get("properties")
    if not isinstance(props, dict) or not props:
        return None
    required = node.get("required")
    needed = set(required) if isinstance(required, list) else set()
    return [(k, k in needed, v) for k, v in props.items() if k not in written]


def _counts(node: Any, count: int, *, fresh: bool) -> tuple[int, int]:
    """How many more items an array holding ``count`` may get: at least what ``minItems``
    asks; at most that (an array the prefix opened closes as soon as it may), or, when
    the continuation writes it afresh, :data:`FRESH_ITEMS` (never past ``maxItems``)."""
    low = high = 0
    if isinstance(node, dict):
        low = _count(node.get("minItems"), 0)
        high = _count(node.get("maxItems"), 1 << 30)
    else:
        high = 1 << 30
    need = max(0, low - count)
    room = max(need, FRESH_ITEMS) if fresh else need
    return need, max(0, min(room, high - count))


def _count(value: Any, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return default


def _repeat(part: str, low: int, high: int) -> str:
    """``part`` between ``low`` and ``high`` times, in GBNF."""
    if high <= 0:
        return ""
    if low == high == 1:
        return part
    if low == high:
        return f"( {part} ){{{low}}}"
    return f"( {part} ){{{low},{high}}}"
