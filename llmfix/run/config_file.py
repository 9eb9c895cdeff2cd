"""Project configuration: ``llmfix.yaml`` or ``[tool.llmfix]``.

Read once per run by :mod:`llmfix.run.settings` (all of it for `check`; the schema, ``checks``
rules, ``allow-remote-refs`` and ``llm:`` for `repair`).

The file is found upward from the working directory: in each directory, ``llmfix.yaml``,
``llmfix.yml``, ``.llmfix.yaml``, then a ``pyproject.toml`` with a ``[tool.llmfix]`` table;
the first one found wins (``--config FILE`` names one, ``--no-config`` ignores them).
Keys may be written with ``-`` or ``_``. An unknown key is an error with a suggestion;
values are type-checked. Paths in the file are relative to the file's directory.

Precedence: built-in defaults < the file < command-line flags. ``checks:`` rules map globs
(relative to the file's directory; a glob without ``/`` matches file names anywhere) to
what differs for those files; the first rule that matches a file applies, and anything a
rule leaves out comes from the top level::

    schema: schemas/answer.json
    fail-on: repaired
    checks:
      - files: "evals/goals/*.jsonl"
        field: output
        schema: schemas/goals.json
      - files: ["logs/**/*.jsonl"]
        tools: tools/registry.json
        messages: all
        options: {max_risk: safe}

``options`` are the repair options of :func:`llmfix.make_options` (``pick``,
``schema_repair``, ``disabled_rules``, ``partial``, ``max_risk``, ``max_size``,
``max_depth``, ``time_budget``, ``allow_remote_refs``). The top-level
``allow-remote-refs: true`` (``--allow-remote-refs``) is the same as that option.

Trust: a project file arrives with the repository, so its network and secret settings
(turning LLM repair on, ``llm:`` provider/base-url/api-key-env/cache-dir/save-prompts/redact,
``allow-remote-refs``) are used only when the user trusted it (:mod:`llmfix.run.trust`);
otherwise :func:`llmfix.run.trust.untrusted_view` leaves them out and
:attr:`Settings.ignored` names them.
The user config's ``llm:`` and ``allow-remote-refs`` come under the project file's.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmfix.errors import ConfigError
from llmfix.model import Risk
from llmfix.options import make_options
from llmfix.run.trust import (
    checked_llm_section,
    env_trusts_config,
    is_trusted,
    read_user_config,
    untrusted_view,
)

if TYPE_CHECKING:
    pass

CONFIG_NAMES = ("llmfix.yaml", "llmfix.yml", ".llmfix.yaml")
PYPROJECT = "pyproject.toml"


@dataclass(frozen=True)
class CheckRule:
    """Settings for the files matching ``files`` (globs relative to the config file)."""

    files: tuple[str, ...]
    schema: str | None = None
    tools: str | None = None
    field: str | None = None
    messages: str | None = None
    kind: str | None = None
    group_by: str | None = None
    options: Mapping[str, object] = dataclass_field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"files": list(self.files)}
        for name in ("schema", "tools", "field", "messages", "kind", "group_by"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.options:
            out["options"] = dict(self.options)
        return out


@dataclass(frozen=True)
class Ruled:
    """The settings that differ per ``checks`` rule, as they apply to one rule's files."""

    schema: str | None
    tools: str | None
    field: str | None
    messages: str
    kind: str
    group_by: str | None
    options: Mapping[str, object]


