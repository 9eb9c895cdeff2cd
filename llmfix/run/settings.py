"""One run, built once: the flags, the ``LLMFIX_*`` variables and the config files.

`repair`, `repair --jsonl` and `check` each fill a flags record (:class:`RepairFlags`,
:class:`CheckFlags`) and call :func:`build_run`; what comes back is a :class:`RepairRun` or
a :class:`CheckRun`, frozen and typed, that the library runs from (what both share is
:class:`Run`). The config files are read by :func:`run_config`
(:func:`llmfix.run.config_file.load_settings`), with the trust rules of
:mod:`llmfix.run.trust`: what an untrusted project file may not set stays out and is named in
``config.ignored`` (the command says so; the library never prints).

The fixed sets of values a flag takes are the library's own tables, named in
:data:`CHOICES`; the command line offers exactly those (and ``--help`` lists them).

Precedence: built-in defaults < the user config < the project file < ``LLMFIX_*`` < flags.
`repair` takes from the files only the schema (top level and ``checks`` rules),
``allow-remote-refs`` and the ``llm:`` section; its gate and repair options are its flags'.

Every run defines these classes at start-up, so they are kept cheap to define: the flag
records are NamedTuples, and annotations are evaluated (no ``from __future__ import
annotations``: a NamedTuple would compile each string annotation), with the names that are
imported only for type checking written in quotes.
"""

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, NamedTuple, cast, overload

from llmfix.errors import ConfigError
from llmfix.options import make_options

if TYPE_CHECKING:
    from llmfix.batch.gate import FailOn, Gate
    from llmfix.batch.rates import RateGate
    from llmfix.inputs import Kind as InputKind
    from llmfix.inputs import Messages as InputMessages
    from llmfix.inputs import ReadOptions
    from llmfix.model import Risk
    from llmfix.options import RepairOptions
    from llmfix.run.config_file import Settings
    from llmfix.schema.validate import SchemaValidator
    from llmfix.toolcalls.registry import ToolRegistry


# Each flag that takes one of a fixed set of values, and the library table that set is read
# from (module, name): the command line offers exactly the table's values, read when the
# flag is given (a table may live in a module a run that does not use it never imports).
CHOICES: dict[str, tuple[str, str]] = {
    "pick": ("llmfix.options", "PICKS"),
    "parser_engine": ("llmfix.options", "PARSE_ENGINES"),
    "fail_on": ("llmfix.batch.gate", "FAIL_ON"),
    "risk": ("llmfix.model", "Risk"),
    "kind": ("llmfix.inputs", "KINDS"),
    "messages": ("llmfix.inputs", "MESSAGES"),
    "emit": ("llmfix.toolcalls", "EMITS"),
    "tool_format": ("llmfix.toolcalls.detect", "FORMATS"),
    "report_format": ("llmfix.reporters", "FORMATS"),
    "check_engine": ("llmfix.engines", "ENGINES"),
    "results_format": ("llmfix.run.settings", "RESULTS_FORMATS"),
    "provider": ("llmfix.llm.config", "PROVIDERS"),
    "config_format": ("llmfix.run.settings", "CONFIG_FORMATS"),
}

RESULTS_FORMATS: tuple[str, ...] = ("parquet", "jsonl")  # --results files
CONFIG_FORMATS: tuple[str, ...] = ("yaml", "json")  # `llmfix config show`


def choices(name: str) -> tuple[str, ...]:
    """The values of the choice ``name`` (a key of :data:`CHOICES`), as the table lists them."""
    import importlib

    module, attribute = CHOICES[name]
    table = getattr(importlib.import_module(module), attribute)
    return tuple(str(getattr(value, "value", value)) for value in table)


# ---------------------------------------------------------------------- the settings


