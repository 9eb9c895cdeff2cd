"""Character classes and compiled patterns shared by the lenient parser.

Every inner loop of the parser is one of these patterns run with ``match(text, pos, end)``,
so the per-character work happens in the regular-expression engine, not in Python.
Patterns that look ahead are given an ``endpos`` window (see ``LOOKAHEAD``) so that no
position is examined more than a constant number of times.
"""

from __future__ import annotations

import re

from llmfix.deadline import CHECK_EVERY

# How far a bounded lookahead (a key after a comma, a key before a colon) may look.
LOOKAHEAD = 200
# How many characters (or steps) a loop may go between two checks of its deadline.
CHUNK = 4 * CHECK_EVERY

# Whitespace JSON allows, and the Unicode spaces models emit in its place.
WS_CHARS = " \t\n\r"
SPECIAL_WS_CHARS = (
    "\u00a0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"
)
WS = re.compile(r"[ \t\n\r]*")
HSPACE = re.compile(r"[ \t]*")
SPECIAL_WS = re.compile("[" + SPECIAL_WS_CHARS + "]+")

# Where a token can stop being plain whitespace: comments, fences, special spaces.
TRIVIA_START = frozenset(WS_CHARS + SPECIAL_WS_CHARS + "/#`")

BLOCK_COMMENT_END = "*/"
LINE_END = re.compile(r"[^\n\r]*")
# A '#' comment stops at the end of the line or before a closing bracket on that line.
HASH_COMMENT = re.compile(r"#[^\n\r}\]]*")
FENCE = re.compile(r"`{3,}[A-Za-z0-9_+\-.]*")
FENCE_ANYWHERE = re.compile(r"`{3,}")

# Quotes. Each opening quote is closed by any quote of its family (``"`` only by ``"``,
# ``'`` only by ``'``, so that the other kind can appear unescaped inside).
QUOTE_CHARS = "\"'\u2018\u2019`\u00b4\u201c\u201d"
SINGLE_LIKE = "'\u2018\u2019`\u00b4"
DOUBLE_LIKE = '"\u201c\u201d'
END_QUOTES: dict[str, str] = {
    '"': '"',
    "'": "'",
    "\u2018": SINGLE_LIKE,
    "\u2019": SINGLE_LIKE,
    "`": SINGLE_LIKE,
    "\u00b4": SINGLE_LIKE,
    "\u201c": DOUBLE_LIKE,
    "\u201d": DOUBLE_LIKE,
}


def _cls(chars: str) -> str:
    return "".join("\\" + c if c in "\\]^-[" else c for c in chars)


# A run of characters that cannot end a string of a given quote family.
STRING_RUN: dict[str, re.Pattern[str]] = {
    q: re.compile(r"[^\\\x00-\x1f" + _cls(ends) + "]*") for q, ends in END_QUOTES.items()
}
# Characters that need decoding work inside string content of a quote family.
STRING_SPECIAL: dict[str, re.Pattern[str]] = {
    q: re.compile(r"\\(?:u[0-9A-Fa-f]{4}|.)?|[\x00-\x1f" + _cls(ends) + "]", re.DOTALL)
    for q, ends in END_QUOTES.items()
}
# In "stop at the first delimiter" mode: escapes are skipped, delimiters are candidates.
STOP_ARRAY = re.compile(r"\\.|[,\]}\n\r+]", re.DOTALL)
STOP_OBJECT = re.compile(r"\\.|[,\]}+]", re.DOTALL)
STOP_KEY = re.compile(r"\\.|[:,}\n\r]", re.DOTALL)

ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
QUOTE_LIKE_ESCAPES = frozenset("'\u2018\u2019`\u00b4\u201c\u201d\u201e")
CONTROL_OK = frozenset("\b\f\n\r\t")
HEX = re.compile(r"[0-9A-Fa-f]{1,4}")

# A key that starts here: a quoted or bare name followed by a colon (bounded window).
_DQ = r'"(?:[^"\\\n]|\\.)*"'
_SQ = r"'(?:[^'\\\n]|\\.)*'"
KEY_AHEAD = re.compile(
    "(?:" + _DQ + "|" + _SQ + r"|\u201c[^\u201d\n]*\u201d|[\w$][\w$\-. ]*[\"']?)[ \t]*:"
)
# A bare word and then a quoted key: stray text before the next key.
WORD_THEN_KEY = re.compile(r"""[\w$]+[ \t]+(?=["'])""")
# A key (quoted or bare) filling a whole slice: the text between a comma and a colon.
KEY_BETWEEN = re.compile(r"\s*(?:" + _DQ + "|" + _SQ + r"|[A-Za-z_$][\w$\-]*)\s*")
# A quoted key at a quote: the same shapes, used when a quote may start the next key.
QUOTED_KEY_AHEAD = re.compile(
    "(?:" + _DQ + "|" + _SQ + r"|\u201c[^\u201d\n]*\u201d|[\u2018`][^\u2019\u00b4'\n]*"
    r"[\u2019\u00b4'])[ \t]*:"
)
# A quote whose string does not close within the window.
UNCLOSED_QUOTE = re.compile(r"""["'](?:[^"'\\\n]|\\.)*""")
# A quoted string followed by another quoted string: a key whose colon is missing.
QUOTED_PAIR_AHEAD = re.compile("(?:" + _DQ + "|" + _SQ + r")[ \t]*[\"']")

