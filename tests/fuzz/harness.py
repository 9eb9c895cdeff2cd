"""Atheris (libFuzzer) harness for ``llmfix.repair``; not part of the default test run.

Each input is bytes decoded as UTF-8 with replacement and repaired with the default options.
A crash is any exception other than an ``LlmfixError``, or a result that claims success
(``result.ok``) with a value that is not strict JSON. Run it through ``scripts/fuzz.sh``.
"""

from __future__ import annotations

import json
import sys

import atheris

# llmfix imports its stages lazily: import them here so that they are instrumented too.
with atheris.instrument_imports(include=["llmfix"]):
    import llmfix
    import llmfix.extract
    import llmfix.normalize
    import llmfix.parse
    import llmfix.partial
    import llmfix.pipeline
    import llmfix.repair_parser
    import llmfix.select
    import llmfix.syntax_scan
    from llmfix.errors import LlmfixError


def test_one_input(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    try:
        result = llmfix.repair(text)
    except LlmfixError:
        return
    if result.ok:
        json.dumps(result.value, allow_nan=False)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
