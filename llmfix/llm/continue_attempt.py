"""The continuation attempts of the LLM repair loop (:mod:`llmfix.llm.loop`): a cut-off
answer continued from its valid beginning, joined, and verified, while what it joins to is
still cut off and attempts are left.

The pieces (the prefix, the seam, the request, the joins) are :mod:`llmfix.llm.continuation`;
this module asks the model through the loop (its cache, budget and records:
:class:`LoopState`) and decides what each answer is worth: a whole valid answer ends the
loop, a whole invalid one goes on to the repair steps, one still cut off is continued
again, one that does not join is asked once more with the prompt (a server may have taken
the prefill as a finished message) or leaves the rules' result as it was.

Each continuation goes with a grammar of the rest of the value
(:mod:`llmfix.llm.grammar`) when ``config.continuation_grammar`` is on and the provider
can send one (:class:`Constrained`); the provider decides whether the server gets it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from llmfix.llm.budget import CallBudget
from llmfix.llm.config import LlmConfig
from llmfix.llm.continuation import (
    ContinuationRequest,
    continuation_request,
    continuation_tokens,
    is_cut_off,
    joins,
    prefix_of,
    started_over,
    strict_json,
)
from llmfix.llm.grammar import continuation_grammar
from llmfix.llm.prompt import error_lines, render
from llmfix.llm.providers import Completion, Meter, Provider
from llmfix.model import Diagnostic, Result, Risk, Status
from llmfix.options import RepairOptions
from llmfix.pipeline.core import repair_text

if TYPE_CHECKING:
    from llmfix.schema.validate import SchemaValidator


class LoopState(Protocol):
    """What the continuation attempts use of the repair loop."""

    text: str
    first: Result
    schema: Any
    config: LlmConfig
    provider: Provider
    options: RepairOptions
    validator: SchemaValidator | None
    budget: CallBudget

    def _record(self, text: str) -> str: ...

    def _record_answer(
        self,
        number: int,
        kind: str,
        prompt: str,
        completion: Completion,
        status: str,
        errors: list[str],
        clock: float,
    ) -> None: ...

    def _record_failure(
        self, number: int, kind: str, prompt: str, stopped: Diagnostic | None, clock: float
    ) -> None: ...

    def _request(
        self, question: Any, schema: Any, send: Callable[[Meter], Completion]
    ) -> tuple[Completion | None, Diagnostic | None]: ...


@dataclass(frozen=True)
class Constrained:
    """A continuation asked with a grammar: ``request`` for the prefill the grammar
    starts after (the prefix, or less of it: token healing), ``grammar`` in GBNF."""

    request: ContinuationRequest
    grammar: str


def constrained_request(
    prefix: str, schema: Any, schema_text: str | None, config: LlmConfig
) -> Constrained | None:
    """The grammar-constrained request for ``prefix``, or ``None`` (turned off, or the
    prefix is not strict JSON so far)."""
    if not config.continuation_grammar:
        return None
    found = continuation_grammar(prefix, schema)
    if found is None:
        return None
    return Constrained(continuation_request(found.prefill, schema_text), found.text)


_JOIN_ORDER = {Status.INVALID: 1, Status.TRUNCATED: 2}

# Stop reasons that say an answer hit the token limit (OpenAI-compatible, Anthropic).
_LIMIT_REASONS = frozenset({"length", "max_tokens", "model_context_window_exceeded"})


def _hit_limit(completion: Completion) -> bool:
    """Whether the answer stopped at the token limit (so there is more to continue)."""
    return (completion.finish_reason or "").lower() in _LIMIT_REASONS


def _clean(result: Result, text: str) -> bool:
    """Whether a joined answer is read without a guess: strict JSON with no key twice, or
    JSON whose only repairs lose nothing (a comment, a trailing comma). A fresh answer
    written after the prefix needs the lenient reader's guesses to join, and a key written
    twice keeps its last value there: neither is a continuation."""
    if strict_json(text):
        return True
    return all(
        d.risk is Risk.LOSSLESS
        for d in result.diagnostics
        if d.stage == "parse" and d.risk is not None
    )


def _join_rank(result: Result) -> tuple[int, int]:
    """How good a joined answer is: ok, then whole but invalid, then still cut off."""
    if result.ok:
        return (0, 0)
    return (_JOIN_ORDER.get(result.status, 3), len(result.errors))


def continue_cut_off(loop: LoopState) -> tuple[int, Result, str, Diagnostic | None, Result | None]:
    """Ask the model to continue the cut-off answer (:mod:`llmfix.llm.continuation`)
    while what it joins to is still cut off and attempts are left.

    Gives the attempts used, the best result and its text, why the model stopped being
    asked, and the joined result when it is ok. When a continuation joined into a whole
    answer that is still invalid, that answer (not the cut-off one) is what the repair
    loop goes on with; when none joined, the rules' result stands (a model asked to
    repair a cut-off answer would invent its end and may rewrite its beginning)."""
    prefix = prefix_of(loop.text, loop.first)
    schema_text = json.dumps(loop.schema, ensure_ascii=False) if loop.schema else None
    number = 0
    prefill = True
    while prefix is not None and number < loop.config.max_attempts:
        number += 1
        request = continuation_request(prefix, schema_text)
        constrained = constrained_request(prefix, loop.schema, schema_text, loop.config)
        clock = time.perf_counter()
        completion, stopped = _ask(loop, request, prefill, constrained)
        # what was asked: with a grammar, the healed prefill (the answer starts before)
        asked = request
        if constrained is not None and completion is not None and completion.grammar:
            asked = constrained.request
        prompt = loop._record(render(asked.prefill if prefill else asked.prompt))
        if completion is None:
            loop._record_failure(number, "continuation", prompt, stopped, clock)
            return number, loop.first, loop.text, stopped, None
        joined, joined_text = _join(loop, prefix, completion.text, asked.prefix)
        if joined is not None and is_cut_off(joined) and not _hit_limit(completion):
            joined = joined_text = None  # it stopped by itself and left it unfinished
        status = joined.status.value if joined is not None else "unjoined"
        errors = error_lines(joined.errors) if joined is not None else []
        loop._record_answer(number, "continuation", prompt, completion, status, errors, clock)
        if joined is None or joined_text is None:
            if completion.mode != "prefill":
                break
            # A prefill that did not join: the server may have taken the prefix as a
            # finished message (llama-cpp-python's does) and the model answered anew.
            # The next attempt shows the prefix in a prompt; when the answer started
            # over, the server is known to ignore prefills, in later runs too.
            if started_over(prefix, completion.text):
                loop.provider.prefill_ignored()
            prefill = False
            continue
        if joined.ok:
            return number, joined, joined_text, None, joined
        if not is_cut_off(joined):  # whole, but invalid: the repair loop goes on with it
            return number, joined, joined_text, None, None
        prefix = prefix_of(joined_text, joined)  # cut off again: continue the longer one
    return number, loop.first, loop.text, None, None


def _join(
    loop: LoopState, prefix: str, continuation: str, base: str
) -> tuple[Result | None, str | None]:
    """The best result of the texts the prefill ``base`` (the prefix, or less of it when
    healed) and the continuation make (see :func:`~llmfix.llm.continuation.joins`), among
    those that hold the whole prefix and whose value starts where the
    prefix does and that are strict JSON or need no more than lossless repairs (a comment
    the model added; or are still cut off: then it is only the longer prefix of the next
    continuation): an ok one at once, else the least broken."""
    found: tuple[Result, str] | None = None
    for text in joins(base, continuation):
        if not text.startswith(prefix):
            continue  # a healed prefill's rest that does not write the dropped text
        result = repair_text(text, options=loop.options, validator=loop.validator)
        candidate = result.candidate
        if candidate is None or candidate.synthetic or candidate.span.start != 0:
            continue  # a value written after the prefix, not a continuation of it
        if not is_cut_off(result) and not _clean(result, candidate.text):
            continue  # joined only by the lenient reader's guesses: not cleanly
        if result.ok:
            return result, text
        if found is None or _join_rank(result) < _join_rank(found[0]):
            found = (result, text)
    return found if found is not None else (None, None)


def _ask(
    loop: LoopState, request: ContinuationRequest, prefill: bool, constrained: Constrained | None
) -> tuple[Completion | None, Diagnostic | None]:
    """The continuation (cached or requested), or the reason there is none."""
    question: dict[str, Any] = {
        "continuation": True,
        "prefill": prefill,
        "messages": list(request.prefill),
    }
    if constrained is not None:
        question["grammar"] = constrained.grammar
    return loop._request(
        question,
        None,
        lambda meter: loop.provider.complete_continuation(
            request,
            temperature=loop.config.temperature,
            max_tokens=loop.budget.output_room(
                continuation_tokens(request.prefix, loop.config.max_tokens)
            ),
            timeout=loop.config.timeout,
            meter=meter,
            prefill=prefill,
            constrained=constrained,
        ),
    )
