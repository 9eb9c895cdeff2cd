"""One run's settings, built once: the flags, the ``LLMFIX_*`` variables and the config files.

`repair`, `repair --jsonl` and `check` each fill a flags object (:class:`RepairFlags`,
:class:`CheckFlags`) and call :func:`repair_settings` or :func:`check_settings`; what comes
back is a :class:`RunSettings`, frozen and typed, that the library runs from. The config
files are read by :func:`llmfix.run.config_file.load_settings`, with the trust rules of
:mod:`llmfix.run.trust`: what an untrusted project file may not set stays out and is named in
``config.ignored`` (the command says so; the library never prints).

The fixed sets of values a flag takes are the ``str`` enums below; the command line checks
them (and ``--help`` lists them), and :mod:`tests.test_settings` holds them equal to the
library's own lists.

Precedence: built-in defaults < the user config < the project file < ``LLMFIX_*`` < flags.
`repair` takes from the files only the schema (top level and ``checks`` rules),
``allow-remote-refs`` and the ``llm:`` section; its gate and repair options are its flags'.

Every run defines these classes at start-up, so they are kept cheap to define: the flag
records are NamedTuples, and annotations are evaluated (no ``from __future__ import
annotations``: a NamedTuple would compile each string annotation), with the names that are
imported only for type checking written in quotes.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple, cast

from llmfix.errors import ConfigError

if TYPE_CHECKING:
    from llmfix.batch.gate import FailOn, Gate
    from llmfix.inputs import Kind as InputKind
    from llmfix.inputs import Messages as InputMessages
    from llmfix.inputs import ReadOptions
    from llmfix.model import Risk
    from llmfix.options import RepairOptions
    from llmfix.run.config_file import Settings
    from llmfix.schema.validate import SchemaValidator
    from llmfix.toolcalls.registry import ToolRegistry


class Choice(str, Enum):
    """A value of a flag that takes one of a fixed set (printed as the value itself)."""

    def __str__(self) -> str:
        return str(self.value)


class Pick(Choice):
    BEST = "best"
    FIRST = "first"
    LAST = "last"
    LARGEST = "largest"
    ALL = "all"


class ParserEngine(Choice):
    LLMFIX = "llmfix"
    JSON_REPAIR = "json-repair"


class FailOnChoice(Choice):
    INVALID = "invalid"
    REPAIRED = "repaired"
    EXTRACTED = "extracted"


class RiskChoice(Choice):
    LOSSLESS = "lossless"
    SAFE = "safe"
    GUESS = "guess"


class Kind(Choice):
    AUTO = "auto"
    TEXT = "text"
    JSON = "json"
    JSONL = "jsonl"


class Messages(Choice):
    LAST = "last"
    ALL = "all"


class Emit(Choice):
    CANONICAL = "canonical"
    OPENAI = "openai"
    ANTHROPIC = "anthropic"


class ToolFormat(Choice):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"
    TOOL_CALLS_JSON = "tool-calls-json"
    JSON = "json"
    PYTHONIC = "pythonic"
    ANTHROPIC_XML = "anthropic-xml"
    DEEPSEEK_DSML = "deepseek-dsml"
    DEEPSEEK_V3 = "deepseek-v3"
    STEP3 = "step3"
    KIMI_K2 = "kimi-k2"
    HERMES = "hermes"
    QWEN3_XML = "qwen3-xml"
    GLM = "glm"
    HUNYUAN = "hunyuan"
    JAMBA = "jamba"
    MINICPM5 = "minicpm5"
    MINIMAX_M2 = "minimax-m2"
    MINIMAX_M3 = "minimax-m3"
    MISTRAL = "mistral"
    LLAMA3 = "llama3"
    LLAMA4 = "llama4"
    LFM2 = "lfm2"
    OLMO3 = "olmo3"
    GEMMA4 = "gemma4"
    FUNCTIONGEMMA = "functiongemma"
    HARMONY = "harmony"
    GRANITE = "granite"
    GRANITE_20B_FC = "granite-20b-fc"
    INTERNLM = "internlm"
    GIGACHAT = "gigachat"
    PHI4_MINI = "phi4-mini"
    APERTUS = "apertus"
    LONGCAT = "longcat"


class ReportFormat(Choice):
    TEXT = "text"
    JSON = "json"
    YAML = "yaml"
    JUNIT = "junit"
    GITHUB = "github"
    SARIF = "sarif"
    HTML = "html"
    BASELINE = "baseline"


class ConfigFormat(Choice):
    YAML = "yaml"
    JSON = "json"


class CheckEngine(Choice):
    LOCAL = "local"
    RAY = "ray"
    SPARK = "spark"


class ResultsFormat(Choice):
    PARQUET = "parquet"
    JSONL = "jsonl"


class Provider(Choice):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"


CHECK_ENGINES: tuple[str, ...] = tuple(e.value for e in CheckEngine)
RESULTS_FORMATS: tuple[str, ...] = tuple(f.value for f in ResultsFormat)


def value_of(choice: Choice | None) -> str | None:
    """The string a chosen flag value stands for (``None`` when not given)."""
    return None if choice is None else str(choice.value)


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

    def overrides(self) -> dict[str, str | int | bool | None]:
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
        """The validator of ``ref`` (a path, or ``builtin:NAME``); errors name the schema."""
        key = (ref, allow_remote)
        if key not in self._found:
            from llmfix.schema.load import load_schema
            from llmfix.schema.validate import SchemaValidator

            self._found[key] = SchemaValidator(load_schema(ref), allow_remote=allow_remote)
        return self._found[key]


@dataclass(frozen=True, eq=False)  # compared by identity: fewer methods to define
class RunSettings:
    """Everything one run of `repair` or `check` needs, built once before any input is read."""

    config: "Settings"  # defaults < user config < project file (trust rules) < flags
    gate: "Gate"  # --fail-on, --max-risk
    options: "RepairOptions"  # the top-level repair options, narrowed by the gate
    verbosity: int = 0  # -1 quiet, 0 normal, 1 verbose
    llm: LlmFlags = NO_LLM_FLAGS
    indent: int | None = 2  # repair: None for --compact
    schema: str | None = None  # repair: --schema
    tools: ToolSettings | None = None  # repair: --tools / --tool-calls
    reading: "ReadOptions | None" = None  # repair: how to read API responses (None: as text)
    config_schemas: bool = False  # repair: no --schema, so each file gets the config's
    tool_calls: bool = False  # check: --tool-calls
    engine: str = "local"  # check: where items are checked (local, ray, spark)
    results: str | None = None  # check: --results DIR, every item's result row
    results_format: str = "parquet"  # check: --results files (parquet, jsonl)
    allow_empty: bool = False  # check: no item matched is fine (else a usage error)
    max_annotations: int | None = None  # check: -f github
    reports: tuple[str, ...] = ()  # check: --report FILE, more reports from the same run
    follow_symlinks: bool = False  # check: walk through symbolic links (--follow-symlinks)
    validators: Validators = dataclass_field(default_factory=Validators, repr=False)

    @property
    def fail_on(self) -> "FailOn":
        return self.gate.fail_on

    @property
    def max_risk(self) -> "Risk | None":
        return self.gate.max_risk

    @property
    def llm_enabled(self) -> bool:
        """``--llm``/``--no-llm``, else ``LLMFIX_LLM``, else a trusted ``llm:`` section."""
        from llmfix.run.trust import llm_enabled

        return llm_enabled(self.llm.enabled, self.config)

    def validator_for(self, path: str) -> "SchemaValidator | None":
        """``--schema``, else (with ``config_schemas``) the schema the config gives this file:
        its first matching ``checks`` rule's, else the top-level one, as `check` chooses it."""
        allow = self.options.allow_remote_refs
        if not self.config_schemas:
            return None if self.schema is None else self.validators.get(self.schema, allow)
        from llmfix.run.config_file import rule_for

        settings = self.config
        index = rule_for(settings, path)
        rule = None if index is None else settings.checks[index]
        ref = settings.for_rule(rule, "schema")
        allow = allow or bool(settings.for_rule(rule, "options").get("allow_remote_refs"))
        return None if ref is None else self.validators.get(ref, allow)


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


