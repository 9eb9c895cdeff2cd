"""Text from the input, made safe for where it is printed: one function per sink.

File names, JSON keys (in pointers and messages), ``custom_id``\\ s, ``--group-by``
values and model text are written by whoever wrote the repository or the answer. Printed
raw, an ESC or OSC sequence would drive the terminal (colours, titles, hyperlinks, a
cleared screen), a CR or LF would start a line of the reader's choosing (in a GitHub
Actions log, a line ``::error ...::`` is a workflow command), and a bidi override
(U+202E) would reorder what is shown (trojan source). So every line printed from input
goes through the function of its sink:

- :func:`for_terminal`: stdout and stderr (the text report, ``repair``'s diagnostics,
  errors and warnings): control characters (C0 but tab, DEL, C1), line and paragraph
  separators and the bidi controls become visible escapes (``\\x1b``, ``\\u202e``).
- :func:`github_message` and :func:`github_property`: a workflow command's message and
  properties: the runner's own ``%`` escapes for ``%``, CR and LF (and ``:``, ``,`` in
  properties), the rest as for the terminal.
- :func:`for_html`: HTML text and attributes: HTML-escaped, and escaped as for the
  terminal (the page's script shows the bidi controls in model text as escapes too).
- :func:`for_xml`: XML text (JUnit), line by line: as for the terminal, since CI tools
  print these messages in their logs, and what XML 1.0 cannot hold dropped.

Machine formats (JSON, YAML, SARIF) keep the text as it is, escaped by their encoders.
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL and C1 controls; U+2028/U+2029, which some viewers break lines
# on; the bidi controls: marks (U+061C, U+200E, U+200F), embeddings and overrides
# (U+202A-U+202E) and isolates (U+2066-U+2069).
BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029{BIDI}]")
# What XML 1.0 cannot hold: C0 controls but tab, LF and CR; surrogates; U+FFFE, U+FFFF.
# (Written as the characters it refuses: the class of those it allows, with its astral
# range, takes milliseconds to compile, which every command printing anything paid.)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: object) -> str:
    """One line for a terminal or a log: no character in it can act on the reader."""
    return _UNSAFE.sub(_visible, str(text))


def github_message(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF as the runner reads them back (an
    annotation may hold several lines), every other unsafe character visible."""
    escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return for_terminal(escaped)


def github_property(text: str) -> str:
    """A workflow command's property value (``file=``, ``title=``)."""
    return github_message(text).replace(":", "%3A").replace(",", "%2C")


def for_html(text: str) -> str:
    """HTML-escaped text (quotes too, for attributes) that cannot reorder what is shown:
    one line of a name, key or label, escaped as for the terminal too."""
    import html  # (start-up: only the HTML report loads it)

    return html.escape(for_terminal(text), quote=True)


def for_xml(text: str) -> str:
    """One line of text for an XML document that CI tools print: nothing a terminal acts
    on, nothing XML 1.0 cannot hold."""
    return _NOT_XML.sub("", for_terminal(text))
