"""SARIF 2.1.0: one result per problem of a failing item; rule ids are diagnostic codes.

Results carry the file and line (and column, in Unicode code points, when the problem's
position maps exactly — see :mod:`llmfix.reporters.base`), and, when a baseline was given,
``baselineState`` ``new`` or ``unchanged``. Validated against the OASIS SARIF 2.1.0 schema
in the tests.

As GitHub code scanning expects: each result's ``partialFingerprints`` is its own, built
from the item's stable key (what ``--baseline`` matches on), the code, the JSON Pointer and
the count of earlier results with those three (two problems of one item never share one, so
code scanning does not merge them); file URIs are relative to the repository root (the
nearest directory above the working directory holding ``.git``, else the working directory)
with ``uriBaseId`` ``%SRCROOT%``, which ``originalUriBaseIds`` maps to that directory. A file
outside it gets an absolute ``file://`` URI.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from llmfix._version import __version__
from llmfix.batch.judge import stable_key
from llmfix.model import Severity
from llmfix.reporters.base import (
    Reporter,
    ReportOptions,
    copy_spool,
    diagnostic_location,
    display_path,
    failing_diagnostics,
    item_part,
    message_with_place,
    spool,
)

if TYPE_CHECKING:
    from llmfix.batch.judge import BatchSummary, Checked, Need

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_URI_SAFE = "/:@!$&'()*+,;=-._~"


def artifact_uri(path: str) -> str:
    return quote(display_path(path), safe=_URI_SAFE)


def repository_root(start: Path | None = None) -> Path:
    """The nearest directory at or above ``start`` (the working directory) with ``.git``."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory
    return here


def artifact_location(path: str, root: Path) -> dict[str, str]:
    """``{"uri", "uriBaseId"}`` relative to ``root``, or an absolute file URI outside it."""
    if path.startswith("<"):  # <stdin>
        return {"uri": artifact_uri(path)}
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        try:
            relative = absolute.resolve().relative_to(root)
        except ValueError:
            return {"uri": absolute.resolve().as_uri()}
    return {"uri": quote(relative.as_posix(), safe=_URI_SAFE), "uriBaseId": SRCROOT}


class SarifReporter(Reporter):
    name = "sarif"
    spools = True

    def __init__(self, out: TextIO, options: ReportOptions | None = None) -> None:
        super().__init__(out, options)
        self._results = spool()
        self._count = 0
        self._rules: dict[str, int] = {}
        self._rule_text: dict[str, str] = {}
        self._root = repository_root()

    def needs(self) -> Need:
        return "failing"  # results for the items that fail a gate

    def add(self, checked: Checked) -> None:
        if not checked.failures:
            return
        seen: Counter[tuple[str, str]] = Counter()
        for d in failing_diagnostics(checked):
            where = (d.code, d.pointer or "")
            self._write(self._result(checked, d, seen[where]))
            seen[where] += 1

    def _result(self, checked: Checked, d: Any, repeat: int) -> dict[str, Any]:
        index = self._rules.setdefault(d.code, len(self._rules))
        self._rule_text.setdefault(d.code, f"llmfix {d.stage} diagnostic {d.code}")
        location = diagnostic_location(checked, d)
        region: dict[str, int] = {"startLine": location.line}
        if location.column is not None:
            region["startColumn"] = location.column

        item = checked.item
        item_key = stable_key(item, self.options.root or str(self._root))
        key = f"{item_key}\0{d.code}\0{d.pointer or ''}\0{repeat}".encode()
        message = message_with_place(d, location)
        part = item_part(item)
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index,
            "level": _LEVEL[d.severity],
            "message": {"text": f"{message} ({part})" if part else message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact_location(location.file, self._root),
                        "region": region,
                    }
                }
            ],
            "partialFingerprints": {"llmfixItem/v2": hashlib.sha256(key).hexdigest()[:32]},
            "properties": {"item": item.id, "key": item_key, "status": checked.status},
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
        rules = [
            {
                "id": code,
                "shortDescription": {"text": self._rule_text[code]},
            }
            for code in self._rules
        ]
        run = {
            "tool": {"driver": {"name": "llmfix", "version": __version__, "rules": rules}},
            "originalUriBaseIds": {SRCROOT: {"uri": self._root.as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "invocations": [
                {
                    "executionSuccessful": True,
                    "properties": {"summary": summary.to_dict()},
                    **_rate_notifications(summary),
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


def _rate_notifications(summary: BatchSummary) -> dict[str, Any]:
    """The rate gates and regressions as the invocation's notifications (they are about
    the run, not a place in a file): an error for each that fails the run, a note for a
    gate that passed."""
    rates = summary.rates
    if rates is None:
        return {}
    notes = []
    for gate in rates.gates:
        failed = gate.failed(rates.significant_only)
        notes.append(
            {
                "level": "error" if failed else "note",
                "message": {"text": f"--max-rate {gate.gate.spec}: {gate.describe()}"},
                "descriptor": {"id": "max-rate"},
            }
        )
    for row in rates.regressions:
        notes.append(
            {
                "level": "error" if rates.fail_on_regression else "warning",
                "message": {"text": f"regression: {row.describe()}"},
                "descriptor": {"id": "regression"},
            }
        )
    return {"toolExecutionNotifications": notes} if notes else {}
