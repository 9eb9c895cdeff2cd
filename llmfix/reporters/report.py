"""The versioned report (JSON or YAML) shared by `repair` and `check`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmfix.model import REPORT_VERSION


def build_report(items: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"version", "summary", "items"}`` from per-item dicts that each carry a ``status``."""
    statuses: dict[str, int] = {}
    for item in items:
        statuses[item["status"]] = statuses.get(item["status"], 0) + 1
    return {
        "version": REPORT_VERSION,
        "summary": {"items": len(items), "status": statuses},
        "items": items,
    }


def render_report(report: dict[str, Any], fmt: str) -> str:
    """The report as ``json`` or ``yaml`` text."""
    if fmt == "yaml":
        import yaml

        return yaml.safe_dump(report, sort_keys=False, allow_unicode=True)
    return json.dumps(report, ensure_ascii=False, indent=2) + "\n"


def write_report(path: Path, items: list[dict[str, Any]]) -> None:
    """Write the report atomically; YAML for ``.yaml``/``.yml``, JSON otherwise."""
    from llmfix.writers import write_atomic

    fmt = "yaml" if path.suffix.lower() in (".yaml", ".yml") else "json"
    write_atomic(path, render_report(build_report(items), fmt))
