"""Settings of LLM repair: which model, how hard to try, what to record.

:class:`LlmConfig` is built from defaults, then the trusted ``llm:`` settings (the user
config; a project file's network and secret keys only when the user trusted it, see
:mod:`llmfix.run.trust`) through :meth:`LlmConfig.from_mapping`, then ``LLMFIX_*`` variables and
command-line flags (:meth:`LlmConfig.with_overrides`); :mod:`llmfix.run.llm` does this for a
command-line run. The API key itself is never a setting of a file: it is read from an
environment variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, or the one ``api_key_env``
names) when a request is made, and it is left out of ``repr`` and :meth:`LlmConfig.to_dict`.
A key from the provider's own variable goes only to the provider's host or to a base URL from
a trusted source.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from llmfix.errors import ConfigError

PROVIDERS: tuple[str, ...] = ("openai", "anthropic")

# How an OpenAI-compatible request asks for JSON (``auto`` picks per schema and falls back).
STRUCTURED_MODES: tuple[str, ...] = (
    "auto",
    "json_schema_strict",  # response_format json_schema, strict: true
    "json_schema",  # response_format json_schema, strict: false
    "json_object_schema",  # response_format json_object with a "schema" (llama.cpp servers)
    "json_object",  # response_format json_object
    "none",  # no response_format (Anthropic: no forced tool, a plain text answer)
)

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",  # OpenAI SDK convention: ends in /v1
    "anthropic": "https://api.anthropic.com",  # Anthropic SDK convention: no /v1
}
DEFAULT_KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

HOW_TO_CONFIGURE = (
    "LLM repair needs a model: pass --model NAME (with --provider openai|anthropic and, for a "
    "local server, --base-url URL), or set it in your user config "
    "(~/.config/llmfix/config.yaml) or llmfix.yaml:  llm: {model: gpt-4o-mini}; the API key "
    "is read from OPENAI_API_KEY / ANTHROPIC_API_KEY"
)


@dataclass(frozen=True)
class LlmConfig:
    """Everything that changes how a model is asked to repair a response."""

    provider: str = "openai"
    model: str | None = None
    base_url: str | None = None  # None: the provider's public API
    api_key_env: str | None = None  # None: OPENAI_API_KEY / ANTHROPIC_API_KEY
    api_key: str | None = field(default=None, repr=False, compare=False)  # library use only
    max_attempts: int = 2  # repair attempts (model answers) per response
    timeout: float = 60.0  # seconds per HTTP request, in all (however slowly it trickles)
    temperature: float | None = 0.0  # None: not sent (some models reject it)
    max_tokens: int = 2048
    structured_mode: str = "auto"
    max_retries: int = 4  # transport retries per request (a separate budget from attempts)
    backoff_base: float = 0.5  # seconds; full jitter over base * 2**retry
    backoff_max: float = 30.0  # cap on one wait, Retry-After included
    max_output_chars: int = 2000  # how much of the original output a prompt shows
    partial: bool = True  # ask only for the failing properties when most of the value is valid
    cache: bool = True
    cache_dir: str | None = None  # None: $XDG_CACHE_HOME/llmfix or ~/.cache/llmfix
    redact: bool = True  # redact PII and keys in recorded prompts and answers
    save_prompts: str | None = None  # directory: one JSON file per attempt
    max_calls: int | None = None  # model requests per run, all responses together
    # issue 36: continue a cut-off answer from its valid beginning (see llmfix.llm.continuation)
    continuation: bool = True
    # send a grammar of the rest of the value with a continuation, to servers that take
    # llama.cpp's ``grammar`` field (see llmfix.llm.grammar); never to known hosted APIs
    continuation_grammar: bool = True
    max_run_tokens: int | None = None  # input + output tokens per run (--max-llm-tokens)
    max_cost: float | None = None  # US dollars per run (--max-llm-cost); needs a price
    # model → {"input": USD per million input tokens, "output": USD per million output}
    prices: Mapping[str, Mapping[str, float]] | None = field(default=None, compare=False)
    # keep what a server refused (a structured mode, a prefill) across runs, beside the cache
    remember_servers: bool = True
    # False when base_url came from a source the user did not vouch for (an untrusted
    # mapping): then no request goes there (see resolve_api_key)
    base_url_trusted: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise ConfigError(f"llm: {problems[0]}")

    # ------------------------------------------------------------------ building

    @classmethod
    def from_mapping(
        cls, mapping: Mapping[str, Any], *, source: str = "llm", trusted: bool = True
    ) -> LlmConfig:
        """Settings from the ``llm:`` section of a config file (keys with ``-`` or ``_``).

        Unknown keys are errors with a suggestion; values are type-checked. An ``api_key``
        key is refused: keys belong in the environment. With ``trusted=False`` (a mapping
        the user did not write, such as a checked-out repository's file) the keys that
        choose a secret or where records go (``api_key_env``, ``cache_dir``,
        ``save_prompts``, ``redact``) are refused too, and a ``base_url`` is marked
        untrusted: no request is sent there.
        """
        if not isinstance(mapping, Mapping):
            raise ConfigError(f"{source}: expected a mapping of settings")
        known = {f.name for f in fields(cls)} - {"api_key", "base_url_trusted"}
        values: dict[str, Any] = {}
        for raw_key, value in mapping.items():
            key = str(raw_key).replace("-", "_")
            if key == "api_key":
                raise ConfigError(
                    f"{source}: api_key does not belong in a config file; put the key in an "
                    "environment variable and name it with api_key_env"
                )
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigError(f"{source}: unknown key {raw_key!r}{hint}")
            if not trusted and key in _CHOOSES_SECRETS:
                raise ConfigError(
                    f"{source}: {raw_key} is not taken from an untrusted source (it chooses "
                    "a secret or where records are written)"
                )
            values[key] = value
        for key, value in values.items():
            expected, ok = _KEY_TYPES[key]
            if not ok(value):
                raise ConfigError(f"{source}.{key}: expected {expected}, got {value!r}")
        if not trusted and values.get("base_url") is not None:
            values["base_url_trusted"] = False
        try:
            return cls(**values)
        except ConfigError as error:
            raise ConfigError(str(error).replace("llm:", f"{source}:", 1)) from None

    def with_overrides(self, **changes: Any) -> LlmConfig:
        """A copy with the given settings changed; ``None`` values are ignored (unset flags)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ConfigError(f"unknown LLM setting {unknown[0]!r}")
        given = {k: v for k, v in changes.items() if v is not None}
        if "base_url" in given:  # the caller's own choice (a flag)
            given.setdefault("base_url_trusted", True)
        return replace(self, **given) if given else self

    # ------------------------------------------------------------------ derived

    @property
    def url(self) -> str:
        """The base URL requests go to (without a trailing slash)."""
        return (self.base_url or DEFAULT_BASE_URLS[self.provider]).rstrip("/")

    @property
    def key_env(self) -> str:
        return self.api_key_env or DEFAULT_KEY_ENVS[self.provider]

    @property
    def is_default_endpoint(self) -> bool:
        return self.base_url is None or self.url == DEFAULT_BASE_URLS[self.provider]

    def require_model(self) -> None:
        """Raise :class:`ConfigError` saying how to configure a model when none is set."""
        if not self.model:
            raise ConfigError(HOW_TO_CONFIGURE)

    def resolve_api_key(self) -> str | None:
        """The API key, or ``None`` for a local server that needs none.

        The public endpoints need one: a missing key there is a :class:`ConfigError`. A
        base URL from an untrusted source (``base_url_trusted`` false) is a
        :class:`ConfigError` before any request: neither a key read from the provider's
        variable nor the output to repair is sent to a host the user did not choose.
        """
        if self.api_key:
            return self.api_key
        key = os.environ.get(self.key_env, "").strip()
        if not self.base_url_trusted and not self.is_default_endpoint:
            what = f"the {self.key_env} key" if key else "the model output"
            raise ConfigError(
                f"not sending {what} to {self.url}: that base URL comes from an untrusted "
                "source; give it with --base-url or the user config, or trust the project "
                "file (`llmfix config trust FILE`)"
            )
        if key:
            return key
        if self.is_default_endpoint:
            raise ConfigError(
                f"no API key for {self.provider}: set the {self.key_env} environment variable "
                "(or name another one with api_key_env)"
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        """The settings, for a report (never the key)."""
        hidden = ("api_key", "base_url_trusted")
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in hidden}
        if self.prices is not None:
            out["prices"] = {k: dict(v) for k, v in self.prices.items()}
        return out

    @property
    def cache_path(self) -> Path:
        """The directory of the answer cache and of what servers refused."""
        return Path(self.cache_dir).expanduser() if self.cache_dir else default_cache_dir()

    def price(self, model: str | None = None) -> tuple[float, float] | None:
        """US dollars per million input and output tokens of ``model`` (default: the
        configured one) from :attr:`prices`, or ``None`` when not given."""
        found = (self.prices or {}).get(model or self.model or "")
        if found is None:
            return None
        return float(found["input"]), float(found["output"])

    def require_price(self) -> None:
        """Raise :class:`ConfigError` when a cost budget is set and the model has no price:
        a budget that cannot be counted is refused at the start, not found out later."""
        if self.max_cost is not None and self.price() is None:
            raise ConfigError(
                f"llm: --max-llm-cost needs the price of model {self.model!r}: add it to the "
                f"config, llm: {{prices: {{{self.model}: {{input: USD, output: USD}}}}}} "
                "(US dollars per million tokens)"
            )


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/llmfix``, else ``~/.cache/llmfix``."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "llmfix"


# Keys an untrusted mapping may not set (see LlmConfig.from_mapping).
# prices: a table that says a model costs nothing would defeat the user's cost budget.
_CHOOSES_SECRETS = frozenset({"api_key_env", "cache_dir", "save_prompts", "redact", "prices"})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _opt(check: Any) -> Any:
    return lambda value: value is None or check(value)


_KEY_TYPES: dict[str, tuple[str, Any]] = {
    "provider": ("one of: " + ", ".join(PROVIDERS), lambda v: v in PROVIDERS),
    "model": ("a model name", _opt(lambda v: isinstance(v, str))),
    "base_url": ("a URL", _opt(lambda v: isinstance(v, str))),
    "api_key_env": ("an environment variable name", _opt(lambda v: isinstance(v, str))),
    "max_attempts": ("a whole number ≥ 1", _is_int),
    "timeout": ("a number of seconds", _is_number),
    "temperature": ("a number, or null to send none", _opt(_is_number)),
    "max_tokens": ("a whole number ≥ 1", _is_int),
    "structured_mode": ("one of: " + ", ".join(STRUCTURED_MODES), lambda v: v in STRUCTURED_MODES),
    "max_retries": ("a whole number ≥ 0", _is_int),
    "backoff_base": ("a number of seconds", _is_number),
    "backoff_max": ("a number of seconds", _is_number),
    "max_output_chars": ("a whole number ≥ 1", _is_int),
    "partial": ("true or false", lambda v: isinstance(v, bool)),
    "cache": ("true or false", lambda v: isinstance(v, bool)),
    "cache_dir": ("a directory path", _opt(lambda v: isinstance(v, str))),
    "redact": ("true or false", lambda v: isinstance(v, bool)),
    "save_prompts": ("a directory path", _opt(lambda v: isinstance(v, str))),
    "max_calls": ("a whole number ≥ 0", _opt(_is_int)),
    "continuation": ("true or false", lambda v: isinstance(v, bool)),
    "continuation_grammar": ("true or false", lambda v: isinstance(v, bool)),
    "max_run_tokens": ("a whole number ≥ 0", _opt(_is_int)),
    "max_cost": ("a number of US dollars", _opt(_is_number)),
    "prices": (
        "a mapping of model name to {input: USD, output: USD} per million tokens",
        _opt(lambda v: _is_price_table(v)),
    ),
    "remember_servers": ("true or false", lambda v: isinstance(v, bool)),
}


def _is_price(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value) and value >= 0


def _is_price_table(table: Any) -> bool:
    """``{model: {input: n, output: n}}`` with finite prices ≥ 0 and nothing else."""
    if not isinstance(table, Mapping):
        return False
    return all(
        isinstance(model, str)
        and isinstance(entry, Mapping)
        and set(entry) == {"input", "output"}
        and all(_is_price(entry[k]) for k in ("input", "output"))
        for model, entry in table.items()
    )


def _problems(config: LlmConfig) -> list[str]:
    """What is wrong with a config's values (the first one is reported)."""
    out = []
    if config.provider not in PROVIDERS:
        close = difflib.get_close_matches(str(config.provider), PROVIDERS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        out.append(
            f"unknown provider {config.provider!r}{hint}; expected one of {', '.join(PROVIDERS)}"
        )
    if config.structured_mode not in STRUCTURED_MODES:
        out.append(
            f"structured_mode must be one of {', '.join(STRUCTURED_MODES)}, "
            f"not {config.structured_mode!r}"
        )
    if config.base_url is not None and not config.base_url.startswith(("http://", "https://")):
        out.append(f"base_url must start with http:// or https://, not {config.base_url!r}")
    if config.max_attempts < 1:
        out.append("max_attempts must be at least 1")
    if config.timeout <= 0:
        out.append("timeout must be a positive number of seconds")
    if config.max_tokens < 1:
        out.append("max_tokens must be at least 1")
    if config.max_retries < 0:
        out.append("max_retries must not be negative")
    if config.backoff_base < 0 or config.backoff_max < 0:
        out.append("backoff_base and backoff_max must not be negative")
    if config.max_output_chars < 1:
        out.append("max_output_chars must be at least 1")
    if config.max_calls is not None and config.max_calls < 0:
        out.append("max_calls must not be negative")
    if config.max_run_tokens is not None and config.max_run_tokens < 0:
        out.append("max_run_tokens must not be negative")
    if config.max_cost is not None and not (
        math.isfinite(config.max_cost) and config.max_cost >= 0
    ):
        out.append("max_cost must be a number of US dollars, 0 or more")
    if config.prices is not None and not _is_price_table(config.prices):
        out.append("prices must map each model to {input: USD, output: USD} per million tokens")
    if config.temperature is not None and not 0 <= config.temperature <= 2:
        out.append("temperature must be between 0 and 2")
    return out
