"""The ordered gate that finds tool calls in a response, whatever format the model used.

Over 600 lines on purpose: the gate is one ordered procedure built around one marker regex
made from every format's reader; the formats themselves are in ``json_formats``,
``xml_formats``, ``pythonic`` and ``structured``.

1. **Structured**: the whole answer is one JSON document (an OpenAI, Anthropic or Gemini response,
   a message, a ``{"toolCalls": [...]}`` envelope, bare call objects). Nothing else is
   looked for: markers inside its strings are data.
2. **Envelopes**: one left-to-right pass of a single compiled regex that matches every
   format's opening marker; each marker's reader consumes its region and the pass resumes
   after it (linear in the text). When calls are found in more than one format, the one
   with the most complete calls wins (then the one found first) and
   ``tools.format_conflict`` says which lost and why.
3. **Bare**: only when no envelope held a call — the answer as a pythonic list, or JSON
   objects (fenced or in prose) that read as calls; with a registry, only objects naming a
   registered (or nearly registered) tool count. (A whole answer that is one call object is
   a call whatever it names: that is step 1.)

Calls inside reasoning blocks are found and marked ``in_reasoning``; what to do with them
is the check's decision. The text outside calls and reasoning is the answer's content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from llmfix import codes
from llmfix.deadline import Deadline
from llmfix.errors import ConfigError
from llmfix.formats import fences
from llmfix.formats.envelopes import drop_reasoning_tags
from llmfix.model import Diagnostic, Risk, Span
from llmfix.pipeline.extract import extract_candidates
from llmfix.pipeline.normalize import Document, normalize_document
from llmfix.toolcalls import json_formats as jf
from llmfix.toolcalls import pythonic as py
from llmfix.toolcalls import xml_formats as xf
from llmfix.toolcalls import xtml
from llmfix.toolcalls.audit import audit_content
from llmfix.toolcalls.base import (
    Call,
    Hit,
    Scan,
    ToolCall,
    ToolCallExtraction,
    closed_items,
    lenient_json,
)
from llmfix.toolcalls.structured import Document as StructuredDocument
from llmfix.toolcalls.structured import read_document

if TYPE_CHECKING:
    from llmfix.toolcalls.registry import ToolRegistry

FORMATS: dict[str, str] = {
    "openai": "OpenAI chat completion / message / Responses JSON with tool_calls "
    "(arguments as a JSON string)",
    "anthropic": "Anthropic message JSON with tool_use content blocks",
    "gemini": "Gemini generateContent JSON with functionCall parts",
    "tool-calls-json": 'the {"toolCalls": [...]} envelope',
    "json": 'bare JSON call objects {"name", "arguments"|"parameters"} (Llama 3 JSON, xLAM)',
    "pythonic": "a pythonic call list [f(a=1), g(b='x')] (Llama 3.2/4, Granite, ToolACE)",
    "anthropic-xml": '<function_calls><invoke name="…"><parameter name="…">',
    "deepseek-dsml": "DeepSeek V3.2/V4/V4.1 <｜DSML｜function_calls>/<｜DSML｜tool_calls>/"
    "<｜DSML｜ calls> invokes",
    "deepseek-v3": "DeepSeek V3/R1/V3.1 <｜tool▁calls▁begin｜> special tokens",
    "step3": "Step-3 <｜tool_calls_begin｜> with <steptml:invoke>",
    "kimi-k2": "Kimi K2 <|tool_calls_section_begin|> … functions.NAME:0",
    "kimi-k3": 'Kimi K3 XTML <|open|>call tool="…" index="…"<|sep|> with typed arguments',
    "hermes": "<tool_call>{json}</tool_call> (Hermes, Qwen 2.5/3, ERNIE, Granite 4)",
    "qwen3-xml": "<tool_call><function=NAME><parameter=k>v</parameter> (Qwen3-Coder, Step-3.5, "
    "Seed-OSS)",
    "glm": "<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value> (GLM 4.5+, Poolside)",
    "hunyuan": "<tool_calls><tool_call>NAME<tool_sep><arg_key>… (Hunyuan V3)",
    "jamba": "<tool_calls>[{json}]</tool_calls> (Jamba, Hunyuan-A13B, MiniMax-M1)",
    "minicpm5": '<function name="…"><param name="…">v</param></function> (MiniCPM 5)',
    "minimax-m2": '<minimax:tool_call><invoke name="…"><parameter name="…">',
    "minimax-m3": "MiniMax-M3 ]<]minimax[>[-delimited nested tags",
    "mistral": "[TOOL_CALLS][{…}], [TOOL_CALLS]name{…}, [TOOL_CALLS]name[ARGS]{…}",
    "llama3": "Llama 3.1 <|python_tag|>{json} (or a built-in tool call)",
    "llama4": "Llama 4 <|python_start|>[f(a=1)]<|python_end|>",
    "lfm2": "LFM2 <|tool_call_start|>[f(a=1)]<|tool_call_end|>",
    "olmo3": "OLMo 3 <function_calls>f(a=1)</function_calls> (one call per line)",
    "gemma4": 'Gemma 4 <|tool_call>call:NAME{k:<|"|>v<|"|>}<tool_call|>',
    "functiongemma": "FunctionGemma <start_function_call>call:NAME{k:<escape>v<escape>}",
    "harmony": "gpt-oss harmony <|channel|>commentary to=functions.NAME … <|message|>{json}",
    "granite": "Granite 3 <|tool_call|>[{json}]",
    "granite-20b-fc": "Granite 20B FC <function_call> {json}",
    "internlm": "InternLM 2 <|action_start|><|plugin|>{json}<|action_end|>",
    "gigachat": "GigaChat 3 function call<|role_sep|>{json} / <|function_call|>{json}",
    "phi4-mini": "Phi-4-mini functools[{json}]",
    "apertus": 'Apertus <|tools_prefix|>[{"NAME": {args}}]<|tools_suffix|>',
    "longcat": "LongCat <longcat_tool_call>{json}</longcat_tool_call>",
}

STRUCTURED = frozenset({"openai", "anthropic", "gemini", "tool-calls-json", "json"})
BARE = frozenset({"json", "pythonic"})


@dataclass(frozen=True)
class Handler:
    """One opening marker and the reader for what follows it."""

    formats: tuple[str, ...]
    marker: str
    read: Callable[[Scan, re.Match[str]], Hit | None]


def _c(source: str) -> re.Pattern[str]:
    return re.compile(source)


HANDLERS: tuple[Handler, ...] = (
    Handler(("minimax-m3",), r"\]<\]minimax\[>\[<tool_call>", xf.read_minimax_m3),
    Handler(
        ("deepseek-dsml",),
        r"<[|｜]DSML[|｜] ?(?:function_calls|tool_calls|calls)\s*>",
        partial(
            xf.read_wrapped_invokes,
            close=_c(r"</[|｜]DSML[|｜] ?(?:function_calls|tool_calls|calls)\s*>"),
            family="deepseek-dsml",
        ),
    ),
    Handler(("kimi-k2",), r"<\|tool_calls?_section_begin\|>|<\|tool_call_begin\|>", jf.read_kimi),
    Handler(("kimi-k3",), xtml.MARKER, xtml.read_kimi_k3),
    Handler(("deepseek-v3", "step3"), r"<[|｜]tool[▁_ ]calls?[▁_ ]begin[|｜]>", jf.read_deepseek),
    Handler(
        ("minimax-m2",),
        r"<minimax:tool_call\s*>",
        partial(xf.read_wrapped_invokes, close=_c(r"</minimax:tool_call\s*>"), family="minimax-m2"),
    ),
    Handler(("anthropic-xml", "olmo3"), r"<(?:[\w-]+:)?function_calls\s*>", xf.read_function_calls),
    Handler(
        ("anthropic-xml", "deepseek-dsml", "step3"),
        r"<(?:(?:[\w-]+:)?|[|｜]DSML[|｜] ?)invoke\s[^<>]{0,500}?name\s*=",
        xf.read_invoke,
    ),
    Handler(("jamba", "hunyuan"), r"<tool_calls\s*>", xf.read_tool_calls),
    Handler(
        ("hermes", "qwen3-xml", "glm", "hunyuan"), r"<(?:seed:)?tool_call\s*>", xf.read_tool_call
    ),
    Handler(("qwen3-xml",), r"<function=", xf.read_function_tag),
    Handler(("minicpm5",), r"<function[\sĠ]*name\s*=\s*(?=\")", xf.read_minicpm),
    Handler(
        ("longcat",),
        r"<longcat_tool_call\s*>",
        partial(jf.read_tagged_json, close=_c(r"</longcat_tool_call\s*>"), family="longcat"),
    ),
    Handler(
        ("granite",), r"<\|tool_call\|>", partial(jf.read_tagged_json, close=None, family="granite")
    ),
    Handler(
        ("gemma4",),
        r"<\|tool_call>",
        partial(py.read_gemma, close=_c(r"<tool_call\|>"), family="gemma4", quote='<|"|>'),
    ),
    Handler(
        ("functiongemma",),
        r"<start_function_call>",
        partial(
            py.read_gemma,
            close=_c(r"<end_function_call>"),
            family="functiongemma",
            quote="<escape>",
        ),
    ),
    Handler(
        ("granite-20b-fc",),
        r"<function_call>",
        partial(jf.read_tagged_json, close=None, family="granite-20b-fc", many=False),
    ),
    Handler(
        ("internlm",),
        r"<\|action_start\|>\s*<\|plugin\|>",
        partial(jf.read_tagged_json, close=_c(r"<\|action_end\|>"), family="internlm"),
    ),
    Handler(
        ("gigachat",),
        r"<\|message_sep\|>\s*function call\s*<\|role_sep\|>|<\|function_call\|>",
        partial(jf.read_tagged_json, close=None, family="gigachat", many=False),
    ),
    Handler(
        ("phi4-mini",),
        r"functools\[",
        partial(jf.read_tagged_json, close=None, family="phi4-mini", from_marker_end=1),
    ),
    Handler(
        ("apertus",),
        r"<\|tools_prefix\|>",
        partial(jf.read_apertus, close=_c(r"<\|tools_suffix\|>")),
    ),
    Handler(("mistral",), r"\[TOOL_CALLS\]", jf.read_mistral),
    Handler(
        ("llama3",),
        r"<\|python_tag\|>",
        partial(jf.read_python_tag, close=_c(r"<\|eom_id\|>|<\|eot_id\|>")),
    ),
    Handler(
        ("llama4",),
        r"<\|python_start\|>",
        partial(py.read_python_block, close=_c(r"<\|python_end\|>"), family="llama4"),
    ),
    Handler(
        ("lfm2",),
        r"<\|tool_call_start\|>",
        partial(py.read_python_block, close=_c(r"<\|tool_call_end\|>"), family="lfm2"),
    ),
    Handler(
        ("harmony",),
        # Bounded recipient: "to=" runs with no "<|channel|>" after them were quadratic.
        r"(?:<\|start\|>assistant\s*)?(?:to=[^\s<]{1,256}\s*)?<\|channel\|>",
        jf.read_harmony,
    ),
)


def _combined(handlers: tuple[Handler, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?P<h{i}>{h.marker})" for i, h in enumerate(handlers)))


_ALL = _combined(HANDLERS)
_BY_FORMAT: dict[str, tuple[re.Pattern[str], tuple[int, ...]]] = {}

# End-of-turn tokens that are not part of the answer's text.
_END_TOKENS = re.compile(
    r"</s>|<\|(?:eot_id|eom_id|im_end|end|return|call|endoftext|end_of_text|end_of_msg)\|>"
    r"|<｜end▁of▁sentence｜>|<\|start\|>assistant|" + xtml.CHANNEL_TOKENS
)

# Reasoning that normalization does not set apart: Mistral's [THINK]…[/THINK] (Magistral),
# and Kimi K3's think channel (see llmfix.toolcalls.xtml).
_BRACKET_THINK = re.compile(r"\[THINK\].*?(?:\[/THINK\]|\Z)", re.S)


def _reasoning_spans(text: str, document: Document) -> list[Span]:
    """Every reasoning block of ``text``, in order."""
    spans = list(document.reasoning)
    if "[THINK]" in text:
        spans += [Span(m.start(), m.end()) for m in _BRACKET_THINK.finditer(text)]
    if "<|close|>think<|sep|>" in text:
        spans += xtml.think_spans(text)
    return sorted(spans, key=lambda s: s.start)


def _scanner(fmt: str | None) -> tuple[re.Pattern[str], tuple[int, ...]]:
    """The combined marker regex (for one format, only the handlers that can produce it)."""
    if fmt is None:
        return _ALL, tuple(range(len(HANDLERS)))
    if fmt not in _BY_FORMAT:
        indexes = tuple(i for i, h in enumerate(HANDLERS) if fmt in h.formats)
        pattern = re.compile(
            "|".join(f"(?P<h{i}>{HANDLERS[i].marker})" for i in indexes) or r"(?!x)x"
        )
        _BY_FORMAT[fmt] = (pattern, indexes)
    return _BY_FORMAT[fmt]


def check_format(fmt: str | None) -> None:
    """Raise :class:`ConfigError` for an unknown format name."""
    if fmt is None or fmt in FORMATS:
        return
    import difflib

    close = difflib.get_close_matches(fmt, list(FORMATS), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"unknown tool-call format {fmt!r}{hint}; known: {', '.join(FORMATS)}")


def extract_tool_calls(
    text: str,
    *,
    fmt: str | None = None,
    registry: ToolRegistry | None = None,
    deadline: Deadline | None = None,
) -> ToolCallExtraction:
    """Every tool call in ``text``, with the answer's content and reasoning (see the module
    docstring). ``fmt`` forces one format (a key of :data:`FORMATS`); ``registry`` types
    text-valued arguments by each tool's schema and vets bare JSON calls. The readers check
    ``deadline`` as they go (once per marker, value and call) and raise
    :class:`~llmfix.deadline.OutOfTime` when it passes."""
    check_format(fmt)
    scan = Scan(text, registry, deadline)
    document = normalize_document(text)
    whole = _whole_document(scan, document, fmt)
    if whole is not None:
        return whole
    gate = _Gate(scan, document, fmt)
    return gate.run()


def _whole_document(scan: Scan, document: Document, fmt: str | None) -> ToolCallExtraction | None:
    text = scan.text
    start, end = _strip(text, 0, len(text))
    if start == end or text[start] not in "{[":
        return None
    try:
        value = json.loads(text[start:end])
    except (ValueError, RecursionError):
        return None
    doc = read_document(scan, value, start, end, bare=True)
    if fmt is not None and fmt not in STRUCTURED:
        # A format forced on an API response: the calls its message text holds in it.
        if doc is None or doc.format == "json" or not doc.content:
            return None
        audited = _calls_in_content(scan, doc, start, end, fmt)
        return audited or ToolCallExtraction((), "", "", (), None, finish=doc.finish)
    if doc is None or (fmt is not None and doc.format != fmt):
        finish = None if doc is None else doc.finish
        return ToolCallExtraction((), "", "", (), None, structured=True, finish=finish)
    if doc.content and doc.format != "json":
        audited = _calls_in_content(scan, doc, start, end)
        if audited is not None:
            return audited
    calls = tuple(_freeze(c, document.reasoning) for c in doc.calls)
    return ToolCallExtraction(
        calls,
        "\n".join(doc.content).strip(),
        "\n".join(doc.reasoning).strip(),
        tuple(doc.notes),
        doc.format if calls else None,
        structured=doc.format != "json",
        markers=bool(calls),
        finish=doc.finish,
    )


def _calls_in_content(
    scan: Scan, doc: StructuredDocument, start: int, end: int, fmt: str | None = None
) -> ToolCallExtraction | None:
    """An API response whose message text holds tool-call markup the server did not parse
    (see :mod:`llmfix.toolcalls.audit`): the server's calls, then the calls left in the text
    (``tools.left_in_content``), each located at the whole document; a call the server read
    otherwise than the text says is ``tools.server_mismatch`` (the server's call is kept).
    A call the server read as the text says stays the server's, its markup left out of the
    content. ``None`` when the text holds no call."""
    read = extract_tool_calls(
        "\n".join(doc.content), fmt=fmt, registry=scan.registry, deadline=scan.deadline
    )
    found = audit_content(read, [(c.name, c.arguments) for c in doc.calls])
    if found is None:
        return None
    span = Span(start, end)
    position = scan.lines.position(start)
    moved = tuple(
        replace(
            c,
            span=span,
            diagnostics=tuple(replace(d, span=span, position=position) for d in c.diagnostics),
        )
        for c in found.moved
    )
    notes = list(doc.notes)
    server = "the server's tool_calls " + ("are empty" if not doc.calls else "lack them")
    if moved:
        names = ", ".join(c.name for c in moved)
        notes.append(
            scan.note(
                codes.TOOLS_LEFT_IN_CONTENT,
                f"the {doc.format} message text holds {len(moved)} {found.format} tool "
                f"call(s) ({names}) and {server}: read them from the text",
                start,
                end,
                risk=Risk.SAFE,
                hint="the server's tool-call parser missed this format: check its "
                "tool-call parser setting, or let llmfix --tool-calls move them",
                data={
                    "format": found.format,
                    "calls": [c.to_dict() for c in moved],
                    "server_calls": len(doc.calls),
                },
            )
        )
    for index, call in found.mismatched:
        theirs = doc.calls[index]
        notes.append(
            scan.note(
                codes.TOOLS_SERVER_MISMATCH,
                f"the server read call {index} ({theirs.name}) with other arguments than its "
                "markup in the message text gives; the server's call was kept",
                start,
                end,
                data={
                    "index": index,
                    "server": theirs.arguments,
                    "text": call.arguments,
                    "format": found.format,
                },
            )
        )
    calls = tuple(_freeze(c, ()) for c in doc.calls) + moved
    reasoning = "\n".join([*doc.reasoning, found.reasoning]).strip()
    return ToolCallExtraction(
        calls,
        found.content,
        reasoning,
        tuple(notes),
        doc.format if doc.calls else found.format,
        structured=bool(doc.calls),
        markers=True,
        finish=doc.finish,
    )


class _Gate:
    def __init__(self, scan: Scan, document: Document, fmt: str | None) -> None:
        self.scan = scan
        self.document = document
        self.fmt = fmt
        self.notes: list[Diagnostic] = []
        self.thinking = _reasoning_spans(scan.text, document)
        # (bare JSON in the blocks normalization sets apart is read as before: a call in
        # reasoning; the extraction of candidates does not know the others)
        self.extra_thinking = [s for s in self.thinking if s not in document.reasoning]

    def run(self) -> ToolCallExtraction:
        hits = self.envelopes()
        groups = self.groups(hits)
        calls: list[Call] = []
        consumed = [Span(h.start, h.end) for _, h in hits]
        reasoning = self.thinking + [s for _, h in hits for s in h.reasoning]
        winner: str | None = None
        if groups:
            winner, calls = self.choose(groups)
        # A gpt-oss answer's final channel is text: JSON there is not a call.
        harmony = any(h.family == "harmony" for _, h in hits)
        bare_calls, bare_spans = ([], []) if harmony else self.bare(consumed, reasoning)
        if calls and bare_calls:
            first = bare_calls[0]
            self.notes.append(
                self.scan.note(
                    codes.TOOLS_FORMAT_CONFLICT,
                    f"calls in {winner} and also {len(bare_calls)} bare {first.format} call(s); "
                    f"used {winner}: a model-specific envelope beats bare text read as a call",
                    first.start,
                    first.end,
                    data={
                        "winner": winner,
                        "loser": first.format,
                        "dropped": [c.name for c in bare_calls],
                    },
                )
            )
        elif bare_calls:
            calls = bare_calls
            consumed += bare_spans
        for _, hit in hits:
            self.notes.extend(hit.notes)
        if self.fmt is not None:
            calls = [c for c in calls if c.format == self.fmt]
        frozen = tuple(_freeze(c, self.thinking) for c in calls)
        content = self.content(consumed, reasoning)
        return ToolCallExtraction(
            frozen,
            content,
            self.reasoning_text(reasoning),
            tuple(self.notes),
            frozen[0].format if frozen else None,
            structured=False,
            markers=bool(frozen) or any(h.calls or h.notes for _, h in hits),
        )

    # -- tier 2: envelopes ---------------------------------------------------------------

    def envelopes(self) -> list[tuple[int, Hit]]:
        pattern, _ = _scanner(self.fmt)
        text = self.scan.text
        check = self.scan.deadline.check
        found: list[tuple[int, Hit]] = []
        pos = 0
        while True:
            m = pattern.search(text, pos)
            if m is None:
                break
            check()
            assert m.lastgroup is not None
            index = int(m.lastgroup[1:])
            hit = HANDLERS[index].read(self.scan, m)
            if hit is None:
                pos = m.end()
                continue
            block = _inside(Span(m.start(), m.end()), self.thinking)
            if block is not None and not _thought(hit, block):
                # Tool-call syntax in reasoning text is not a call unless it is one whole
                # call there: a reader that ran past the block's end, or found only a cut
                # or broken call, was reading the model's words about the format.
                pos = m.end()
                continue
            found.append((index, hit))
            pos = max(hit.end, m.end())
        return found

    def groups(self, hits: list[tuple[int, Hit]]) -> dict[int, list[Hit]]:
        out: dict[int, list[Hit]] = {}
        for index, hit in hits:
            if hit.calls:
                out.setdefault(index, []).append(hit)
        return out

    def choose(self, groups: dict[int, list[Hit]]) -> tuple[str, list[Call]]:
        def score(item: tuple[int, list[Hit]]) -> tuple[int, int, int]:
            calls = [c for h in item[1] for c in h.calls]
            return (-sum(c.complete for c in calls), -len(calls), item[1][0].start)

        ranked = sorted(groups.items(), key=score)
        best_index, best_hits = ranked[0]
        calls = [c for h in best_hits for c in h.calls]
        winner = _names(calls)
        for index, hits in ranked[1:]:
            lost = [c for h in hits for c in h.calls]
            reason = (
                "more complete calls"
                if score((best_index, best_hits))[0] < score((index, hits))[0]
                else "more calls"
                if len(calls) > len(lost)
                else "it comes first"
            )
            self.notes.append(
                self.scan.note(
                    codes.TOOLS_FORMAT_CONFLICT,
                    f"calls in two formats: {winner} ({len(calls)}) and {_names(lost)} "
                    f"({len(lost)}); used {winner}: {reason}",
                    hits[0].start,
                    hits[-1].end,
                    data={
                        "winner": winner,
                        "loser": _names(lost),
                        "dropped": [c.name for c in lost],
                    },
                    hint="a model should use one tool-call format per answer",
                )
            )
        return winner, calls

    # -- tier 3: bare text that reads as calls ------------------------------------------

    def bare(self, consumed: list[Span], reasoning: list[Span]) -> tuple[list[Call], list[Span]]:
        if self.fmt is not None and self.fmt not in BARE:
            return [], []
        segments = _outside(len(self.scan.text), consumed + reasoning, self.scan.text)
        if self.fmt in (None, "pythonic") and len(segments) == 1:
            calls, notes = py.whole_text_pythonic(self.scan, *segments[0])
            if calls:
                self.notes.extend(notes)
                return calls, [Span(*segments[0])]
        if self.fmt == "pythonic":
            return [], []
        return self.bare_json(consumed)

    def bare_json(self, consumed: list[Span]) -> tuple[list[Call], list[Span]]:
        text = self.scan.text
        if "{" not in text and "[" not in text:
            return [], []
        candidates, _ = extract_candidates(self.document, deadline=self.scan.deadline)
        usable = [
            c
            for c in candidates
            if not c.synthetic
            and not any(_overlap(c.span, s) for s in consumed)
            and _inside(c.span, self.extra_thinking) is None
            and not any(b.start <= c.span.start < b.end < c.span.end for b in self.thinking)
        ]
        taken: list[tuple[Span, list[Call]]] = []
        for strict in (True, False):
            for candidate in usable:
                span = candidate.span
                if any(_overlap(span, s) for s, _ in taken):
                    continue
                if strict:
                    try:
                        value = json.loads(candidate.text)
                    except (ValueError, RecursionError):
                        continue
                    notes: tuple[Diagnostic, ...] = ()
                    truncated = False
                else:
                    parsed = lenient_json(self.scan, span.start, span.end)
                    if parsed is None:
                        continue
                    value, notes, truncated = parsed
                doc = read_document(self.scan, value, span.start, span.end, bare=True)
                if doc is None or not doc.calls:
                    continue
                # a cut-off list: the items before the cut are whole calls
                whole = (
                    closed_items(self.scan, span.start, span.end)
                    if truncated and isinstance(value, list) and len(value) == len(doc.calls)
                    else 0
                )
                for index, call in enumerate(doc.calls):
                    call.notes.extend(notes)
                    call.complete = call.complete and (not truncated or index < whole)
                    if doc.format != "json":
                        call.format = doc.format
                taken.append((span, doc.calls))
        taken.sort(key=lambda t: t[0].start)
        calls = [c for _, cs in taken for c in cs]
        if self.scan.registry is not None:
            calls, ignored = _vet_bare(self.scan, calls)
            self.notes.extend(ignored)
        kept = {id(c) for c in calls}
        return calls, [s for s, cs in taken if any(id(c) in kept for c in cs)]

    # -- content ------------------------------------------------------------------------------

    def content(self, consumed: list[Span], reasoning: list[Span]) -> str:
        text = self.scan.text
        pieces = [
            _END_TOKENS.sub("", text[start:end]).strip()
            for start, end in _outside(len(text), consumed + reasoning, text)
        ]
        joined = fences.drop_empty("\n".join(p for p in pieces if p))
        return _BLANK_LINES.sub("\n\n", joined).strip()

    def reasoning_text(self, reasoning: list[Span]) -> str:
        text = self.scan.text
        pieces = []
        for span in sorted(reasoning, key=lambda s: s.start):
            inner = _THINK_TAGS.sub("", drop_reasoning_tags(text[span.start : span.end])).strip()
            if inner:
                pieces.append(inner)
        return "\n".join(pieces)


_BLANK_LINES = re.compile(r"\n\s*\n")
_THINK_TAGS = re.compile(r"\[/?THINK\]|<\|(?:open|close)\|>think<\|sep\|>")


def _thought(hit: Hit, block: Span) -> bool:
    """Whether ``hit``, read from a marker inside the reasoning ``block``, is a call the
    model wrote there (whole, inside the block) rather than words about the format.
    Incomplete calls in it, and those read only by a guess, are dropped; its notes go with
    them."""
    if hit.end > block.end:
        return False
    hit.calls = [
        c for c in hit.calls if c.complete and not any(n.risk is Risk.GUESS for n in c.notes)
    ]  # (a placeholder such as {...} needs a guess to read: words, not a call)
    hit.notes = []
    return bool(hit.calls)


def _names(calls: list[Call]) -> str:
    seen: list[str] = []
    for call in calls:
        if call.format not in seen:
            seen.append(call.format)
    return "+".join(seen)


def _vet_bare(scan: Scan, calls: list[Call]) -> tuple[list[Call], list[Diagnostic]]:
    """With a registry, bare JSON counts as a call only when it names a (nearly) known tool."""
    registry = scan.registry
    assert registry is not None
    kept, notes = [], []
    for call in calls:
        if call.name in registry or registry.closest(call.name) is not None:
            kept.append(call)
        else:
            notes.append(
                scan.note(
                    codes.TOOLS_NOT_A_CALL,
                    f"JSON naming {call.name!r}, which is no registered tool, was taken as text",
                    call.start,
                    call.end,
                )
            )
    return kept, notes


def _inside(span: Span, blocks: list[Span] | tuple[Span, ...]) -> Span | None:
    """The block of ``blocks`` that holds ``span`` wholly (``None`` when none does)."""
    return next((b for b in blocks if b.start <= span.start and span.end <= b.end), None)


def _freeze(call: Call, reasoning: list[Span] | tuple[Span, ...]) -> ToolCall:
    span = Span(call.start, call.end)
    return ToolCall(
        id=call.id,
        name=call.name,
        arguments=call.arguments,
        span=span,
        format=call.format,
        in_reasoning=call.format != "harmony" and _inside(span, reasoning) is not None,
        complete=call.complete,
        diagnostics=tuple(call.notes),
    )


def _overlap(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def _outside(length: int, spans: list[Span], text: str) -> list[tuple[int, int]]:
    """The stretches of ``[0, length)`` not covered by ``spans``, without blank ones."""
    out = []
    pos = 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start > pos:
            out.append((pos, span.start))
        pos = max(pos, span.end)
    if pos < length:
        out.append((pos, length))
    return [(s, e) for s, e in out if text[s:e].strip()]


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and (text[start].isspace() or text[start] == "\ufeff"):
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