class LlmFlags(NamedTuple):
    """The LLM repair flags of a run (``None``: not given, the config's value stands)."""

    enabled: bool | None = None  # --llm / --no-llm
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    max_attempts: int | None = None
    max_calls: int | None = None
    cache: bool | None = None  # False: --no-cache
    redact: bool | None = None  # False: --no-redact
    save_prompts: str | None = None
    max_run_tokens: int | None = None  # --max-llm-tokens
    max_cost: float | None = None  # --max-llm-cost

    def overrides(self) -> dict[str, str | int | float | bool | None]:
        """The flags as :meth:`llmfix.llm.config.LlmConfig.with_overrides` takes them."""
        return {
            "model": self.model,
            "provider": self.provider,
            "base_url": self.base_url,
            "max_attempts": self.max_attempts,
            "max_calls": self.max_calls,
            "cache": self.cache,
            "redact": self.redact,
            "save_prompts": self.save_prompts,
            "max_run_tokens": self.max_run_tokens,
            "max_cost": self.max_cost,
        }


NO_LLM_FLAGS = LlmFlags()


@dataclass(frozen=True, eq=False)  # compared by identity: fewer methods to define
class ToolSettings:
    """How to read tool calls (``--tools``, ``--tool-calls``, ``--tool-format``)."""

    registry: "ToolRegistry | None"
    fmt: str | None = None
    salvage: bool = False
    expect_sequence: tuple[str, ...] | None = None
    strict: bool = False
    emit: str = "canonical"


class Validators:
    """Compiled schemas by reference, each loaded once per run."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, bool], SchemaValidator] = {}

    def get(self, ref: str, allow_remote: bool) -> "SchemaValidator":
        """The validator of ``ref`` (a path, ``builtin:NAME``, or a Python type as
        ``module:Name`` or ``file.py:Name``, which runs that code: an untrusted project
        file cannot name one); errors name the schema."""
        key = (ref, allow_remote)
        if key not in self._found and ":" in ref and not ref.startswith("builtin:"):
            # lazy: only a reference that may name a Python type loads the Pydantic bridge
            from llmfix.schema.pydantic_models import is_model_ref, validator_for_ref

            if is_model_ref(ref):
                self._found[key] = validator_for_ref(ref, allow_remote)
        if key not in self._found:
            # lazy: repair --help, check --help start without it
            from llmfix.schema.load import load_schema

            # lazy: repair --help, check --help start without it
            from llmfix.schema.validate import SchemaValidator

            self._found[key] = SchemaValidator(load_schema(ref), allow_remote=allow_remote)
        return self._found[key]


@dataclass(frozen=True, eq=False)  # compared by identity: fewer methods to define
class Run:
    """What every run of `repair` and `check` has, built once before any input is read."""

    config: "Settings"  # defaults < user config < project file (trust rules) < flags
    gate: "Gate"  # --fail-on, --max-risk
    options: "RepairOptions"  # the top-level repair options, narrowed by the gate
    verbosity: int = 0  # -1 quiet, 0 normal, 1 verbose
    llm: LlmFlags = NO_LLM_FLAGS
    validators: Validators = dataclass_field(default_factory=Validators, repr=False)

    @property
    def fail_on(self) -> "FailOn":
        return self.gate.fail_on

    @property
    def max_risk(self) -> "Risk | None":
        return self.gate.max_risk

    @property
    def llm_enabled(self) -> bool:
        """``--llm``/``--no-llm``, else ``LLMFIX_LLM``, else a trusted ``llm:`` section (a
        project file alone never turns it on: its section counts only when trusted)."""
        if self.llm.enabled is not None:
            return self.llm.enabled
        # lazy: repair --help, check --help start without it
        from llmfix.run.trust import env_llm_enabled

        env = env_llm_enabled()
        return self.config.llm_enabled if env is None else env


@dataclass(frozen=True, eq=False)
class RepairRun(Run):
    """A `repair` run: how it prints its answers, which schema or tools it checks them
    with, and how it reads its inputs."""

    indent: int | None = 2  # None for --compact
    schema: str | None = None  # --schema
    tools: ToolSettings | None = None  # --tools / --tool-calls
    reading: "ReadOptions | None" = None  # how to read API responses (None: as text)
    config_schemas: bool = False  # no --schema, so each file gets the config's
    field: str | None = None  # --field: where the answer is in each record (--jsonl)
    encoding: str | None = None  # --encoding: how to decode the inputs

    def validator_for(self, path: str) -> "SchemaValidator | None":
        """``--schema``, else (with ``config_schemas``) the schema the config gives this file:
        its first matching ``checks`` rule's, else the top-level one, as `check` chooses it."""
        allow = self.options.allow_remote_refs
        if not self.config_schemas:
            return None if self.schema is None else self.validators.get(self.schema, allow)
        # lazy: repair --help, check --help start without it
        from llmfix.run.globs import rule_for

        settings = self.config
        index = rule_for(settings, path)
        ruled = settings.ruled(None if index is None else settings.checks[index])
        allow = allow or bool(ruled.options.get("allow_remote_refs"))
        return None if ruled.schema is None else self.validators.get(ruled.schema, allow)