@dataclass(frozen=True)
class Settings:
    """The merged settings of one `check` run (defaults < config file < flags)."""

    paths: tuple[str, ...] = ()
    schema: str | None = None
    tools: str | None = None
    field: str | None = None
    messages: str = "last"
    kind: str = "auto"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    format: str = "text"
    output: str | None = None
    fail_on: str = "invalid"
    max_risk: str | None = None
    baseline: str | None = None
    jobs: int = 0
    timeout: float = 60.0
    max_item_size: int = 10_000_000
    group_by: str | None = None
    write_fixed: str | None = None
    in_place: bool = False
    encoding: str | None = None
    progress: bool = True
    options: Mapping[str, object] = dataclass_field(default_factory=dict)
    checks: tuple[CheckRule, ...] = ()
    max_rate: tuple[str, ...] = ()  # --max-rate gates (issue 35)
    llm: Mapping[str, object] = dataclass_field(default_factory=dict)  # trusted llm: settings
    llm_enabled: bool = False  # a trusted llm: section turns LLM repair on
    config: str | None = None  # the file these came from
    trusted: bool = True  # whether the file's network and secret settings are used
    ignored: tuple[str, ...] = ()  # the keys of an untrusted file that were not used
    limited: tuple[str, ...] = ()  # the limits lowered to their ceilings (llmfix.run.ceilings)
    base: str = "."  # directory the rules' globs are relative to
    flagged: frozenset[str] = frozenset()  # settings given on the command line
    flag_options: Mapping[str, object] = dataclass_field(default_factory=dict)

    def ruled(self, rule: CheckRule | None) -> Ruled:
        """The settings for files under ``rule`` (``None``: no rule matched): each one a
        flag's, else the rule's, else the top level's; ``options`` merged in that order."""
        if rule is None:
            return Ruled(
                self.schema, self.tools, self.field, self.messages, self.kind, self.group_by,
                self.options,
            )  # fmt: skip
        flagged = self.flagged

        def pick(key: str, top: str | None, ruled: str | None) -> str | None:
            return top if key in flagged or ruled is None else ruled

        return Ruled(
            pick("schema", self.schema, rule.schema),
            pick("tools", self.tools, rule.tools),
            pick("field", self.field, rule.field),
            pick("messages", self.messages, rule.messages) or self.messages,
            pick("kind", self.kind, rule.kind) or self.kind,
            pick("group_by", self.group_by, rule.group_by),
            {**self.options, **rule.options, **self.flag_options},
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("flagged", "flag_options", "limited"):
                continue
            if f.name == "checks":
                value = [rule.to_dict() for rule in value]
            elif f.name == "llm":
                value = {k.replace("_", "-"): v for k, v in value.items()}
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name.replace("_", "-")] = value
        return out


# key → (what it must be, check); "path" values are made relative to the file's directory
_PATH_KEYS = frozenset({"schema", "tools", "baseline", "output", "write_fixed"})


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _globs(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    )


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _mapping(value: Any) -> bool:
    return isinstance(value, dict)


def _one_of(*choices: str) -> Callable[[Any], bool]:
    return lambda value: value in choices


def _fail_on(value: Any) -> bool:
    # lazy: config, config -f json start without it
    from llmfix.batch.gate import parse_fail_on

    if not isinstance(value, str):
        return False
    try:
        parse_fail_on(value)
    except ConfigError:
        return False
    return True


def _max_rate(value: Any) -> bool:
    return isinstance(value, (list, dict)) and bool(rate_specs(value))


def rate_specs(value: Any) -> tuple[str, ...]:
    """A config file's ``max-rate`` as ``--max-rate`` specs: a list of them, or a mapping
    ``{KEY: PCT}`` whose ``FIELD=GROUP`` keys hold a group's own ``{KEY: PCT}``; ``()``
    for anything else."""
    if isinstance(value, list):
        return (
            tuple(v for v in value if isinstance(v, str))
            if all(isinstance(v, str) for v in value)
            else ()
        )
    if not isinstance(value, dict):
        return ()
    out: list[str] = []
    for key, limit in value.items():
        if isinstance(limit, dict):
            if not all(isinstance(v, (str, int, float)) for v in limit.values()):
                return ()
            out += [f"{key}:{k}={_pct(v)}" for k, v in limit.items()]
        elif isinstance(limit, (str, int, float)) and not isinstance(limit, bool):
            out.append(f"{key}={_pct(limit)}")
        else:
            return ()
    return tuple(out)


def _pct(value: Any) -> str:
    return value if isinstance(value, str) else f"{value}%"


def _checks(value: Any) -> bool:
    return isinstance(value, list)


