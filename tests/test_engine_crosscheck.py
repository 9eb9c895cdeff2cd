"""llmfix's parser against json-repair: every disagreement is recorded with the right side.

``python -m tests.engine_crosscheck`` prints them; ``--write`` records a reviewed change.
"""

from __future__ import annotations

import json

from tests.engine_crosscheck import RECORD, disagreements, generated_scores, verdicts


def test_every_disagreement_is_recorded_with_the_reading_that_is_right() -> None:
    _, _, found = disagreements()
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    now = verdicts(found)
    changed = {
        case: (recorded.get(case, "agree"), now.get(case, "agree"))
        for case in recorded.keys() | now.keys()
        if recorded.get(case) != now.get(case)
    }
    assert changed == {}, "run python -m tests.engine_crosscheck and judge (recorded, now)"


def test_generated_breakage_is_read_right_by_our_parser() -> None:
    scores = generated_scores()
    assert scores["llmfix"] == scores["cases"]
    assert scores["json-repair"] < scores["cases"]  # the generator exercises real differences


def test_the_json_repair_engine_says_so_wherever_the_engines_disagree() -> None:
    from llmfix.options import Limits
    from llmfix.parse.core import parse_json

    _, _, found = disagreements()
    silent = []
    for d in found:
        outcome = parse_json(d.case.text, engine="json-repair", limits=Limits(time_budget=0))
        codes = [diagnostic.code for diagnostic in outcome.diagnostics]
        if not outcome.strict and "parse.json_repair" not in codes:  # strict JSON: not repaired
            silent.append(d.case.id)
    assert (len(found) > 50, silent) == (True, [])