@dataclass(frozen=True, eq=False)
class CheckRun(Run):
    """A `check` run: the settings only its flags give (the rest is ``config``)."""

    tool_calls: bool = False  # --tool-calls
    engine: str = "local"  # where items are checked (local, ray, spark)
    results: str | None = None  # --results DIR, every item's result row
    results_format: str = "parquet"  # --results files (parquet, jsonl)
    allow_empty: bool = False  # no item matched is fine (else a usage error)
    max_annotations: int | None = None  # -f github
    reports: tuple[str, ...] = ()  # --report FILE, more reports from the same run
    follow_symlinks: bool = False  # walk through symbolic links (--follow-symlinks)
    # rates (issue 35): --max-rate gates, --compare OLD.json, --history DIR
    rate_gates: "tuple[RateGate, ...]" = ()
    significant_only: bool = False  # a gate fails only when its interval is above it
    compare: str | None = None
    fail_on_regression: bool = False
    confidence: float = 0.95  # of the intervals, and 1 - the tests' level
    history: str | None = None


def degenerate_option(given: tuple[str, ...]) -> dict[str, object]:
    """``--degenerate NAME=VALUE`` flags as the ``degenerate`` option's mapping
    (``placeholder=TEXT`` adds one placeholder; repeatable)."""
    out: dict[str, object] = {}
    extra: list[str] = []
    for spec in given:
        name, equals, value = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not equals or not name:
            raise ConfigError(f"--degenerate {spec}: expected NAME=VALUE (loop-chars=300)")
        if name in ("placeholder", "extra_placeholders"):
            extra.append(value)
        elif name == "placeholders":
            out["placeholders"] = [v for v in value.split(",") if v.strip()]
        else:
            out[name] = value.strip()
    if extra:
        out["extra_placeholders"] = extra
    return out


class RepairFlags(NamedTuple):
    """The flags of one `repair` run (defaults as on the command line)."""

    schema: str | None = None
    allow_remote_refs: bool = False
    pick: str = "best"
    fail_on: str = "invalid"
    max_risk: str | None = None
    disable_rule: tuple[str, ...] = ()
    rules: str | None = None
    no_schema_repair: bool = False
    partial: bool = False
    max_depth: int = 500
    max_size: int = 10_000_000
    time_budget: float = 5.0
    engine: str = "llmfix"
    indent: int | None = 2  # None: --compact
    verbosity: int = 0
    tools: str | None = None
    tool_calls: bool = False
    tool_format: str | None = None
    salvage: bool = False
    expect_sequence: str | None = None
    strict: bool = False
    emit: str = "canonical"
    jsonl: bool = False
    field: str | None = None
    kind: str = "auto"
    messages: str = "last"
    encoding: str | None = None
    trust_config: bool = False
    llm: LlmFlags = NO_LLM_FLAGS
    degenerate: tuple[str, ...] = ()  # --degenerate NAME=VALUE


def repair_config(flags: RepairFlags) -> "Settings":
    """What the config files give a `repair` run (the user's, and the project file found
    upward, read with the trust rules); its ``ignored`` keys are for the command to name."""
    from dataclasses import replace

    # lazy: repair --help, check --help start without it
    from llmfix.run.config_file import load_settings

    settings = load_settings({}, trust=flags.trust_config)
    _, lowered = _repair_limits(flags)
    return replace(settings, limited=(*settings.limited, *lowered)) if lowered else settings