def _key_types() -> dict[str, tuple[str, Callable[[Any], bool]]]:
    # lazy: config, config -f json start without it
    from llmfix.batch.gate import FAIL_ON

    # lazy: config, config -f json start without it
    from llmfix.inputs import KINDS, MESSAGES

    # lazy: repair on a clean answer, repair --schema on a valid answer start without it
    from llmfix.reporters import FORMATS

    return {
        "paths": ("a glob or a list of paths", _globs),
        "schema": ("a schema path, builtin:NAME or module:Model", _str),
        "tools": ("a path to a tool registry", _str),
        "field": ("a JSON Pointer or dotted path", _str),
        "messages": ("one of: " + ", ".join(MESSAGES), _one_of(*MESSAGES)),
        "kind": ("one of: " + ", ".join(KINDS), _one_of(*KINDS)),
        "include": ("a glob or a list of globs", _globs),
        "exclude": ("a glob or a list of globs", _globs),
        "format": ("one of: " + ", ".join(FORMATS), _one_of(*FORMATS)),
        "output": ("a file path", _str),
        "fail_on": (
            "one of: " + ", ".join(FAIL_ON) + " (and codes or families, comma-separated)",
            _fail_on,
        ),
        "max_rate": ("a list of KEY=PCT gates, or a mapping of them", _max_rate),
        "max_risk": (
            "one of: " + ", ".join(r.value for r in Risk),
            _one_of(*(r.value for r in Risk)),
        ),
        "baseline": ("a report path", _str),
        "jobs": ("a whole number (0: all cores)", _int),
        "timeout": ("a positive number of seconds", _number),
        "max_item_size": ("a positive whole number", _int),
        "group_by": ("a field name or path", _str),
        "write_fixed": ("a directory path", _str),
        "in_place": ("true or false", _bool),
        "encoding": ("an encoding name", _str),
        "progress": ("true or false", _bool),
        "options": ("a mapping of repair options", _mapping),
        "allow_remote_refs": ("true or false", _bool),
        "checks": ("a list of rules", _checks),
        "llm": ("a mapping of LLM repair settings", _mapping),
    }


_RULE_KEYS = ("files", "schema", "tools", "field", "messages", "kind", "group_by", "options")


def find_config(start: Path) -> Path | None:
    """The nearest ``llmfix.yaml`` (or pyproject with ``[tool.llmfix]``) at or above ``start``."""
    directory = start.resolve()
    while True:
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file():
                return candidate
        pyproject = directory / PYPROJECT
        if pyproject.is_file() and _pyproject_table(pyproject) is not None:
            return pyproject
        if directory.parent == directory:
            return None
        directory = directory.parent


def _read_toml(path: Path, text: str) -> dict[str, Any]:
    import importlib

    toml: Any = None
    for name in ("tomllib", "tomli"):  # tomllib is Python 3.11+; tomli is the same on 3.10
        try:
            toml = importlib.import_module(name)
            break
        except ModuleNotFoundError:
            continue
    if toml is None:
        raise ConfigError(f"{path}: reading pyproject.toml needs Python 3.11+ or tomli")
    try:
        data: dict[str, Any] = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return data


def _pyproject_table(path: Path, data: bytes | None = None) -> Any:
    try:
        text = (read_bytes(path) if data is None else data).decode("utf-8")
    except (ConfigError, UnicodeDecodeError):
        return None
    if "tool.llmfix" not in text:  # cheap test before parsing every pyproject upward
        return None
    tool = _read_toml(path, text).get("tool")
    return tool.get("llmfix") if isinstance(tool, dict) else None


def read_config(path: Path, raw: bytes | None = None) -> dict[str, Any]:
    """The settings in one config file (``raw``: its bytes, when read already), keys
    normalised and values checked.

    Path values are rewritten relative to the working directory.
    """
    raw = read_bytes(path) if raw is None else raw
    if path.name == PYPROJECT:
        data = _pyproject_table(path, raw)
        if data is None:
            raise ConfigError(f"{path}: no [tool.llmfix] table")
    else:
        data = _read_yaml(path, raw)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the configuration must be a mapping of settings")
    return _validated(data, path)


# A config file is a few KB; a repository's FIFO, device or gigabyte file is no config.
CONFIG_MAX_BYTES = 1_000_000


