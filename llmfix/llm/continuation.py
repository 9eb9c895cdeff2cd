"""Continuing an answer the token limit cut off, instead of asking for all of it again.

A cut-off answer (its API stop reason says so, or its text ends inside a value) has a
valid beginning: the JSON text from where the value starts to where the model stopped.
Asking the model for the whole answer again pays for that beginning a second time, and the
model may rewrite it; asking it to *continue* pays only for what is missing and keeps what
was written, byte for byte.

- :func:`prefix_of` finds that beginning (``None`` when the answer was not cut off, or has
  no JSON value to continue);
- :func:`continuation_tokens` sizes the request's ``max_tokens`` to what can be missing,
  so that a model that does not stop (an array it keeps adding items to) spends little;
- :func:`continuation_request` builds the two ways of asking: as an assistant prefill (the
  prefix is the start of the model's own message: Anthropic messages, and OpenAI-compatible
  servers that take ``continue_final_message``, such as vLLM and llama.cpp's
  ``llama-server``) and as a plain prompt that shows the prefix and asks for what follows
  it exactly (any other server); the provider picks the one it can send;
- :mod:`llmfix.llm.grammar` builds the grammar of what may follow the prefix, sent with
  the request to servers that take one (token healing moves the prefill back to a word's
  start; :func:`joins` is then given that shorter prefill);
- :func:`joins` lists the texts the prefix and the model's continuation can make: the two
  side by side, the same with what the model repeated of the prefix's end taken off at the
  seam, or the continuation alone when it holds the whole prefix (llama.cpp's
  ``llama-server`` sends the prefill back with the rest; a model may start over and write
  the prefix again).
  The caller validates each; only a join that keeps the whole prefix, and whose value is
  strict JSON with no key twice (:func:`strict_json`), is ever accepted: a model that
  ignored the prefill and wrote a fresh answer after it must not get its values in through
  the lenient reader (a repeated key's last value wins there). When the model went on
  after the value closed (a second value, a remark), the first complete value is a join
  too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from llmfix.model import Result, Status

# What says an answer is not all there: the API's stop reason or the text itself.
CUT_OFF_CODES = frozenset(
    {"response.cut_off", "stream.cut_off", "parse.cut_off", "parse.truncated"}
)

# The longest stretch at the seam checked for a repeat of the prefix's end (characters).
MAX_OVERLAP = 200
# A repeat shorter than this is left alone: one or two characters ending the prefix and
# starting the continuation are as likely two values as one repeated. (The join without
# the repeat taken off is tried too; the first that validates wins.)
MIN_OVERLAP = 3

CONTINUE_SYSTEM = (
    "You write JSON. An earlier answer of yours was cut off by the token limit. Continue it "
    "exactly where it stops: do not repeat what was already written, do not start over, do "
    "not add an explanation or Markdown code fences."
)
# What to write: the shortest end that makes the answer whole. Nobody knows how long the
# answer was meant to be (the model does not see the question either), and a model told
# only to "continue" an array goes on adding items until the token limit.
FINISH = (
    "Finish it as soon as it can be finished: complete the value being written, add only "
    "what the schema still requires, and close every open bracket."
)

# A continuation's max_tokens: room for the prefix once more (a server that ignores the
# prefill may make the model write it again), plus this many tokens, at most.
CONTINUATION_ROOM = 64
# Characters per token, counted low (JSON tokenizes at 3–4), so the room is not too small.
CHARS_PER_TOKEN = 3


def is_cut_off(result: Result) -> bool:
    """Whether ``result`` is of an answer cut off by a token limit (and not refused)."""
    if result.status is Status.REFUSED:
        return False
    codes = {d.code for d in result.diagnostics}
    if "response.refused" in codes:
        return False
    return result.status is Status.TRUNCATED or bool(codes & CUT_OFF_CODES)


def prefix_of(text: str, result: Result) -> str | None:
    """The beginning of the cut-off answer ``text`` to continue from: the JSON text from
    where its value starts (the candidate the pipeline read, else the first ``{`` or
    ``[``) to the end, without trailing whitespace (an Anthropic prefill may not end in
    it). ``None`` when ``result`` is not cut off, or there is no value to continue (none
    starts, or the one that does is already whole)."""
    if not is_cut_off(result):
        return None
    start = -1
    candidate = result.candidate
    if candidate is not None and not candidate.synthetic:
        at = candidate.span.start
        if 0 <= at < len(text) and text[at] in "{[":
            start = at
    if start < 0:
        found = [i for i in (text.find("{"), text.find("[")) if i >= 0]
        start = min(found) if found else -1
    if start < 0:
        return None
    prefix = text[start:].rstrip()
    if len(prefix) < 2 or strict_json(prefix):
        return None  # a whole value: the cut came after it, there is nothing to continue
    return prefix


def continuation_tokens(prefix: str, limit: int) -> int:
    """The ``max_tokens`` of a continuation of ``prefix``: the prefix's tokens once more,
    plus :data:`CONTINUATION_ROOM`, and no more than ``limit``. A continuation that
    reaches it is continued again while attempts are left; a model that keeps going (an
    array of invented items) is stopped early."""
    return max(1, min(limit, len(prefix) // CHARS_PER_TOKEN + CONTINUATION_ROOM))


def first_value_end(text: str) -> int | None:
    """Where the first strict JSON value of ``text`` (starting at its first character)
    ends, or ``None`` when it is not one."""
    try:
        _, end = json.JSONDecoder(object_pairs_hook=_no_repeats).raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return end


class _RepeatedKey(ValueError):
    pass


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _RepeatedKey
    return out


def strict_json(text: str) -> bool:
    """Whether ``text`` is one strict JSON value in which no object has a key twice."""
    try:
        json.loads(text, object_pairs_hook=_no_repeats)
    except (ValueError, RecursionError):
        return False
    return True


@dataclass(frozen=True)
class ContinuationRequest:
    """The two ways to ask for the rest of ``prefix``: ``prefill`` ends with an assistant
    message holding the prefix (the model's own message, to go on with); ``prompt`` shows
    the prefix in the user message and asks for what comes after it."""

    prefix: str
    prefill: tuple[dict[str, str], ...]
    prompt: tuple[dict[str, str], ...]


def continuation_request(prefix: str, schema_text: str | None) -> ContinuationRequest:
    """The messages of a continuation of ``prefix`` (``schema_text``: the schema the whole
    answer must meet, as JSON text, or ``None``)."""
    about = "Your answer was cut off by the token limit."
    if schema_text is not None:
        about += f" The whole answer must validate against this JSON Schema:\n{schema_text}"
    prefill_user = about + "\n\nContinue your answer from exactly where it stops. " + FINISH
    prompt_user = (
        about + "\n\nHere is the answer as far as it got:\n<<<\n" + prefix + "\n>>>\n\n"
        "Write only the text that comes after its last character, so that the answer "
        "followed by your text is one complete JSON value. Do not repeat any of it. " + FINISH
    )
    system = {"role": "system", "content": CONTINUE_SYSTEM}
    return ContinuationRequest(
        prefix=prefix,
        prefill=(
            system,
            {"role": "user", "content": prefill_user},
            {"role": "assistant", "content": prefix},
        ),
        prompt=(system, {"role": "user", "content": prompt_user}),
    )


def _strip_fence(text: str) -> str:
    """``text`` without a Markdown fence the model opened around its continuation, or
    closed after it (the cut-off answer was fenced)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        first = stripped.find("\n")
        stripped = stripped[first + 1 :] if first >= 0 else ""
    if stripped.rstrip().endswith("```"):
        stripped = stripped.rstrip()[:-3].rstrip()
    return stripped


def _overlaps(prefix: str, continuation: str) -> list[int]:
    """Lengths ``n`` (longest first) where the prefix ends with the continuation's first
    ``n`` characters: what the model repeated at the seam."""
    head = continuation.lstrip()
    longest = min(MAX_OVERLAP, len(prefix), len(head))
    return [n for n in range(longest, MIN_OVERLAP - 1, -1) if prefix.endswith(head[:n])]


def started_over(prefix: str, continuation: str) -> bool:
    """Whether ``continuation`` begins the way the prefix does (its first characters, up
    to the first key or item) but not with the whole prefix: the model wrote a fresh answer
    instead of continuing, as a server that ignores an assistant prefill makes it do. (A
    server that takes the prefill may send it back with the continuation, as llama.cpp's
    ``llama-server`` does: the whole prefix, then the rest.)"""
    head = _strip_fence(continuation).lstrip()
    opening = prefix[: max(2, min(len(prefix), 12))]
    return len(prefix) > 2 and head.startswith(opening) and not head.startswith(prefix)


def joins(prefix: str, continuation: str) -> list[str]:
    """The texts the prefix and the continuation can make, the likeliest first, each
    starting with the whole prefix: the continuation repeated the prefix (it started over:
    taken alone), a repeat at the seam taken off, the two side by side (as the model
    wrote it, and with the seam's whitespace dropped); after each, its first complete
    value when the model went on after it closed."""
    out: list[str] = []
    for text in (continuation, _strip_fence(continuation)):
        head = text.lstrip()
        if head.startswith(prefix):
            out.append(head)
        for n in _overlaps(prefix, text):
            out.append(prefix + text.lstrip()[n:])
        out.append(prefix + text)
        out.append(prefix + text.lstrip())
    firsts = []
    for text in out:
        end = first_value_end(text)
        if end is not None and text[end:].strip():
            firsts.append(text[:end])
    return list(dict.fromkeys(out + firsts))