def _repair_limits(flags: RepairFlags) -> tuple[dict[str, object], list[str]]:
    """``--max-depth``, ``--max-size`` and ``--time-budget`` at most their ceilings (see
    :mod:`llmfix.run.ceilings`), and a note for each one lowered."""
    # lazy: repair --help, check --help start without it
    from llmfix.run.ceilings import clamped_options

    given = {
        "max_depth": flags.max_depth,
        "max_size": flags.max_size,
        "time_budget": flags.time_budget,
    }
    limits, notes = clamped_options(given)
    return limits, [f"--{note}" for note in notes]


def repair_run(flags: RepairFlags, config: "Settings | None" = None) -> RepairRun:
    """The `repair` run (``config``: :func:`repair_config`, read when not given);
    :class:`ConfigError` (or ``SchemaError``) for a bad one."""
    from dataclasses import replace

    # lazy: config, config -f json start without it
    from llmfix.batch.gate import Gate

    if config is None:
        config = repair_config(flags)
    # the user config's or a trusted project file's allow-remote-refs, as in `check`
    allow_remote = flags.allow_remote_refs or bool(config.options.get("allow_remote_refs"))
    gate = Gate.parse(flags.fail_on, flags.max_risk)
    disabled = disabled_rules(flags.disable_rule, flags.rules)
    if flags.indent is not None and flags.indent < 0:
        raise ConfigError(f"--indent must be 0 or more, not {flags.indent}")
    if flags.max_depth < 1 or flags.max_size < 1 or flags.time_budget <= 0:
        raise ConfigError("--max-depth, --max-size and --time-budget must be positive")
    limits, _ = _repair_limits(flags)  # the notes are repair_config's
    options = make_options(
        pick=flags.pick,
        disabled_rules=disabled,
        schema_repair=not flags.no_schema_repair,
        partial=flags.partial,
        **limits,
        engine=flags.engine,
        allow_remote_refs=allow_remote,
        **({"degenerate": degenerate_option(flags.degenerate)} if flags.degenerate else {}),
    )
    run = RepairRun(
        config=config,
        gate=gate,
        options=gate.options(options),
        verbosity=flags.verbosity,
        llm=flags.llm,
        indent=flags.indent,
        schema=flags.schema,
        field=flags.field,
        encoding=flags.encoding,
    )
    if flags.schema is not None:
        run.validators.get(flags.schema, allow_remote)  # a bad schema fails before any input
    tools = _tool_settings(flags, allow_remote)
    uses_config = flags.schema is None and tools is None and bool(config.schema or config.checks)
    run = replace(run, tools=tools, config_schemas=uses_config)
    if uses_config:
        run.validator_for("-")  # stdin, --jsonl: the top-level schema, loaded now
    if not flags.jsonl:
        run = replace(run, reading=_reading(flags, tools is not None))
    return run


def _tool_settings(flags: RepairFlags, allow_remote: bool) -> ToolSettings | None:
    if flags.tools is None and flags.tool_format is None and not flags.tool_calls:
        if flags.salvage or flags.expect_sequence or flags.strict or flags.emit != "canonical":
            raise ConfigError(
                "--salvage, --expect-sequence, --strict and --emit need --tool-calls or --tools"
            )
        return None
    if flags.schema is not None:
        raise ConfigError("--schema and --tools don't go together: tools carry their schemas")
    # lazy: check --help, repair on a clean answer start without it
    from llmfix.toolcalls import EMITS

    # lazy: check --help, repair on a clean answer start without it
    from llmfix.toolcalls.detect import check_format

    # lazy: repair --help, check --help start without it
    from llmfix.toolcalls.registry import ToolRegistry

    check_format(flags.tool_format)
    if flags.emit not in EMITS:
        raise ConfigError(f"--emit must be one of {', '.join(EMITS)}, not {flags.emit!r}")
    sequence = None
    if flags.expect_sequence is not None:
        names = (name.strip() for name in flags.expect_sequence.split(","))
        sequence = tuple(name for name in names if name)
    registry = None
    if flags.tools is not None:
        registry = ToolRegistry.load(flags.tools, allow_remote=allow_remote)
    return ToolSettings(
        registry, flags.tool_format, flags.salvage, sequence, flags.strict, flags.emit
    )


