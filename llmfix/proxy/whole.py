"""A whole (not streamed) response, checked as ``llmfix check`` checks a saved one.

The answers are read out of the response by :func:`llmfix.inputs.items_from_text` (the
text of an OpenAI chat completion, a Responses object or an Anthropic message, and each
tool call's arguments), each is checked by :func:`llmfix.batch.core.check_item` (the stop
reason applied: a cut-off answer is ``truncated``, a refused one ``refused``) and judged by
the run's gate. What passes and was repaired is written back into the response
(:func:`llmfix.inputs.fixed_record`); what fails is left as the model wrote it, for the
policy to decide (see :mod:`llmfix.proxy.app`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmfix.model import Result, Status
from llmfix.proxy.verdict import Verdict, verdict_of

if TYPE_CHECKING:
    from llmfix.inputs import Item
    from llmfix.proxy.expect import Expectation
    from llmfix.run.llm import LlmRun
    from llmfix.run.settings import RepairRun
    from llmfix.schema.validate import SchemaValidator

# The model's repair of one answer the rules left failing: (its text, the rules' result,
# the schema it must match, a name for the model's records) → the model's result.
ModelRepair = Callable[[str, Result, "SchemaValidator | None", str], Result]


@dataclass(frozen=True)
class Checked:
    """A whole response's verdict, and its body with the repairs made (``None``: the
    body is to be sent as it came)."""

    verdict: Verdict
    body: Any = None


def check_whole(
    text: str, expect: Expectation, run: RepairRun, model: ModelRepair | None = None
) -> Checked:
    """Check the answers of the response ``text`` (its JSON) that ``expect`` covers."""
    # (start-up: loaded by the first response the proxy checks)
    from llmfix.batch.core import Profile, check_item
    from llmfix.batch.gate import gate_failures
    from llmfix.inputs import ReadOptions, fixed_record, items_from_text
    from llmfix.inputs.items import changed_only_by_reading

    profile = Profile(validator=expect.validator, options=run.options, tools=expect.tools)
    items = items_from_text(text, "<response>", ReadOptions(kind="json"), "json")
    checked: list[tuple[Item, Result, list[str]]] = []
    for item in items:
        if item.error is not None or not _covered(item, expect):
            continue
        result = check_item(item, profile)
        failures = gate_failures(result, run.fail_on, run.max_risk, partial=run.options.partial)
        if failures and model is not None and _mendable(item, expect):
            validator = expect.validator if item.tool is None else expect.tools.get(item.tool)
            result = model(item.text, result, validator, item.id)
            failures = gate_failures(result, run.fail_on, run.max_risk, partial=run.options.partial)
        checked.append((item, result, failures))
    verdict = verdict_of((result, failures) for _, result, failures in checked)
    changed = [
        (item, result.value)
        for item, result, failures in checked
        if not failures
        and result.status not in (Status.VALID, Status.EXTRACTED)
        and result.value is not None
        and not changed_only_by_reading(result)
    ]
    if not changed or not verdict.passed:
        return Checked(verdict)
    record = copy.deepcopy(changed[0][0].record)
    return Checked(verdict, fixed_record(record, changed))


def _covered(item: Item, expect: Expectation) -> bool:
    """Whether the proxy checks this answer: a tool call always (its arguments must be
    JSON), the text when the request asked for JSON, and a refusal or cut-off answer
    whenever it asked for anything (the API's word must not pass as a good answer)."""
    if item.tool is not None:
        return True
    if expect.json:
        return True
    finish = item.finish
    return finish is not None and finish.kind == "refused" and expect.registry is not None


def _mendable(item: Item, expect: Expectation) -> bool:
    """Whether the model may repair this answer: the text, or a call of a tool the
    request offers (a call of an unknown tool is no JSON problem a model can mend)."""
    return item.tool is None or (expect.registry is not None and item.tool in expect.tools)


def model_repair(llm: LlmRun, run: RepairRun) -> ModelRepair:
    """The opt-in LLM repair of an answer the rules left failing (``--llm``): a text
    answer or a tool call's arguments, whole or streamed; the run's model, its attempts
    and its call budget (``--max-llm-calls``, for the life of the proxy process), one
    repair at a time (the calls run in worker threads, off the proxy's event loop)."""
    import threading

    lock = threading.Lock()

    def repair(text: str, result: Result, validator: SchemaValidator | None, name: str) -> Result:
        with lock:
            repaired, _ = llm.repair(
                text,
                result,
                validator=validator,
                options=run.options,
                name=name,
                max_risk=run.max_risk,
            )
        return repaired

    return repair
