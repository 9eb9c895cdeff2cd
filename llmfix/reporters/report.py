"""The versioned report (JSON or YAML) shared by `repair` and `check`, and the baseline.

Both commands stream it through :class:`JsonReporter`/:class:`YamlReporter` (``--format
json|yaml``, ``--report FILE.json``); `repair` gives each answer's own record and a summary
of ``items`` and ``status`` (:attr:`llmfix.reporters.base.ReportOptions.record`), which
mean the same as in `check`'s fuller summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from llmfix.batch.judge import stable_key
from llmfix.errors import ConfigError
from llmfix.files.read import ReadRefused, read_regular
from llmfix.jsontext import dumps_indented, yaml_dumper
from llmfix.model import REPORT_VERSION
from llmfix.reporters.base import Reporter, ReportOptions, copy_spool, spool

if TYPE_CHECKING:
    from llmfix.batch.judge import BatchSummary, Checked, Need


BASELINE_MAX_BYTES = 2_000_000_000


def read_report(path: Path, what: str = "baseline") -> dict[str, Any]:
    """Read a report written by ``-o``/``--report`` (JSON, or YAML by suffix): for --baseline
    (``what`` names the flag in errors: ``--compare``, ``trend``)."""

    try:
        # A regular file only (a FIFO named by a project config would hang the run); a
        # report of a large batch is large, so the bound is only against /dev/zero.
        text = read_regular(str(path), BASELINE_MAX_BYTES).decode("utf-8")
    except ReadRefused as exc:
        raise ConfigError(f"{what} {path}: cannot read: {exc.problem}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {path}: not UTF-8 (byte {exc.start})") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            report = yaml.safe_load(text)
        else:
            report = json.loads(text)
    except Exception as exc:  # yaml.YAMLError or ValueError; never leak either
        problem = " ".join(str(exc).split())
        raise ConfigError(f"{what} {path}: not a report: {problem}") from None
    if not isinstance(report, dict) or not isinstance(report.get("items"), list):
        raise ConfigError(f"{what} {path}: not an llmfix report (no 'items' list)")
    if str(report.get("version")) != REPORT_VERSION:
        raise ConfigError(
            f"{what} {path}: report version {report.get('version')!r} is not "
            f"{REPORT_VERSION!r}; write a new baseline with this llmfix"
        )
    return report


# Where a JSON report's items start (JsonReporter writes the summary first, then this).
_ITEMS_MARK = b',\n  "items": ['
HEAD_MAX_BYTES = 64_000_000  # a summary, even of many groups and codes, is far smaller


def read_report_head(path: Path, what: str) -> dict[str, Any]:
    """A report's ``version`` and ``summary`` (its ``items`` left unread and empty): for
    ``--compare`` and trends, which need no item. A ``-f json`` report is read up to where
    its items start, so a report of a million items costs what its summary does; any
    other file (YAML, JSON written another way) is read whole by :func:`read_report`."""
    if path.suffix.lower() in (".yaml", ".yml"):
        return read_report(path, what)
    # lazy: only --compare and trends read a report's head
    from llmfix.files.read import ReadRefused, open_regular

    head = b""
    try:
        with open_regular(str(path), buffering=0) as handle:
            while _ITEMS_MARK not in head and len(head) < HEAD_MAX_BYTES:
                block = handle.read(1 << 20)
                if not block:
                    break
                head += block
    except ReadRefused as exc:
        raise ConfigError(f"{what} {path}: cannot read: {exc.problem}") from None
    cut = head.find(_ITEMS_MARK)
    if cut < 0 or not head.startswith(b"{"):
        return read_report(path, what)
    try:
        report = json.loads(head[:cut] + b', "items": []}')
    except ValueError:
        return read_report(path, what)  # (its own one-line error)
    if not isinstance(report, dict) or str(report.get("version")) != REPORT_VERSION:
        return read_report(path, what)
    return report


class JsonReporter(Reporter):
    """The versioned report as JSON: ``version``, ``summary``, then every item.

    Items are spooled while the run goes on and written after the summary, so the
    document reads top-down and memory stays bounded. The layout is what
    ``json.dumps(report, indent=2)`` would give.
    """

    name = "json"
    spools = True

    def __init__(self, out: TextIO, options: ReportOptions | None = None) -> None:
        super().__init__(out, options)
        self._items = spool()
        self._count = 0

    def add(self, checked: Checked) -> None:
        text = dumps_indented(self.options.item(checked), margin="    ")
        self._items.write((",\n    " if self._count else "\n    ") + text)
        self._count += 1

    def finish(self, summary: BatchSummary) -> None:
        head = {"version": REPORT_VERSION, "summary": self.options.head(summary)}
        text = json.dumps(head, ensure_ascii=False, indent=2)
        self.out.write(text[: text.rindex("}")].rstrip() + ',\n  "items": [')
        copy_spool(self._items, self.out)
        self._items.close()
        self.out.write("\n  ]\n}\n" if self._count else "]\n}\n")


class YamlReporter(Reporter):
    """The versioned report as YAML (same content as :class:`JsonReporter`)."""

    name = "yaml"
    spools = True

    def __init__(self, out: TextIO, options: ReportOptions | None = None) -> None:
        super().__init__(out, options)
        self._items = spool()
        self._count = 0

    def add(self, checked: Checked) -> None:
        import yaml

        self._items.write(
            yaml.dump(
                [self.options.item(checked)],
                Dumper=yaml_dumper(),
                sort_keys=False,
                allow_unicode=True,
            )
        )
        self._count += 1

    def finish(self, summary: BatchSummary) -> None:
        import yaml

        head = {"version": REPORT_VERSION, "summary": self.options.head(summary)}
        self.out.write(yaml.safe_dump(head, sort_keys=False, allow_unicode=True))
        self.out.write("items:\n" if self._count else "items: []\n")
        copy_spool(self._items, self.out)
        self._items.close()


class BaselineReporter(Reporter):
    """A baseline for ``--baseline`` (``-f baseline -o .llmfix-baseline.json``): the
    versioned report with only the failing items, each reduced to what matching needs —
    ``key``, ``id``, ``status``, ``failures`` and its errors' ``code`` and ``pointer`` —
    one item per line. Passing items are left out, so it stays small. Keys name files
    relative to the repository root (:func:`llmfix.batch.judge.key_root`), so the baseline matches
    whichever directory the check runs from and however the paths are typed."""

    name = "baseline"
    spools = True

    def __init__(self, out: TextIO, options: ReportOptions | None = None) -> None:
        super().__init__(out, options)
        self._items = spool()
        self._count = 0

    def needs(self) -> Need:
        return "failing"  # the baseline holds the failing items only

    def add(self, checked: Checked) -> None:
        if not checked.failures:
            return

        outcome = checked.outcome
        entry = {
            "key": stable_key(outcome.item, self.options.root),
            "id": outcome.item.id,
            "status": outcome.status,
            "failures": list(checked.failures),
            "diagnostics": [
                {"code": d.code, "severity": "error", "pointer": d.pointer}
                if d.pointer is not None
                else {"code": d.code, "severity": "error"}
                for d in outcome.diagnostics
                if d.severity.value == "error"
            ],
        }
        self._items.write(",\n    " if self._count else "\n    ")
        self._items.write(json.dumps(entry, ensure_ascii=False))
        self._count += 1

    def finish(self, summary: BatchSummary) -> None:
        head = {"version": REPORT_VERSION, "baseline": True, "failing": self._count}
        text = json.dumps(head, ensure_ascii=False, indent=2)
        self.out.write(text[: text.rindex("}")].rstrip() + ',\n  "items": [')
        copy_spool(self._items, self.out)
        self._items.close()
        self.out.write("\n  ]\n}\n" if self._count else "]\n}\n")