def repair_config(flags: RepairFlags) -> "Settings":
    """What the config files give a `repair` run (the user's, and the project file found
    upward, read with the trust rules); its ``ignored`` keys are for the command to name."""
    from dataclasses import replace

    from llmfix.run.config_file import load_settings

    settings = load_settings({}, trust=flags.trust_config)
    _, lowered = _repair_limits(flags)
    return replace(settings, limited=(*settings.limited, *lowered)) if lowered else settings


def _repair_limits(flags: RepairFlags) -> tuple[dict[str, object], list[str]]:
    """``--max-depth``, ``--max-size`` and ``--time-budget`` at most their ceilings (see
    :mod:`llmfix.run.ceilings`), and a note for each one lowered."""
    from llmfix.run.ceilings import clamped_options

    given = {
        "max_depth": flags.max_depth,
        "max_size": flags.max_size,
        "time_budget": flags.time_budget,
    }
    limits, notes = clamped_options(given)
    return limits, [f"--{note}" for note in notes]


def repair_settings(flags: RepairFlags, config: "Settings | None" = None) -> RunSettings:
    """The settings of a `repair` run (``config``: :func:`repair_config`, read when not
    given); :class:`ConfigError` (or ``SchemaError``) for a bad one."""
    from dataclasses import replace

    from llmfix.batch.gate import Gate
    from llmfix.pipeline.keywords import make_options

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
    )
    run = RunSettings(
        config=config,
        gate=gate,
        options=gate.options(options),
        verbosity=flags.verbosity,
        llm=flags.llm,
        indent=flags.indent,
        schema=flags.schema,
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
    from llmfix.toolcalls import EMITS
    from llmfix.toolcalls.detect import check_format
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
    from llmfix.rules import all_rule_ids, rule_ids

    disabled = rule_ids(disable)
    if only is not None:
        disabled |= all_rule_ids() - rule_ids(r for r in only.split(",") if r.strip())
    return disabled


class CheckFlags(NamedTuple):
    """The flags of one `check` run: ``settings`` holds those a config file can also set
    (its keys, ``None`` when not given); the rest only the command line sets."""

    settings: Mapping[str, object] = MappingProxyType({})
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
    follow_symlinks: bool = False  # only a flag: a project file cannot ask for it


def check_config(flags: CheckFlags) -> "Settings":
    """Defaults < the user config < the project file (trust rules) < the flags ``settings``."""
    from llmfix.run.config_file import load_settings

    return load_settings(
        flags.settings, config=flags.config, use_config=flags.use_config, trust=flags.trust_config
    )


def check_settings(flags: CheckFlags, config: "Settings | None" = None) -> RunSettings:
    """The settings of a `check` run (``config``: :func:`check_config`, read when not given);
    :class:`ConfigError` for a bad combination."""
    from llmfix.batch.gate import Gate
    from llmfix.pipeline.keywords import make_options

    if config is None:
        config = check_config(flags)
    gate = Gate.parse(config.fail_on, config.max_risk)
    if config.in_place and config.write_fixed:
        raise ConfigError("use either --in-place or --write-fixed, not both")
    if config.jobs < 0 or config.timeout <= 0 or config.max_item_size < 1:
        raise ConfigError("--jobs must be 0 or more; --timeout and --max-item-size positive")
    if flags.max_annotations is not None and flags.max_annotations < 0:
        raise ConfigError("--max-annotations must be 0 or more")
    if flags.engine not in CHECK_ENGINES:
        choices = ", ".join(CHECK_ENGINES)
        raise ConfigError(f"--engine must be one of {choices}, not {flags.engine!r}")
    if flags.results_format not in RESULTS_FORMATS:
        raise ConfigError(
            f"--results-format must be parquet or jsonl, not {flags.results_format!r}"
        )
    return RunSettings(
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
    )
