"""`llmfix proxy`: a guard in front of a model API (the ``proxy`` extra).

The command declares its options, builds the run as `repair` does (the config files read
with the trust rules), and serves :mod:`llmfix.proxy.app` until interrupted.
"""

# No ``from __future__ import annotations``: Typer reads these annotations at run time.
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from llmfix.cli.common import (
    BaseUrlOption,
    MaxLlmCallsOption,
    ModelOption,
    ProviderOption,
    TrustConfigOption,
    app,
    execute,
    fail,
    llm_flags,
    say,
    shared,
)

if TYPE_CHECKING:
    from llmfix.model import ExitCode
    from llmfix.run.llm import LlmRun
    from llmfix.run.settings import RepairRun

_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


@app.command()
def proxy(
    upstream: Annotated[
        str,
        typer.Option(
            "--upstream",
            metavar="URL",
            help="The model API to forward to, e.g. https://api.openai.com or "
            "https://api.anthropic.com.",
        ),
    ],
    listen: Annotated[
        str,
        typer.Option("--listen", metavar="HOST:PORT", help="Where to serve (loopback by default)."),
    ] = "127.0.0.1:8787",
    schema: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on 3.10
        typer.Option(
            "--schema",
            metavar="FILE",
            help="Check the answers of requests that carry no schema of their own against "
            "this one (JSON/YAML file or builtin:NAME).",
        ),
    ] = None,
    schema_for: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--schema-for",
            metavar="KEY=FILE",
            help="The schema for one model, or one route (a KEY starting with /); repeatable.",
        ),
    ] = None,
    tools_for: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--tools-for",
            metavar="KEY=FILE",
            help="The tools to check calls against, for one model or route (* for "
            "all), when the request lists none; repeatable.",
        ),
    ] = None,
    on_failure: Annotated[
        str,
        typer.Option(
            "--on-failure",
            metavar="pass|error",
            help="What a failing answer gets: pass (sent as written, marked in the headers) "
            "or error (a 502 the SDKs raise).",
        ),
    ] = "pass",
    max_risk: Annotated[
        Optional[str],  # noqa: UP045
        shared(
            "max_risk",
            "A repair riskier than this fails the answer; schema rules above it are not applied.",
        ),
    ] = None,
    partial: Annotated[
        bool, shared("partial", "Let a cut-off answer pass when what arrived is valid.")
    ] = False,
    time_budget: Annotated[
        float,
        typer.Option(
            "--time-budget", metavar="SECONDS", help="Seconds per stage of work on one answer."
        ),
    ] = 5.0,
    log: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--log",
            metavar="FILE",
            help="Append every exchange to this JSONL file (`llmfix check` reads it).",
        ),
    ] = None,
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Log prompts and answers unredacted.")
    ] = False,
    max_request_bytes: Annotated[
        int,
        typer.Option("--max-request-bytes", metavar="BYTES", help="Largest request body accepted."),
    ] = 10_000_000,
    max_response_bytes: Annotated[
        int,
        typer.Option(
            "--max-response-bytes", metavar="BYTES", help="Largest upstream answer accepted."
        ),
    ] = 50_000_000,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Seconds to wait for the upstream between two reads.",
        ),
    ] = 600.0,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            metavar="N",
            min=1,
            help="Serve in N processes (POSIX); /metrics counts them all.",
        ),
    ] = 1,
    llm: Annotated[
        Optional[bool],  # noqa: UP045
        shared("llm", "Ask a model to repair an answer or tool call the rules cannot (opt-in)."),
    ] = None,
    model: ModelOption = None,
    provider: ProviderOption = None,
    base_url: BaseUrlOption = None,
    max_attempts: Annotated[
        Optional[int],  # noqa: UP045
        shared("max_attempts", "Model repair attempts per answer (default 2)."),
    ] = None,
    max_llm_calls: MaxLlmCallsOption = None,
    trust_config: TrustConfigOption = False,
) -> None:
    """Serve the OpenAI and Anthropic APIs in front of --upstream, checking every answer.

    Point the SDK at it: OPENAI_BASE_URL=http://127.0.0.1:8787/v1 or
    ANTHROPIC_BASE_URL=http://127.0.0.1:8787.
    """
    try:
        # lazy: only `llmfix proxy` needs the proxy extra (uvicorn, aiohttp)
        from llmfix.proxy.app import ProxySettings
        from llmfix.proxy.workers import serve
    except ImportError as error:
        raise fail(
            f"llmfix proxy needs the proxy extra ({error.name} is missing): "
            "pip install 'llmfix[proxy]'"
        ) from None
    # lazy: llmfix --help starts without it
    from llmfix.model import ExitCode
    from llmfix.proxy.expect import configured_files
    from llmfix.proxy.verdict import POLICIES
    from llmfix.proxy.whole import model_repair
    from llmfix.run.settings import RepairFlags

    if on_failure not in POLICIES:
        raise fail(f"--on-failure must be pass or error, not {on_failure!r}")

    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or not upstream.startswith(("http://", "https://")):
        raise fail("--listen takes HOST:PORT and --upstream an http(s) URL")
    if host not in _LOOPBACK:
        say(f"warning: listening on {host}: anyone who can reach it can use the proxy")
    flags = RepairFlags(
        max_risk=max_risk,
        partial=partial,
        time_budget=time_budget,
        trust_config=trust_config,
        llm=llm_flags(llm, model, provider, base_url, max_attempts, max_llm_calls, False),
    )

    def go(run: "RepairRun", model_run: "LlmRun | None") -> "ExitCode":
        settings = ProxySettings(
            upstream=upstream,
            run=run,
            configured=configured_files(run, schema, schema_for or [], tools_for or []),
            on_failure=on_failure,
            max_request=max_request_bytes,
            max_response=max_response_bytes,
            timeout=timeout,
            log=log,
            redact=not no_redact,
            model=None if model_run is None else model_repair(model_run, run),
        )
        many = f" ({workers} workers)" if workers > 1 else ""
        say(f"llmfix proxy: http://{host}:{port} -> {upstream}{many}")
        try:
            serve(settings, host.strip("[]"), int(port), workers, warn=say)
        except OSError as error:
            raise fail(f"cannot serve on {listen}: {error}") from None
        return ExitCode.OK

    execute(flags, go)