def _reading(flags: RepairFlags, tools: bool) -> "ReadOptions | None":
    """How `repair` reads its inputs: ``None`` for the whole text as one answer."""
    # lazy: config, config -f json start without it
    from llmfix.inputs import KINDS, MESSAGES, ReadOptions, field_tokens

    kind, messages = flags.kind, flags.messages
    if kind not in KINDS:
        raise ConfigError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if messages not in MESSAGES:
        raise ConfigError(f"--messages must be one of {', '.join(MESSAGES)}, not {messages!r}")
    if flags.field is not None:
        field_tokens(flags.field)
    if tools:
        if flags.field is not None or kind not in ("auto", "text"):
            raise ConfigError("--tools reads the whole answer; --field and --kind don't apply")
        return None  # the tool-call readers take API response JSON as it is
    if kind == "text":
        return None
    return ReadOptions(
        flags.field, cast("InputMessages", messages), cast("InputKind", kind), None, flags.encoding
    )


def disabled_rules(disable: tuple[str, ...], only: str | None) -> frozenset[str]:
    """The rule ids ``--disable-rule`` turns off, plus all but ``--rules`` when given."""
    if not disable and only is None:
        return frozenset()
    # lazy: repair --help, check --help start without it
    from llmfix.rules import all_rule_ids, rule_ids

    disabled = rule_ids(disable)
    if only is not None:
        disabled |= all_rule_ids() - rule_ids(r for r in only.split(",") if r.strip())
    return disabled


class CheckFlags(NamedTuple):
    """The flags of one `check` run. Those a config file can also set are ``None`` (or
    empty) when not given, so the file's value stands; the rest only the command line sets.
    """

    paths: tuple[str, ...] = ()
    schema: str | None = None
    tools: str | None = None
    field: str | None = None
    messages: str | None = None
    kind: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    format: str | None = None
    output: str | None = None
    fail_on: str | None = None
    max_risk: str | None = None
    baseline: str | None = None
    write_fixed: str | None = None
    in_place: bool = False
    jobs: int | None = None
    timeout: float | None = None
    max_item_size: int | None = None
    group_by: str | None = None
    encoding: str | None = None
    progress: bool = True  # False: --no-progress
    # the repair options a config file's ``options:`` also sets
    no_schema_repair: bool = False
    disable_rule: tuple[str, ...] = ()
    allow_remote_refs: bool = False
    partial: bool = False
    # only the command line sets these
    config: str | None = None  # --config FILE
    use_config: bool = True  # False: --no-config
    trust_config: bool = False
    tool_calls: bool = False
    verbosity: int = 0
    llm: LlmFlags = NO_LLM_FLAGS
    engine: str = "local"
    results: str | None = None
    results_format: str = "parquet"
    allow_empty: bool = False
    max_annotations: int | None = None
    reports: tuple[str, ...] = ()
    follow_symlinks: bool = False  # a project file cannot ask for it
    max_rate: tuple[str, ...] = ()  # --max-rate (replaces the config's max-rate)
    significant_only: bool = False
    compare: str | None = None
    fail_on_regression: bool = False
    confidence: float = 0.95
    history: str | None = None
    degenerate: tuple[str, ...] = ()  # --degenerate NAME=VALUE, the degenerate option

    def given(self) -> dict[str, object]:
        """The flags that override the config files, by their settings' names (``None``:
        not given; :func:`llmfix.run.config_file.load_settings` leaves those to the files)."""
        options: dict[str, object] = {}
        if self.no_schema_repair:
            options["schema_repair"] = False
        if self.disable_rule:
            options["disabled_rules"] = list(self.disable_rule)
        if self.allow_remote_refs:
            options["allow_remote_refs"] = True
        if self.partial:
            options["partial"] = True
        if self.degenerate:
            options["degenerate"] = degenerate_option(self.degenerate)
        return {
            "paths": list(self.paths), "schema": self.schema, "tools": self.tools,
            "field": self.field, "messages": self.messages, "kind": self.kind,
            "include": list(self.include), "exclude": list(self.exclude),
            "format": self.format, "output": self.output, "fail_on": self.fail_on,
            "max_risk": self.max_risk, "baseline": self.baseline,
            "write_fixed": self.write_fixed, "in_place": self.in_place or None,
            "jobs": self.jobs, "timeout": self.timeout, "max_item_size": self.max_item_size,
            "group_by": self.group_by, "encoding": self.encoding,
            "progress": None if self.progress else False, "options": options,
            "max_rate": list(self.max_rate),
        }  # fmt: skip