def read_bytes(path: Path) -> bytes:
    """A config file's bytes, read once: what is parsed is what trust is decided on. Only a
    regular file of at most :data:`CONFIG_MAX_BYTES` is read (a FIFO would hang the run)."""
    # lazy: config untrust starts without it
    from llmfix.files.read import ReadRefused, read_regular

    try:
        return read_regular(str(path), CONFIG_MAX_BYTES)
    except ReadRefused as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _read_yaml(path: Path, raw: bytes) -> Any:
    import yaml

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        # file:line:column and the problem alone: PyYAML's own text spans several lines
        # and names the source "<unicode string>".
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = " ".join((exc.problem or exc.context or "syntax error").split())
        raise ConfigError(f"{where}: not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise ConfigError(f"{path}: not valid YAML: {problem}") from None
    return {} if data is None else data


def _normal_key(key: Any) -> str:
    return str(key).strip().replace("-", "_")


def _unknown(key: str, known: Any, where: str) -> ConfigError:
    close = difflib.get_close_matches(key, sorted(known), n=1)
    hint = f" (did you mean {close[0].replace('_', '-')!r}?)" if close else ""
    return ConfigError(f"{where}: unknown key {key.replace('_', '-')!r}{hint}")


def _validated(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    types = _key_types()
    base = path.parent
    out: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = _normal_key(raw_key)
        if key not in types:
            raise _unknown(key, types, str(path))
        expected, check = types[key]
        if not check(value):
            raise ConfigError(f"{path}: {key.replace('_', '-')} must be {expected}, not {value!r}")
        out[key] = value
    for key in ("include", "exclude", "paths"):
        if isinstance(out.get(key), str):
            out[key] = [out[key]]
    if "allow_remote_refs" in out:  # a repair option, spelled like its flag
        allow = out.pop("allow_remote_refs")
        out["options"] = {"allow_remote_refs": allow, **out.get("options", {})}
    if "options" in out:
        out["options"] = _checked_options(out["options"], f"{path}: options")
    if "max_rate" in out:
        out["max_rate"] = list(rate_specs(out["max_rate"]))
    if "llm" in out:
        out["llm"] = checked_llm_section(out["llm"], f"{path}: llm")
    if "paths" in out:
        out["paths"] = [_relative(base, p) for p in out["paths"]]
    for key in _PATH_KEYS & set(out):
        out[key] = _relative(base, out[key])
    if "checks" in out:
        out["checks"] = [_rule(entry, i, path) for i, entry in enumerate(out["checks"])]
    return out


def _rule(entry: Any, index: int, path: Path) -> CheckRule:
    where = f"{path}: checks[{index}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: a rule must be a mapping with at least 'files'")
    types = _key_types()
    values: dict[str, Any] = {}
    for raw_key, value in entry.items():
        key = _normal_key(raw_key)
        if key not in _RULE_KEYS:
            raise _unknown(key, _RULE_KEYS, where)
        if key == "files":
            if not _globs(value) or not value:
                raise ConfigError(f"{where}: files must be a glob or a list of globs")
            values["files"] = (value,) if isinstance(value, str) else tuple(value)
            continue
        expected, check = types[key]
        if not check(value):
            raise ConfigError(f"{where}: {key.replace('_', '-')} must be {expected}, not {value!r}")
        values[key] = value
    if "files" not in values:
        raise ConfigError(f"{where}: a rule needs 'files' (the globs it applies to)")
    for key in ("schema", "tools"):
        if key in values:
            values[key] = _relative(path.parent, values[key])
    if "options" in values:
        values["options"] = _checked_options(values["options"], f"{where}: options")
    return CheckRule(**values)


def _checked_options(options: Mapping[str, Any], where: str) -> dict[str, Any]:

    normal = {_normal_key(k): v for k, v in options.items()}
    if not isinstance(normal.get("allow_remote_refs", False), bool):
        raise ConfigError(f"{where}: allow-remote-refs must be true or false")
    try:
        make_options(**normal)
    except (ConfigError, TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return normal


def _relative(base: Path, value: str) -> str:
    """A path from the config file, as seen from the working directory."""
    if value.startswith("builtin:") or value == "-" or os.path.isabs(value):
        return value
    joined = os.path.normpath(os.path.join(base, value))
    try:
        relative = os.path.relpath(joined)
    except ValueError:  # another drive on Windows
        return joined
    return relative if not relative.startswith("..") else joined


def load_settings(
    flags: Mapping[str, Any],
    *,
    config: str | None = None,
    use_config: bool = True,
    start: Path | None = None,
    trust: bool = False,
) -> Settings:
    """Merge defaults, the user config, the project file (found upward unless named) and
    ``flags``.

    ``flags`` holds only the options given on the command line (``None`` values are
    ignored). ``options`` from flags are merged into the file's ``options``. A project
    file's network and secret settings (see :func:`llmfix.run.trust.untrusted_view`) are
    used only when the file is trusted: ``trust`` (``--trust-config``),
    ``LLMFIX_TRUST_CONFIG=1``, or recorded by ``llmfix config trust``; otherwise they are
    left out and named in ``ignored``.
    """

    user = read_user_config()
    file_values: dict[str, Any] = {}
    found: Path | None = None
    raw = b""
    if use_config:
        if config is not None:
            found = Path(config)
            if not found.exists():
                raise ConfigError(f"--config {config}: no such file")
        else:
            env = os.environ.get("LLMFIX_CONFIG")
            found = Path(env) if env else find_config(start or Path.cwd())
        if found is not None:
            raw = read_bytes(found)  # parsed and hashed: a file swapped meanwhile is not trusted
            file_values = read_config(found, raw)
    trusted = found is None or trust or env_trusts_config() or is_trusted(found, raw)
    ignored: list[str] = []
    if found is not None and not trusted:
        # lazy: config trust, config untrust start without it
        from llmfix.run.ceilings import CHECK_CEILINGS, untrusted_limits

        file_values, ignored = untrusted_view(file_values, found.parent)
        defaults = {key: getattr(Settings, key) for key in CHECK_CEILINGS}
        file_values, looser = untrusted_limits(file_values, user.get("llm"), defaults)
        ignored += looser
    merged: dict[str, Any] = dict(file_values)
    merged["llm"], merged["llm_enabled"] = _merged_llm(user.get("llm"), file_values.get("llm"))
    if "allow_remote_refs" in user:
        merged["options"] = {"allow_remote_refs": user["allow_remote_refs"]}
        merged["options"].update(file_values.get("options", {}))
    flagged: set[str] = set()
    for key, value in flags.items():
        if value is None or (isinstance(value, (list, tuple, dict)) and not value):
            continue
        flagged.add(key)
        if key == "options":
            merged["options"] = {**merged.get("options", {}), **value}
        else:
            merged[key] = value
    # lazy: config trust, config untrust start without it
    from llmfix.run.ceilings import clamped_options, clamped_settings

    merged, limited = clamped_settings(merged)
    for key in ("paths", "include", "exclude", "checks", "max_rate"):
        if key in merged:
            merged[key] = tuple(merged[key])
    settings = Settings(
        **merged,
        trusted=trusted,
        ignored=tuple(ignored),
        limited=tuple(limited),
        flagged=frozenset(flagged),
        flag_options=clamped_options(flags.get("options") or {})[0],  # noted in merged
    )
    if found is not None:
        base = os.path.relpath(found.resolve().parent)
        shown = os.path.relpath(found.resolve())
        shown = str(found.resolve()) if shown.startswith("..") else shown
        settings = replace(settings, config=shown, base=base)
    return settings


def _merged_llm(
    user: Mapping[str, Any] | None, project: Mapping[str, Any] | None
) -> tuple[dict[str, Any], bool]:
    """The llm: settings (user config < project file) and whether they turn LLM repair on:
    the last trusted section decides (``enabled``, true unless it says false)."""
    merged: dict[str, Any] = {}
    enabled = False
    for section in (user, project):
        if section:
            merged.update({k: v for k, v in section.items() if k != "enabled"})
            if "enabled" in section:  # an untrusted file's section has none
                enabled = bool(section["enabled"])
    return merged, enabled
