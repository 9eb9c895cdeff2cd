"""SARIF 2.1.0: one result per problem of a failing item; rule ids are diagnostic codes.

Results carry the file and line (and column, in Unicode code points, when the problem's
position maps exactly — see :mod:`llmfix.reporters.base`), a ``partialFingerprints`` entry
built from the item id, code and JSON Pointer (what ``--baseline`` matches on), and, when a
baseline was given, ``baselineState`` ``new`` or ``unchanged``. Validated against the
OASIS SARIF 2.1.0 schema in the tests.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from llmfix.model import Severity
from llmfix.reporters.base import (
    Reporter,
    ReportOptions,
    copy_spool,
    diagnostic_location,
    display_path,
    failing_diagnostics,
    message_with_place,
    spool,
)

if TYPE_CHECKING:
    from llmfix.batch import BatchSummary, Checked

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def artifact_uri(path: str) -> str:
    return quote(display_path(path), safe="/:@!$&'()*+,;=-._~")


class SarifReporter(Reporter):
    name = "sarif"
    spools = True

    def __init__(self, out: TextIO, options: ReportOptions | None = None) -> None:
        super().__init__(out, options)
        self._results = spool()
        self._count = 0
        self._rules: dict[str, int] = {}
        self._rule_text: dict[str, str] = {}

    def add(self, checked: Checked) -> None:
        if not checked.failures:
            return
        for d in failing_diagnostics(checked):
            self._write(self._result(checked, d))

    def _result(self, checked: Checked, d: Any) -> dict[str, Any]:
        index = self._rules.setdefault(d.code, len(self._rules))
        self._rule_text.setdefault(d.code, f"llmfix {d.stage} diagnostic {d.code}")
        location = diagnostic_location(checked, d)
        region: dict[str, int] = {"startLine": location.line}
        if location.column is not None:
            region["startColumn"] = location.column
        item = checked.item
        key = f"{item.id}\0{d.code}\0{d.pointer or ''}".encode()
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index,
            "level": _LEVEL[d.severity],
            "message": {"text": f"{item.id}: {message_with_place(d, location)}"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": artifact_uri(location.file)},
                        "region": region,
                    }
                }
            ],
            "partialFingerprints": {"llmfixItem/v1": hashlib.sha256(key).hexdigest()[:32]},
            "properties": {"item": item.id, "status": checked.status},
        }
        if d.pointer is not None:
            result["properties"]["pointer"] = d.pointer
        if d.risk is not None:
            result["properties"]["risk"] = d.risk.value
        if self.options.baseline:
            result["baselineState"] = "unchanged" if checked.baselined else "new"
        return result

    def _write(self, result: dict[str, Any]) -> None:
        text = json.dumps(result, ensure_ascii=False, indent=2)
        self._results.write(",\n" if self._count else "\n")
        self._results.write("        " + text.replace("\n", "\n        "))
        self._count += 1

    def finish(self, summary: BatchSummary) -> None:
        from llmfix import __version__

        rules = [
            {
                "id": code,
                "shortDescription": {"text": self._rule_text[code]},
            }
            for code in self._rules
        ]
        run = {
            "tool": {"driver": {"name": "llmfix", "version": __version__, "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "invocations": [
                {
                    "executionSuccessful": True,
                    "properties": {"summary": summary.to_dict()},
                }
            ],
            "results": [],
        }
        head = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
        text = json.dumps(head, ensure_ascii=False, indent=2)
        cut = text.rindex('"results": []')
        self.out.write(text[:cut] + '"results": [')
        copy_spool(self._results, self.out)
        self._results.close()
        self.out.write(("\n      ]" if self._count else "]") + text[cut + len('"results": []') :])
        self.out.write("\n")
