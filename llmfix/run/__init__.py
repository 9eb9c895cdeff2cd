"""One command's run: its settings from flags, environment and config files (``settings``,
``config_file``, ``globs``, ``trust``, ``ceilings``), and the runs themselves (``check``;
``repair_files`` over files, ``repair`` for one input, ``repair_report``, ``repair_lines``
for ``--jsonl``, ``llm``; ``notes`` is what they say on stderr).

The names below are the public way to run what the command line runs::

    from llmfix.run import RepairFlags, build_run

They are imported when first used, so importing one module of this package (as every
command does at start-up) loads none of the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmfix.run.check import run_check
    from llmfix.run.repair import repair_input, start_llm, stream_answer
    from llmfix.run.repair_files import RepairOutputs, check_outputs, run_repair, run_repair_jsonl
    from llmfix.run.repair_lines import repair_jsonl
    from llmfix.run.settings import (
        CheckFlags,
        CheckRun,
        LlmFlags,
        RepairFlags,
        RepairRun,
        Run,
        build_run,
        run_config,
    )

# public name → the module that defines it
_WHERE = {
    "CheckFlags": "settings",
    "CheckRun": "settings",
    "LlmFlags": "settings",
    "RepairFlags": "settings",
    "RepairRun": "settings",
    "Run": "settings",
    "build_run": "settings",
    "run_config": "settings",
    "run_check": "check",
    "repair_input": "repair",
    "start_llm": "repair",
    "stream_answer": "repair",
    "RepairOutputs": "repair_files",
    "check_outputs": "repair_files",
    "run_repair": "repair_files",
    "run_repair_jsonl": "repair_files",
    "repair_jsonl": "repair_lines",
}
__all__ = [
    "CheckFlags",
    "CheckRun",
    "LlmFlags",
    "RepairFlags",
    "RepairOutputs",
    "RepairRun",
    "Run",
    "build_run",
    "check_outputs",
    "repair_input",
    "repair_jsonl",
    "run_check",
    "run_config",
    "run_repair",
    "run_repair_jsonl",
    "start_llm",
    "stream_answer",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
