"""The LLM repair loop: ask, verify, keep the best, stop — bounded and recorded.

One bounded loop whose steps (ask, verify, keep the best, stop, record) share its state;
the continuation attempts (:mod:`llmfix.llm.continue_attempt`), the prompt, the partial
merge, the continuation's prefix and seam, retries, the run's budgets
(:mod:`llmfix.llm.budget`) and the cache are modules of their own.

:func:`llm_repair` takes a response the pipeline could not make valid and asks the
configured model to fix it, at most ``config.max_attempts`` times. An answer cut off by the
token limit is first *continued* (:mod:`llmfix.llm.continuation`; attempt kind
``continuation``): the model is asked for what follows its valid beginning, and the two
are joined and verified. A join that is whole but invalid goes on through the steps below;
one that does not join leaves the rules' result as it was (the model is never asked to
rewrite a cut-off answer). Otherwise:

1. The prompt (:mod:`llmfix.llm.prompt`) shows the validation errors of the best value so
   far, hints for the mistakes seen, the original output (cut) and the schema; from the
   second attempt on, the previous answer and its errors. When most of the value is valid
   it asks for the failing properties only (:mod:`llmfix.llm.subset`) and merges them back.
2. Every answer goes back through the whole pipeline (extract, parse, schema repair,
   validate) with :func:`llmfix.pipeline.core.repair_text`. A valid one ends the loop: status
   ``llm_repaired``, a ``llm.repaired`` diagnostic with risk ``guess``, and the changes
   from the value before as JSON Patch operations (rule ``llm.repair``).
3. Otherwise the best candidate so far is kept (fewest errors; a parsed value beats none).
   After the last failed attempt the result is ``invalid`` (``unparseable`` if no value was
   ever read), with the remaining field-level errors and ``llm.output_validation_failed``
   (``data.code`` = ``OUTPUT_VALIDATION_FAILED``).

Transport trouble is not a repair attempt's business: retries happen inside the provider,
a provider that stays unavailable, answers with something that is not an API response, or
refuses one request (a 400) stops the loop with a warning (``llm.provider_unavailable``,
``llm.bad_response``, ``llm.request_rejected``) and the best value so far — the rules'
result itself when no answer came — and what went wrong is never put into a prompt. A bad
key, refused access or an unknown model (HTTP 401/403/404) raises
:class:`~llmfix.errors.ProviderError`: every response would fail the same way.

Each attempt is recorded as an :class:`Attempt` (prompt, raw answer, status, errors,
duration, tokens), with personal data and keys redacted unless ``config.redact`` is off;
``config.save_prompts`` also writes each one to a JSON file.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.errors import ConfigError, InputError
from llmfix.files.atomic import write_atomic
from llmfix.llm.budget import CallBudget
from llmfix.llm.cache import AnswerCache, cache_key
from llmfix.llm.config import LlmConfig
from llmfix.llm.continuation import CUT_OFF_CODES, is_cut_off
from llmfix.llm.continue_attempt import continue_cut_off
from llmfix.llm.prompt import (
    PartialRequest,
    PreviousAttempt,
    build_messages,
    error_lines,
    hints_for,
    render,
)
from llmfix.llm.providers import (
    BudgetSpent,
    Completion,
    Meter,
    Provider,
    ProviderBadResponse,
    ProviderRefused,
    ProviderUnavailable,
    make_provider,
)
from llmfix.llm.redact import redact, scrub
from llmfix.llm.subset import merge, plan_partial
from llmfix.model import Diagnostic, PatchOp, Result, Risk, Severity, Status, Timings
from llmfix.options import RepairOptions
from llmfix.pipeline.core import repair_text

if TYPE_CHECKING:
    from llmfix.schema.validate import SchemaValidator

STAGE = "llm"
OUTPUT_VALIDATION_FAILED = "OUTPUT_VALIDATION_FAILED"

# Statuses of a recorded attempt besides the Status values of its answer.
ATTEMPT_ERROR = "error"  # no answer: the provider failed (message in Attempt.error)

_FATAL_STATUS = frozenset({401, 403, 404})


@dataclass(frozen=True)
class Attempt:
    """One question to the model and what came of it."""

    number: int  # 1-based
    kind: str  # "whole", "partial" or "continuation" (of a cut-off answer)
    prompt: str  # the messages, rendered ([system] / [user]); redacted unless told not to
    answer: str | None  # the raw answer text; None when the provider failed
    status: str  # the Status of the answer through the pipeline, or "error"
    errors: tuple[str, ...]  # what was still wrong with the answer ("/pointer: message")
    duration: float  # seconds, request and verification
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False  # answered from the cache: no request, no tokens paid
    mode: str = ""  # how JSON was asked for (structured mode, "tool", "text")
    retries: int = 0  # transport retries inside this attempt
    error: str | None = None  # the provider failure (never shown to the model)
    # HTTP requests that reached the provider: retries and structured-mode fallbacks
    # included; a try that never connected (refused, DNS, TLS) is not one
    requests: int = 0
    finish_reason: str | None = None  # why the answer stopped, as the API said it
    grammar: bool = False  # a continuation asked with a grammar of the rest of the value

    @property
    def called(self) -> bool:
        """Whether this attempt sent a request (a cache hit did not)."""
        return not self.cached

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "number": self.number,
            "kind": self.kind,
            "status": self.status,
            "prompt": self.prompt,
            "answer": self.answer,
            "errors": list(self.errors),
            "duration": round(self.duration, 6),
            "tokens": {"input": self.input_tokens, "output": self.output_tokens},
            "cached": self.cached,
            "mode": self.mode,
            "retries": self.retries,
            "requests": self.requests,
        }
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason
        if self.grammar:
            out["grammar"] = True
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class LlmRepairOutcome:
    """The final result and every attempt that led to it."""

    result: Result
    attempts: tuple[Attempt, ...] = ()
    provider: str | None = None
    model: str | None = None

    @property
    def calls(self) -> int:
        """HTTP requests that reached the model: retries and fallbacks counted; cache hits
        and tries that never connected not."""
        return sum(a.requests for a in self.attempts)

    @property
    def cached(self) -> int:
        """Answers taken from the cache (no request)."""
        return sum(1 for a in self.attempts if a.cached)

    @property
    def input_tokens(self) -> int:
        return sum(a.input_tokens for a in self.attempts if a.called)

    @property
    def output_tokens(self) -> int:
        return sum(a.output_tokens for a in self.attempts if a.called)

    def to_dict(self) -> dict[str, Any]:
        """The ``llm`` part of a report item."""
        return {
            "provider": self.provider,
            "model": self.model,
            "calls": self.calls,
            "cached": self.cached,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens},
            "attempts": [a.to_dict() for a in self.attempts],
        }


# What says an answer is not all there, or not an answer: the API's stop reason (a cut-off
# or refused response, a saved stream that hit the token limit) or the text itself ending
# inside a value. A model asked to "repair" such an answer invents the missing part (and
# may rewrite what was there), so it keeps the rules' result and its diagnostics.
CUT_OFF_OR_REFUSED = frozenset(
    {"response.cut_off", "response.refused", "stream.cut_off", "parse.cut_off", "parse.truncated"}
)


def wants_llm(result: Result, config: LlmConfig) -> bool:
    """Whether LLM repair has something to do for ``result`` with ``config``: it
    :func:`needs_llm`, or it was cut off and ``config.continuation`` is on."""
    return needs_llm(result) or (config.continuation and is_cut_off(result))


def needs_llm(result: Result) -> bool:
    """Whether LLM repair has something to do for ``result``: it is ``invalid`` or
    ``unparseable``, and neither cut off nor refused (see :data:`CUT_OFF_OR_REFUSED`)."""
    if result.status not in (Status.INVALID, Status.UNPARSEABLE):
        return False
    return not any(d.code in CUT_OFF_OR_REFUSED for d in result.diagnostics)


def llm_repair(
    text: str,
    first: Result,
    *,
    validator: SchemaValidator | None,
    config: LlmConfig,
    provider: Provider | None = None,
    options: RepairOptions | None = None,
    budget: CallBudget | None = None,
    cache: AnswerCache | None = None,
    name: str | None = None,
) -> LlmRepairOutcome:
    """Ask the model to repair ``text`` (whose pipeline result is ``first``), verified.

    ``provider`` defaults to :func:`make_provider` (``config``), closed afterwards; pass
    one (and a :class:`CallBudget`) when repairing many responses. ``name`` names the
    response in ``save_prompts`` files. Raises :class:`~llmfix.errors.ConfigError` when no
    model is configured and :class:`~llmfix.errors.ProviderError` for HTTP 401/403/404.
    """
    if not wants_llm(first, config):
        return LlmRepairOutcome(first)
    config.require_model()
    own_provider = provider is None
    active = provider if provider is not None else make_provider(config)
    try:
        return _Loop(text, first, validator, config, active, options, budget, cache, name).run()
    finally:
        if own_provider:
            active.close()


def _rank(result: Result) -> tuple[int, int]:
    if result.ok:
        return (0, 0)
    return (1 if result.status is Status.INVALID else 2, len(result.errors))


class _Loop:
    def __init__(
        self,
        text: str,
        first: Result,
        validator: SchemaValidator | None,
        config: LlmConfig,
        provider: Provider,
        options: RepairOptions | None,
        budget: CallBudget | None,
        cache: AnswerCache | None,
        name: str | None,
    ) -> None:
        self.text = text
        self.first = first
        self.validator = validator
        self.config = config
        self.provider = provider
        self.options = replace(options or RepairOptions(), pick="best", partial=False)
        self.budget = budget if budget is not None else CallBudget.for_config(config)
        self.cache = (
            cache
            if cache is not None
            else (AnswerCache(config.cache_dir) if config.cache else None)
        )
        self.name = name
        self.schema = validator.schema if validator is not None else None
        self.schema_name = validator.spec.name if validator is not None else None
        try:
            self.secrets: tuple[str, ...] = tuple(s for s in [config.resolve_api_key()] if s)
        except ConfigError:
            self.secrets = ()
        self.attempts: list[Attempt] = []
        self.sent = 0  # HTTP requests of the current attempt
        self.unreached = 0  # of those, tries that never reached the provider

    @property
    def reached(self) -> int:
        """The current attempt's requests that reached the provider."""
        return max(0, self.sent - self.unreached)

    def _meter(self) -> bool:
        """Asked by the provider before each request: count it against the budget."""
        if not self.budget.take():
            return False
        self.sent += 1
        return True

    # ---------------------------------------------------------------------- the loop

    def run(self) -> LlmRepairOutcome:
        started = time.perf_counter()
        best, text, stopped, success = self.first, self.text, None, None
        number = 0
        if self.config.continuation and is_cut_off(self.first):
            number, best, text, stopped, success = continue_cut_off(self)
            if success is None and (stopped is not None or best is self.first):
                return self._outcome(self._failed(best, stopped, time.perf_counter() - started))
        if success is None:
            success, best, stopped = self._repair(number, best, text)
        elapsed = time.perf_counter() - started
        if success is not None:
            return self._outcome(self._succeeded(success, elapsed))
        return self._outcome(self._failed(best, stopped, elapsed))

    def _outcome(self, result: Result) -> LlmRepairOutcome:
        return LlmRepairOutcome(
            result=result,
            attempts=tuple(self.attempts),
            provider=self.provider.name,
            model=self.provider.model,
        )

    def _repair(
        self, done: int, best: Result, text: str
    ) -> tuple[Result | None, Result, Diagnostic | None]:
        """The repair loop, from attempt ``done + 1``: the successful result (or
        ``None``), the best one so far, and why the model stopped being asked."""
        first = self.first
        hints = hints_for(first.diagnostics, first.candidate.origin if first.candidate else None)
        previous: PreviousAttempt | None = None
        stopped: Diagnostic | None = None
        for number in range(done + 1, self.config.max_attempts + 1):
            partial = None
            if self.config.partial and best.value is not None:
                partial = plan_partial(best.value, best.errors, self.schema)
            messages = build_messages(
                original=text,
                errors=error_lines(best.errors),
                schema=self.schema,
                hints=hints,
                max_chars=self.config.max_output_chars,
                previous=previous,
                partial=partial,
            )
            request_schema = partial.schema if partial is not None else self.schema
            kind = "whole" if partial is None else "partial"
            prompt = self._record(render(messages))
            clock = time.perf_counter()
            completion, stopped = self._ask(messages, request_schema)
            if completion is None:
                self._record_failure(number, kind, prompt, stopped, clock)
                break
            result = self._evaluate(completion.text, partial)
            errors = error_lines(result.errors)
            self._record_answer(
                number, kind, prompt, completion, result.status.value, errors, clock
            )
            if result.ok:
                return result, best, None
            if _rank(result) < _rank(best):
                best = result
            previous = PreviousAttempt(completion.text, tuple(errors))
        return None, best, stopped

    def _record_failure(
        self, number: int, kind: str, prompt: str, stopped: Diagnostic | None, clock: float
    ) -> None:
        """Record an attempt that got no answer (not when nothing was sent because the
        budget was already spent)."""
        if stopped is None or (stopped.code == "llm.budget_exhausted" and not self.sent):
            return
        self.attempts.append(
            Attempt(
                number=number,
                kind=kind,
                prompt=prompt,
                answer=None,
                status=ATTEMPT_ERROR,
                errors=(),
                duration=time.perf_counter() - clock,
                error=stopped.message,
                requests=self.reached,
            )
        )
        self._save(self.attempts[-1])

    def _record_answer(
        self,
        number: int,
        kind: str,
        prompt: str,
        completion: Completion,
        status: str,
        errors: list[str],
        clock: float,
    ) -> None:
        attempt = Attempt(
            number=number,
            kind=kind,
            prompt=prompt,
            answer=self._record(completion.text),
            status=status,
            errors=tuple(self._record(e) for e in errors),
            duration=time.perf_counter() - clock,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cached=completion.cached,
            mode=completion.mode,
            retries=completion.retries,
            requests=0 if completion.cached else self.reached,
            finish_reason=completion.finish_reason,
            grammar=completion.grammar,
        )
        self.attempts.append(attempt)
        self._save(attempt)

    def _ask(
        self, messages: list[dict[str, str]], schema: Any
    ) -> tuple[Completion | None, Diagnostic | None]:
        """The answer (cached or requested), or the reason there is none."""
        return self._request(
            messages,
            schema,
            lambda meter: self.provider.complete_json(
                messages,
                schema,
                temperature=self.config.temperature,
                max_tokens=self.budget.output_room(self.config.max_tokens),
                timeout=self.config.timeout,
                schema_name=self.schema_name,
                meter=meter,
            ),
        )

    def _request(
        self, question: Any, schema: Any, send: Callable[[Meter], Completion]
    ) -> tuple[Completion | None, Diagnostic | None]:
        """The answer to ``question`` from the cache, or ``send`` (metered), or the
        reason there is none; tokens of a request counted against the budget."""
        self.sent = 0  # (an answer the breaker or the cache gave sent nothing)
        self.unreached = 0
        key = None
        if self.cache is not None:
            key = cache_key(
                provider=self.provider.name,
                base_url=self.provider.base_url,
                model=self.provider.model,
                messages=question if isinstance(question, list) else [question],
                schema=schema,
                temperature=self.config.temperature,
            )
            hit = self.cache.get(key)
            if hit is not None:
                return replace(hit, cached=True), None
        if self.budget.provider_down:
            return None, codes.LLM_PROVIDER_UNAVAILABLE.at(
                f"not sent to the model: the provider was unavailable for the last "
                f"{self.budget.unavailable_in_a_row} requests in a row, so this run goes on "
                "without it",
                hint="check the provider and run again; the rules' result is kept",
            )
        if self.budget.remaining == 0:
            return None, self._spent()
        try:
            completion = send(self._meter)
        except BudgetSpent as error:  # a retry or a fallback the limit left no room for
            self._tried(error, available=None)
            return None, self._spent()
        except ProviderBadResponse as error:
            self._tried(error, available=False)
            return None, codes.LLM_BAD_RESPONSE.at(
                scrub(str(error), self.secrets),
                hint="the provider's answer was not an API response (check the base URL); "
                "the best value so far is kept",
            )
        except ProviderUnavailable as error:
            self._tried(error, available=False)
            return None, codes.LLM_PROVIDER_UNAVAILABLE.at(
                scrub(str(error), self.secrets),
                hint="the model could not be reached; the best value so far is kept",
            )
        except ProviderRefused as error:
            self._tried(error, available=True)
            if error.status is None or error.status in _FATAL_STATUS:
                raise
            return None, codes.LLM_REQUEST_REJECTED.at(
                scrub(str(error), self.secrets),
                hint="the provider refused this request; the best value so far is kept",
            )
        self._tried(completion, available=True)
        self.budget.spend(completion.input_tokens, completion.output_tokens)
        if key is not None and self.cache is not None:
            self.cache.put(key, completion)
        return completion, None

    def _tried(
        self,
        tries: Completion | BudgetSpent | ProviderUnavailable | ProviderRefused,
        *,
        available: bool | None,
    ) -> None:
        """Record how a request went: the provider's availability, its 429s, and its
        tries that never reached the provider (not counted as requests)."""
        self.unreached = tries.unreached
        self.budget.record(available=available, rate_limited=tries.rate_limited)

    def _spent(self) -> Diagnostic:
        """``llm.budget_exhausted``, saying which budget is spent (and, for calls, how many
        of them the provider rate-limited)."""
        budget = self.budget
        if budget.spent_on == "tokens":
            return codes.LLM_BUDGET_EXHAUSTED.at(
                f"not sent to the model: the budget of {budget.max_tokens} tokens for this "
                f"run is spent ({budget.tokens} input + output tokens used)",
                hint="raise --max-llm-tokens",
            )
        if budget.spent_on == "cost":
            return codes.LLM_BUDGET_EXHAUSTED.at(
                f"not sent to the model: the budget of ${budget.max_cost:g} for this run is "
                f"spent (${budget.cost:.4f} used)",
                hint="raise --max-llm-cost",
            )
        limited = budget.rate_limited
        why = ""
        hint = "raise --max-llm-calls"
        if limited:
            why = f" ({limited} of them answered HTTP 429: rate limited)"
            hint = "the provider is rate limiting this run: wait, or lower its request rate"
        return codes.LLM_BUDGET_EXHAUSTED.at(
            f"not sent to the model: the limit of {budget.limit} model calls for "
            f"this run is reached{why}",
            hint=hint,
        )

    def _evaluate(self, answer: str, partial: PartialRequest | None) -> Result:
        """The answer through the whole pipeline (merged into the valid part if partial)."""
        if partial is not None:
            parsed = repair_text(answer, options=self.options)
            merged = merge(partial, parsed.value) if parsed.value is not None else None
            if merged is not None:
                answer = json.dumps(merged, ensure_ascii=False)
        return repair_text(answer, options=self.options, validator=self.validator)

    # ------------------------------------------------------------------- the result

    def _succeeded(self, answer: Result, elapsed: float) -> Result:
        first = self.first
        number = len(self.attempts)
        continued = bool(self.attempts) and self.attempts[-1].kind == "continuation"
        how = "continued" if continued else "repaired"
        diagnostics = [d for d in first.diagnostics if d.severity is not Severity.ERROR]
        if continued:  # the cut is mended: what said it was cut off no longer holds
            diagnostics = [d for d in diagnostics if d.code not in CUT_OFF_CODES]
        diagnostics.append(
            codes.LLM_REPAIRED.at(
                f"{how} by {self.provider.name} model {self.provider.model} on attempt "
                f"{number} of {self.config.max_attempts}",
                risk=Risk.GUESS,
                rule="llm.repair",
                hint="a model rewrote this value: check it before trusting it",
                data=self._data(),
            )
        )
        return Result(
            status=Status.LLM_REPAIRED,
            value=answer.value,
            diagnostics=tuple(diagnostics),
            patch=first.patch + tuple(_changes(first.value, answer.value, _had_value(first))),
            attempts=number,
            timings=Timings({**first.timings.stages, STAGE: elapsed}),
            candidate=first.candidate,
        )

    def _failed(self, best: Result, stopped: Diagnostic | None, elapsed: float) -> Result:
        first = self.first
        number = len([a for a in self.attempts if a.answer is not None])
        from_answer = best is not first
        errors = list(best.errors)
        if from_answer:  # spans into an answer mean nothing in the raw input
            errors = [replace(d, span=None, position=None) for d in errors]
            diagnostics = [d for d in first.diagnostics if d.severity is not Severity.ERROR]
            diagnostics += errors
        else:  # no answer did better: the rules' result as it was, then what the model did
            diagnostics = list(first.diagnostics)
        if stopped is not None:
            diagnostics.append(replace(stopped, data=self._data()))
        if number >= self.config.max_attempts:
            plural = "attempt" if number == 1 else "attempts"
            left = len(errors)
            diagnostics.append(
                codes.LLM_OUTPUT_VALIDATION_FAILED.at(
                    f"{OUTPUT_VALIDATION_FAILED}: still not valid after {number} model "
                    f"{plural} ({left} error{'s' if left != 1 else ''} left)",
                    hint="see the attempts in the report; raise --max-attempts or use a "
                    "stronger model",
                    data={"code": OUTPUT_VALIDATION_FAILED, **self._data()},
                )
            )
        patch = first.patch
        if from_answer:
            patch += tuple(_changes(first.value, best.value, _had_value(first)))
        if not from_answer:
            status = first.status  # (a cut-off answer stays truncated)
        elif best.status in (Status.UNPARSEABLE, Status.TRUNCATED):
            status = best.status
        else:
            status = Status.INVALID
        return Result(
            status=status,
            value=best.value,
            diagnostics=tuple(diagnostics),
            patch=patch,
            attempts=number,
            timings=Timings({**first.timings.stages, STAGE: elapsed}),
            candidate=first.candidate,
        )

    def _data(self) -> dict[str, Any]:
        called = [a for a in self.attempts if a.called]
        return {
            "provider": self.provider.name,
            "model": self.provider.model,
            "attempts": len(self.attempts),
            "calls": sum(a.requests for a in called),
            "input_tokens": sum(a.input_tokens for a in called),
            "output_tokens": sum(a.output_tokens for a in called),
        }

    # ------------------------------------------------------------------- recording

    def _record(self, text: str) -> str:
        text = scrub(text, self.secrets)
        return redact(text) if self.config.redact else text

    def _save(self, attempt: Attempt) -> None:
        if not self.config.save_prompts:
            return

        directory = Path(self.config.save_prompts).expanduser()
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputError(str(directory), f"cannot create: {error.strerror or error}") from None
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(self.name).name if self.name else "response")
        digest = hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        record = {
            "source": self.name,
            "provider": self.provider.name,
            "model": self.provider.model,
            **attempt.to_dict(),
        }
        path = directory / f"{stem}.{digest}.attempt-{attempt.number}.json"
        write_atomic(path, json.dumps(record, ensure_ascii=False, indent=2) + "\n")


def _had_value(result: Result) -> bool:
    return result.status is not Status.UNPARSEABLE


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _changes(before: Any, after: Any, had_value: bool) -> list[PatchOp]:
    """JSON Patch operations (rule ``llm.repair``, risk guess) turning ``before`` into ``after``."""
    if before is None and not had_value:
        return [_op("add", "", after, None, after)]
    return _diff(before, after, "")


def _diff(before: Any, after: Any, path: str) -> list[PatchOp]:
    if _same(before, after):
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        ops = [
            _op("remove", f"{path}/{_escape(k)}", None, v, None)
            for k, v in before.items()
            if k not in after
        ]
        for key, value in after.items():
            child = f"{path}/{_escape(key)}"
            if key in before:
                ops += _diff(before[key], value, child)
            else:
                ops.append(_op("add", child, value, None, value))
        return ops
    return [_op("replace", path, after, before, after)]


def _op(op: str, path: str, value: Any, before: Any, after: Any) -> PatchOp:
    return PatchOp(
        op=op,
        path=path,
        value=value,
        rule="llm.repair",
        risk=Risk.GUESS,
        before=before,
        after=after,
        message=f"changed by the model ({op} {path or '/'})",
    )
