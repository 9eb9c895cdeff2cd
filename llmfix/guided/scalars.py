"""Scalar targets read from text: booleans, numbers, enum/const members, strings.

Each reader first looks at the whole answer (trimmed, without one fence and enclosing
emphasis or quotes): ``**True**``, ``"TWO"``, ``$12,111.``, ``ONE - the first value``. That
reading is ``safe``: the answer is the value, in another notation. Only then does it look
inside prose (``The answer is **True**``), which is a ``guess``; when prose names two
different values and nothing singles one out, it refuses and says which ones competed.

Readings come out in a fixed order (enum/const members, booleans, null, numbers, then the
string), so a schema allowing several types gets the most specific reading first.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from llmfix.deadline import Deadline
from llmfix.guided import shape
from llmfix.guided.reading import (
    NEVER,
    Reading,
    Refusal,
    fold_member,
    strip_wrappers,
    unfence,
)
from llmfix.model import Risk, Span
from llmfix.rules import RULES
from llmfix.schema import walk as sw

# A yes/no word that opens the answer and ends its first clause: "False.", "Yes, it is", "**No** -".
_LEADING_BOOLEAN = re.compile(
    r"[*_`\"']*(true|false|yes|no)[*_`\"']*[ \t]*(?:[.,;:!\n]|[-\u2013\u2014][ \t]|\Z)",
    re.IGNORECASE,
)
_BOOLEANS = {"true": True, "yes": True, "false": False, "no": False}
_NUMBER = re.compile(r"(?<![\w.,/])[-+]?[$€£¥]?\d[\d,]*(?:\.\d+)?(?:\s?%)?(?![\w/])")
_CURRENCY = re.compile(r"\A([-+]?)[$€£¥]\s*")
# What may mark one of several mentioned values as the answer.
_EMPHASIS_BEFORE = ("**", "__", "*", "`", '"', "'", "\u201c")
_ANSWER_CUE = re.compile(r"(?:answer|result|output|verdict|label|choice)\s*(?:is|:)\s*$", re.I)
_MAX_PROSE = 20_000  # characters of prose searched for a mentioned value


def read_scalars(
    text: str, base: int, schema: Any, root: Any, deadline: Deadline = NEVER
) -> tuple[list[Reading], list[Refusal]]:
    """Every scalar reading of ``text`` the schema allows (``base`` = its offset in the input;
    ``deadline`` checked once per enum member searched for in prose)."""
    alts = shape.alternatives(schema, root)
    wanted: set[str] = set()
    members: list[Any] = []
    for alt in alts:
        found = shape.members(alt)
        if found is not None:
            for member in found:
                if not _same(member, members):
                    members.append(member)
        else:
            wanted |= shape.types(alt)
    readings: list[Reading] = []
    refusals: list[Refusal] = []
    body, at = strip_wrappers(text)
    whole = Span(base + at, base + at + len(body))

    def add(result: Reading | Refusal | None) -> None:
        if isinstance(result, Reading):
            readings.append(result)
        elif isinstance(result, Refusal):
            refusals.append(result)

    if members:
        add(_member(text, base, body, whole, members, deadline))
        if None in members and body and sw.is_null_word(body):
            readings.append(
                Reading(None, "guided.null", whole, Risk.SAFE, f"read {body!r} as null")
            )
    if "boolean" in wanted:
        add(_boolean(text, base, body, whole))
    if "null" in wanted and body and sw.is_null_word(body):
        readings.append(Reading(None, "guided.null", whole, Risk.SAFE, f"read {body!r} as null"))
    for kind in ("integer", "number"):
        if kind in wanted:
            upper = _upper(alts, kind)
            add(_number(text, base, body, whole, integer=kind == "integer", upper=upper))
    if "string" in wanted:
        add(_string(text, base))
    return readings, refusals


def _same(member: Any, members: list[Any]) -> bool:
    return any(sw.json_equal(member, m) for m in members)


def _upper(alts: list[dict[str, Any]], kind: str) -> float | None:
    for alt in alts:
        if kind in shape.types(alt):
            return sw.upper_bound(alt)
    return None


# --- enum and const ----------------------------------------------------------------


def _member_text(member: Any) -> str:
    return member if isinstance(member, str) else json.dumps(member)


def _member(
    text: str, base: int, body: str, whole: Span, members: list[Any], deadline: Deadline
) -> Reading | Refusal | None:
    names = [(_member_text(m), m) for m in members if isinstance(m, (str, int, float, bool))]
    for name, member in names:
        if body == name:
            return Reading(member, "guided.enum", whole, Risk.SAFE, f"the answer is {name!r}")
    folded_body = fold_member(body)
    matches = [(n, m) for n, m in names if folded_body and fold_member(n) == folded_body]
    if not matches:
        # "in progress" for "in_progress", "Sao-Paulo" for "São Paulo".
        bare = sw.fold(fold_member(body))
        matches = [(n, m) for n, m in names if bare and sw.fold(fold_member(n)) == bare]
    if len(matches) == 1:
        name, member = matches[0]
        return Reading(
            member, "guided.enum", whole, Risk.SAFE, f"read {body!r} as the member {name!r}"
        )
    leading = _leading_member(body, names)
    if leading is not None:
        name, member = leading
        return Reading(
            member,
            "guided.enum",
            whole,
            Risk.SAFE,
            f"the answer begins with the member {name!r}, followed by a description",
        )
    return _mentioned(
        text,
        base,
        [(n, m) for n, m in names if fold_member(n)],
        code="guided.enum",
        what="members",
        deadline=deadline,
    )


def _leading_member(body: str, names: list[tuple[str, Any]]) -> tuple[str, Any] | None:
    """The member a description follows: ``ONE: ...``, ``ONE - ...``, ``ONE (the first)``."""
    folded = plain(body)
    found = []
    for name, member in names:
        key = plain(name).strip()
        if not key or not folded.startswith(key):
            continue
        rest = folded[len(key) :].lstrip("*_`'\" ")
        if not rest or rest[0] in ":-\u2013\u2014(\n" or rest.startswith(". "):
            found.append((len(key), name, member, rest))
    if not found:
        return None
    found.sort(key=lambda f: -f[0])
    if len(found) > 1 and found[0][0] == found[1][0]:
        return None
    _, name, member, rest = found[0]
    verdict = rest.startswith((":", ". ", "\n")) or len(rest) > _MAX_PROSE
    if not verdict and _names_another(rest, name, names):
        # "RED - that is it, not BLUE": a description that names another member is no
        # verdict (one that ends its sentence first, "RED. Not BLUE because ...", is).
        return None
    return name, member


def _names_another(rest: str, name: str, names: list[tuple[str, Any]]) -> bool:
    """Whether ``rest`` (folded) names a member other than ``name``."""
    for other, _ in names:
        words = [re.escape(w) for w in plain(other).split()]
        if other == name or not words or plain(other) == plain(name):
            continue
        if re.search(r"(?<![\w-])" + r"[\s_-]+".join(words) + r"(?![\w-])", rest):
            return True
    return False


# One value alone before its sentence ends: "4.", "No.", "**RED**\n", "Yes!" (not "4 or 5").
_VERDICT = re.compile(
    r"\s*[*_`\"'\u201c]*(?:[-+]?[$\u20ac\u00a3\u00a5]?\d[\d,]*(?:\.\d+)?%?|[^\W\d]\w*)"
    r"[*_`\"'\u201d]*[ \t]*(?:[.!:;\n]|\Z)"
)


def opens_with_verdict(text: str) -> bool:
    """Whether ``text`` opens with one value alone, ending its sentence: a clear verdict
    that the rest explains (``No. The claim … is wrong because …``), not a choice left open
    (``4 or 5``)."""
    return _VERDICT.match(text) is not None


def plain(text: str) -> str:
    """Case, accents and width folded, one character for one where possible."""
    out = []
    for c in unicodedata.normalize("NFKC", text):
        base = unicodedata.normalize("NFKD", c)
        kept = "".join(b for b in base if not unicodedata.combining(b)) or c
        out.append(kept[0] if len(kept) == 1 else c)
    return "".join(out).casefold()


def _mentioned(
    text: str,
    base: int,
    names: list[tuple[str, Any]],
    *,
    code: str,
    what: str,
    deadline: Deadline = NEVER,
) -> Reading | Refusal | None:
    """The one value prose mentions, or the one it singles out; a refusal when several compete."""
    if not names or len(text) > _MAX_PROSE:
        return None
    folded = plain(text)
    aligned = len(folded) == len(text)
    hits: dict[str, list[int]] = {}
    by_name = dict(names)
    for name, _ in names:
        deadline.check()
        words = [re.escape(w) for w in plain(name).split()]
        if not words:
            continue
        pattern = r"(?<![\w-])" + r"[\s_-]+".join(words) + r"(?![\w-])"
        for m in re.finditer(pattern, folded):
            hits.setdefault(name, []).append(m.start())
    if not hits:
        return None
    # A member found only inside a longer member's mention ("ONE" in "ONE TWO") is not one.
    spans = {n: [(p, p + len(n)) for p in ps] for n, ps in hits.items()}
    for name in list(hits):
        deadline.check()
        inside = all(
            any(o != name and s <= p and p + len(name) <= e for o in spans for s, e in spans[o])
            for p in hits[name]
        )
        if inside:
            del hits[name]
    distinct = list(hits)
    if len(distinct) > 1:
        singled = [n for n in distinct if any(_singled_out(folded, p) for p in hits[n])]
        if len(singled) == 1:
            distinct = singled
    if len(distinct) == 1:
        name = distinct[0]
        pos = hits[name][0]
        span = Span(base + pos, base + pos + len(name)) if aligned else Span(base, base + len(text))
        return Reading(by_name[name], code, span, Risk.GUESS, f"picked {name!r} out of the prose")
    competing = sorted(distinct, key=lambda n: hits[n][0])
    return Refusal(
        "guided.ambiguous",
        Span(base, base + len(text)),
        f"the answer mentions {len(competing)} different {what} "
        f"({', '.join(repr(n) for n in competing[:5])}) and nothing singles one out",
        {"candidates": competing[:20]},
    )


def _singled_out(plain: str, pos: int) -> bool:
    before = plain[max(0, pos - 40) : pos]
    return before.endswith(_EMPHASIS_BEFORE) or bool(_ANSWER_CUE.search(before))


# --- booleans ----------------------------------------------------------------


def _boolean(text: str, base: int, body: str, whole: Span) -> Reading | Refusal | None:
    value = _BOOLEANS.get(body.casefold())
    if value is not None:
        shown = "true" if value else "false"
        return Reading(value, "guided.boolean", whole, Risk.SAFE, f"read {body!r} as {shown}")
    if len(text) > _MAX_PROSE:
        return None
    first = _LEADING_BOOLEAN.match(body)
    if first is not None:
        value = _BOOLEANS[first.group(1).casefold()]
        start = whole.start + first.start(1)
        return Reading(
            value,
            "guided.boolean",
            Span(start, start + len(first.group(1))),
            Risk.GUESS,
            f"the answer begins with {first.group(1)!r}",
        )
    names = [(w, _BOOLEANS[w]) for w in ("true", "false", "yes", "no")]
    found = _mentioned(text, base, names, code="guided.boolean", what="answers")
    if isinstance(found, Refusal):
        # "yes ... true" is one answer twice; only true against false competes.
        values = {_BOOLEANS[n] for n in found.data["candidates"]}
        if len(values) == 1:
            value = values.pop()
            return Reading(
                value,
                "guided.boolean",
                found.span,
                Risk.GUESS,
                f"every yes/no word in the prose says {'true' if value else 'false'}",
            )
    return found


# --- numbers ----------------------------------------------------------------


def read_number_text(
    text: str, *, integer: bool, upper: float | None
) -> tuple[int | float, str] | None:
    """A number written as one token (currency sign, separators, %, trailing period).

    Returns ``(number, how)``; see :func:`number_risk` for how sure the reading is."""
    found = sw.read_number(_number_token(text), integer=integer, upper=upper)
    if found is None:
        return None
    return found[0], found[2]


def _number_token(text: str) -> str:
    """The numeral of a token: currency sign dropped, one trailing period, ``87 %`` joined."""
    s = _CURRENCY.sub(lambda m: m.group(1), text.strip())
    if s.endswith(".") and len(s) > 1:
        s = s[:-1]
    return s.replace(" %", "%")


def number_risk(text: str, *, integer: bool, upper: float | None) -> Risk:
    """The risk schema repair gives the same reading: a percentage or a fraction read on the
    scale the maximum implies (``"4/5"`` → 4) is a guess, as ``coerce_fraction`` is."""
    found = sw.read_number(_number_token(text), integer=integer, upper=upper)
    rule = RULES.get(("schema", found[1])) if found is not None else None
    return rule.risk if rule is not None else Risk.SAFE


def _number(
    text: str, base: int, body: str, whole: Span, *, integer: bool, upper: float | None
) -> Reading | Refusal | None:
    kind = "integer" if integer else "number"
    read = read_number_text(body, integer=integer, upper=upper)
    if read is not None:
        value, how = read
        note = f" ({how})" if how else ""
        risk = number_risk(body, integer=integer, upper=upper)
        return Reading(value, "guided.number", whole, risk, f"read {body!r} as {value}{note}")
    if len(text) > _MAX_PROSE:
        return None
    values: list[tuple[int | float, int, str]] = []
    for m in _NUMBER.finditer(text):
        if _is_marker(text, m.start(), m.end()):
            continue  # "1. Negative": a list marker, not a number
        token = m.group(0).rstrip(",")
        got = read_number_text(token, integer=integer, upper=upper)
        if got is not None:
            values.append((got[0], m.start(), token))
    distinct = {v for v, _, _ in values}
    if not distinct:
        return None
    if len(distinct) > 1:
        shown = []
        for _, _, token in values:
            if token not in shown:
                shown.append(token)
        return Refusal(
            "guided.ambiguous",
            Span(base, base + len(text)),
            f"the answer holds {len(distinct)} different numbers "
            f"({', '.join(shown[:5])}) where one {kind} is wanted",
            {"candidates": shown[:20]},
        )
    value, pos, token = values[0]
    return Reading(
        value,
        "guided.number",
        Span(base + pos, base + pos + len(token)),
        Risk.GUESS,
        f"picked the {kind} {token!r} out of the prose",
    )


_MARKER_AFTER = re.compile(r"[.)][ \t]+\S")


def _is_marker(text: str, start: int, end: int) -> bool:
    """Whether the number at ``start:end`` opens a line as a numbered list's marker."""
    line_start = text.rfind("\n", 0, start) + 1
    return not text[line_start:start].strip() and _MARKER_AFTER.match(text, end) is not None


# --- strings ----------------------------------------------------------------

_QUOTES = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u2018", "\u2019"))


def read_string_text(text: str) -> tuple[str, int]:
    """The whole answer as a string: trimmed, one fence or one pair of quotes removed."""
    lead = len(text) - len(text.lstrip())
    s = text.strip()
    inner, offset = unfence(s)
    if offset:
        return inner, lead + offset
    for left, right in _QUOTES:
        if len(s) >= 2 and s.startswith(left) and s.endswith(right):
            return s[1:-1], lead + 1
    return s, lead


def _string(text: str, base: int) -> Reading | None:
    value, at = read_string_text(text)
    if not value:
        return None
    return Reading(
        value,
        "guided.string",
        Span(base + at, base + at + len(value)),
        Risk.SAFE,
        "the whole answer is the string",
    )