def check_config(flags: CheckFlags) -> "Settings":
    """Defaults < the user config < the project file (trust rules) < the flags."""
    # lazy: repair --help, check --help start without it
    from llmfix.run.config_file import load_settings

    return load_settings(
        flags.given(), config=flags.config, use_config=flags.use_config, trust=flags.trust_config
    )


def check_run(flags: CheckFlags, config: "Settings | None" = None) -> CheckRun:
    """The `check` run (``config``: :func:`check_config`, read when not given);
    :class:`ConfigError` for a bad combination."""
    # lazy: config, config -f json start without it
    from llmfix.batch.gate import Gate

    if config is None:
        config = check_config(flags)
    gate = Gate.parse(config.fail_on, config.max_risk)
    if config.in_place and config.write_fixed:
        raise ConfigError("use either --in-place or --write-fixed, not both")
    if config.jobs < 0 or config.timeout <= 0 or config.max_item_size < 1:
        raise ConfigError("--jobs must be 0 or more; --timeout and --max-item-size positive")
    if flags.max_annotations is not None and flags.max_annotations < 0:
        raise ConfigError("--max-annotations must be 0 or more")
    if flags.engine != "local" and flags.engine not in choices("check_engine"):
        allowed = ", ".join(choices("check_engine"))
        raise ConfigError(f"--engine must be one of {allowed}, not {flags.engine!r}")
    if flags.results_format not in RESULTS_FORMATS:
        raise ConfigError(
            f"--results-format must be parquet or jsonl, not {flags.results_format!r}"
        )
    if not 0.5 <= flags.confidence < 1.0:
        raise ConfigError(f"--confidence must be from 0.5 to below 1, not {flags.confidence:g}")
    if flags.fail_on_regression and flags.compare is None:
        raise ConfigError("--fail-on-regression needs --compare OLD.json")
    rate_gates: tuple[RateGate, ...] = ()
    if config.max_rate:
        # lazy: check without --max-rate starts without it
        from llmfix.batch.rates import parse_gates

        rate_gates = parse_gates(config.max_rate, config.group_by)
    return CheckRun(
        config=config,
        gate=gate,
        options=gate.options(make_options(**config.options)),
        verbosity=flags.verbosity,
        llm=flags.llm,
        tool_calls=flags.tool_calls,
        engine=flags.engine,
        results=flags.results,
        results_format=flags.results_format,
        allow_empty=flags.allow_empty,
        max_annotations=flags.max_annotations,
        reports=flags.reports,
        follow_symlinks=flags.follow_symlinks,
        rate_gates=rate_gates,
        significant_only=flags.significant_only,
        compare=flags.compare,
        fail_on_regression=flags.fail_on_regression,
        confidence=flags.confidence,
        history=flags.history,
    )


@overload
def run_config(flags: RepairFlags) -> "Settings": ...
@overload
def run_config(flags: CheckFlags) -> "Settings": ...
def run_config(flags: RepairFlags | CheckFlags) -> "Settings":
    """What the config files give the run these flags start (read with the trust rules);
    its ``ignored`` keys and ``limited`` limits are for the command to name."""
    return repair_config(flags) if isinstance(flags, RepairFlags) else check_config(flags)


@overload
def build_run(flags: RepairFlags, config: "Settings | None" = None) -> RepairRun: ...
@overload
def build_run(flags: CheckFlags, config: "Settings | None" = None) -> CheckRun: ...
def build_run(flags: RepairFlags | CheckFlags, config: "Settings | None" = None) -> Run:
    """The run the flags describe, with the environment and the config files (``config``:
    :func:`run_config`, read when not given): a :class:`RepairRun` for :class:`RepairFlags`,
    a :class:`CheckRun` for :class:`CheckFlags`. A bad flag, combination, config file or
    schema is a :class:`ConfigError` (or ``SchemaError``), before any input is read."""
    if isinstance(flags, RepairFlags):
        return repair_run(flags, config)
    return check_run(flags, config)