COMMA_RUN = re.compile(r",(?:[ \t\n\r]*,)*")
QUOTE_RUN = {q: re.compile(q + "+") for q in "\"'"}
BRACE_RUN = re.compile(r"\{(?:[ \t\n\r]*\{)*")

# Numbers.
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
# Characters that, right after a number, make it part of a longer token.
NUMBER_TAIL = frozenset("0123456789.eE_+-:/") | frozenset(
    "abcdfghijklmnopqrstuvwxyzABCDFGHIJKLMNOPQRSTUVWXYZ"
)
NUMBER_TOKEN = re.compile(r"(?:[\w.+\-:]|/(?![/*]))*")
UNDERSCORE_NUMBER = re.compile(r"-?[0-9]+(?:_[0-9]+)*(?:\.[0-9]+(?:_[0-9]+)*)?(?:[eE][-+]?[0-9]+)?")
TRUNCATED_NUMBER = re.compile(r"(-?)([0-9]*)(?:(\.)([0-9]*))?(?:([eE])([-+]?)([0-9]*))?")
LEADING_ZERO = re.compile(r"-?0[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
MAX_INT_DIGITS = 4300

# Words.
KEYWORDS: dict[str, tuple[object, str]] = {
    "true": (True, ""),
    "false": (False, ""),
    "null": (None, ""),
    "True": (True, "parse.python_literal"),
    "False": (False, "parse.python_literal"),
    "None": (None, "parse.python_literal"),
    "TRUE": (True, "parse.python_literal"),
    "FALSE": (False, "parse.python_literal"),
    "NULL": (None, "parse.python_literal"),
    "Null": (None, "parse.python_literal"),
    "NONE": (None, "parse.python_literal"),
    "undefined": (None, "parse.js_literal"),
    "NaN": (None, "parse.js_literal"),
    "Infinity": (None, "parse.js_literal"),
}


def _literal_prefixes() -> dict[str, object]:
    """Each proper prefix of a JSON or Python literal whose completions all mean one value
    (``tru`` → true, ``N`` → null); JavaScript words (``NaN``, ``undefined``) are left out."""
    values: dict[str, set[object]] = {}
    for word, (value, code) in KEYWORDS.items():
        if code == "parse.js_literal":
            continue
        for size in range(1, len(word)):
            values.setdefault(word[:size], set()).add(value)
    return {
        prefix: next(iter(found))
        for prefix, found in values.items()
        if len(found) == 1 and prefix not in KEYWORDS
    }


# A literal cut off by the end of the input, and what it completes to.
LITERAL_PREFIXES = _literal_prefixes()
WORD = re.compile(r"[A-Za-z_$][\w$]*")
CALL = re.compile(r"([A-Za-z_$][\w$.]*)[ \t]*\(")
MONGO_NAMES = frozenset(
    [
        "ObjectId",
        "NumberLong",
        "NumberInt",
        "NumberDecimal",
        "NumberDouble",
        "ISODate",
        "Date",
        "Timestamp",
        "BinData",
        "UUID",
        "MinKey",
        "MaxKey",
        "DBRef",
        "RegExp",
        "HexData",
    ]
)
ELLIPSIS = re.compile(r"\.\.\.|\u2026")
REGEX_LITERAL = re.compile(r"/(?:[^/\\\n\r]|\\.)+/[A-Za-z]*")

# An unquoted value runs over these characters without a decision to make.
UNQUOTED_RUN = re.compile(r"[^\n\r,}\])\[{(/#\\" + _cls(QUOTE_CHARS) + "]*")
# An unquoted key: one word, or several words when a colon follows on the same line.
UNQUOTED_KEY = re.compile(r"[^\s:,{}\[\]()/#" + _cls(QUOTE_CHARS) + "]+")
UNQUOTED_KEY_WORDS = re.compile(
    r"[^\s:,{}\[\]()/#"
    + _cls(QUOTE_CHARS)
    + r"]+(?:[ \t]+[^\s:,{}\[\]()/#"
    + _cls(QUOTE_CHARS)
    + r"]+)*(?=[ \t]*:)"
)
# Prose before the value: skip to the first bracket.
PROSE_TO_VALUE = re.compile(r"[\[{]")
# Top-level words with no bracket after them: one string per line or comma-separated part.
WORD_CHAR = re.compile(r"[^\W_]")
BARE_WORDS = re.compile(r"[ \t]*([^\s,](?:[^\n\r,]*[^\s,])?)[ \t]*")

OPENERS = {"}": "{", "]": "[", ")": "("}
CLOSER_OF = {"{": "}", "[": "]", "(": ")"}
