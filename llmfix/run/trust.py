"""Whose settings llmfix believes: the user's own, and the project files the user trusted.

A project file (``llmfix.yaml``, ``[tool.llmfix]``) arrives with whatever repository is
checked out, so the settings that send data over the network or choose a secret are taken
only from sources the user controls:

- command-line flags;
- ``LLMFIX_*`` environment variables (:func:`env_llm_settings`, :func:`env_llm_enabled`,
  :func:`env_trusts_config`);
- the user config file, ``config.yaml`` in :func:`user_config_dir` (``$LLMFIX_CONFIG_DIR``,
  else ``$XDG_CONFIG_HOME/llmfix``, else ``%APPDATA%\\llmfix`` on Windows, else
  ``~/.config/llmfix``);
- a project file the user trusted: ``llmfix config trust FILE`` records its absolute path
  and the SHA-256 of its bytes in ``trusted.json`` beside the user config (a changed file
  is untrusted again), or ``--trust-config`` / ``LLMFIX_TRUST_CONFIG=1`` for one run.

This module reads and writes those records, and decides what an untrusted project file may
still set (:func:`untrusted_view`); :mod:`llmfix.run.config_file` reads the files.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from llmfix.errors import ConfigError
from llmfix.files.atomic import write_atomic
from llmfix.files.containment import VCS_DIRS, within

USER_CONFIG_NAME = "config.yaml"
TRUST_STORE_NAME = "trusted.json"

# The llm: keys that send data somewhere or choose a secret (or where records of it go),
# and the price table (a model priced at nothing would defeat the user's cost budget).
LLM_NETWORK_KEYS = (
    "provider",
    "base_url",
    "api_key_env",
    "cache_dir",
    "save_prompts",
    "redact",
    "prices",
)

# LLMFIX_* variables that set an llm: key (the user's own environment: trusted).
ENV_LLM_KEYS = {
    "LLMFIX_PROVIDER": "provider",
    "LLMFIX_MODEL": "model",
    "LLMFIX_BASE_URL": "base_url",
    "LLMFIX_API_KEY_ENV": "api_key_env",
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def user_config_dir() -> Path:
    """The directory of the user's own llmfix settings (it need not exist)."""
    explicit = os.environ.get("LLMFIX_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec: a relative value is to be ignored
        return Path(xdg) / "llmfix"
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "llmfix"
    return Path.home() / ".config" / "llmfix"


def user_config_path() -> Path:
    return user_config_dir() / USER_CONFIG_NAME


def trust_store_path() -> Path:
    return user_config_dir() / TRUST_STORE_NAME


def _flag(name: str) -> bool | None:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name} must be 1 or 0 (true/false), not {value!r}")


def env_trusts_config() -> bool:
    """``LLMFIX_TRUST_CONFIG=1``: trust the project file of this run (as ``--trust-config``)."""
    return bool(_flag("LLMFIX_TRUST_CONFIG"))


def env_llm_enabled() -> bool | None:
    """``LLMFIX_LLM=1`` / ``=0``: as ``--llm`` / ``--no-llm``; ``None`` when not set."""
    return _flag("LLMFIX_LLM")


def env_llm_settings() -> dict[str, str]:
    """The llm: settings given by ``LLMFIX_PROVIDER``, ``LLMFIX_MODEL``, ``LLMFIX_BASE_URL``
    and ``LLMFIX_API_KEY_ENV``."""
    return {key: os.environ[name] for name, key in ENV_LLM_KEYS.items() if os.environ.get(name)}


# ---------------------------------------------------------------------- the user config


def read_user_config() -> dict[str, Any]:
    """The user config file's settings (``llm`` and ``allow_remote_refs``), checked.

    A missing file is no settings. ``llm.enabled`` (default true) says whether the section
    turns LLM repair on by itself or only gives the settings ``--llm`` uses.
    """
    path = user_config_path()
    if not path.is_file():
        return {}
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the user config must be a mapping of settings")
    out: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key).strip().replace("-", "_")
        if key == "allow_remote_refs":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: allow-remote-refs must be true or false")
            out[key] = value
        elif key == "llm":
            out[key] = checked_llm_section(value, f"{path}: llm")
        else:
            import difflib

            close = difflib.get_close_matches(key, ["llm", "allow_remote_refs"], n=1)
            hint = f" (did you mean {close[0].replace('_', '-')!r}?)" if close else ""
            raise ConfigError(
                f"{path}: unknown key {str(raw_key)!r}{hint}; the user config holds llm and "
                "allow-remote-refs (project settings go in llmfix.yaml)"
            )
    return out


def checked_llm_section(value: Any, source: str) -> dict[str, Any]:
    """An ``llm:`` mapping with its keys normalised (``-`` → ``_``) and its values checked."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: expected a mapping of LLM repair settings")
    section = {str(k).strip().replace("-", "_"): v for k, v in value.items()}
    enabled = section.pop("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{source}.enabled: expected true or false, got {enabled!r}")
    # (start-up: nothing of llmfix.llm loads while LLM repair is off)
    # lazy: repair on a clean answer, repair --schema on a valid answer start without it
    from llmfix.llm.config import LlmConfig

    LlmConfig.from_mapping(section, source=source)  # unknown keys and types are errors
    return {**section, "enabled": enabled}


# ---------------------------------------------------------------------- trusted project files


def file_digest(path: Path, data: bytes | None = None) -> str:
    """SHA-256 of the file's bytes (``data``: those bytes, read already), in hex."""
    import hashlib  # only when a project file is looked up in the trust list

    try:
        return hashlib.sha256(path.read_bytes() if data is None else data).hexdigest()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _read_store() -> dict[str, str]:
    """Trusted files: absolute path → SHA-256."""
    path = trust_store_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the trusted files: {exc}") from None
    entries = data.get("trusted") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: expected {{'trusted': [{{'path': ..., 'sha256': ...}}]}}")
    store: dict[str, str] = {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            store[entry["path"]] = str(entry.get("sha256", ""))
    return store


def _write_store(store: Mapping[str, str]) -> None:
    path = trust_store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [{"path": p, "sha256": store[p]} for p in sorted(store)]
    write_atomic(path, json.dumps({"trusted": entries}, indent=2) + "\n")


def _key(path: Path) -> str:
    """The absolute path, symbolic links not followed: a link in another repository to a
    file you trusted is not trusted (its settings would apply to that repository)."""
    return os.path.abspath(path)


def is_trusted(path: Path, data: bytes | None = None) -> bool:
    """Whether the user trusted this file as it is now (same path, same bytes): ``data``,
    the bytes that were parsed, when given; the file is not read again."""
    recorded = _read_store().get(_key(path))
    return recorded is not None and recorded == file_digest(path, data)


def trust_file(path: Path, data: bytes | None = None) -> str:
    """Record ``path`` as trusted with its current content (``data``: the bytes that were
    read and checked, when given); returns the SHA-256."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    digest = file_digest(path, data)
    store = _read_store()
    store[_key(path)] = digest
    _write_store(store)
    return digest


def untrust_file(path: Path) -> bool:
    """Forget ``path``; ``False`` when it was not trusted."""
    store = _read_store()
    if store.pop(_key(path), None) is None:
        return False
    _write_store(store)
    return True


def untrusted_note(config: str, ignored: tuple[str, ...]) -> str:
    """The one line that says which keys of an untrusted project file were ignored."""
    keys = ", ".join(ignored)
    return (
        f"{config} is not trusted, so its {keys} "
        f"{'was' if len(ignored) == 1 else 'were'} ignored (settings that reach the network, "
        "a secret or files outside the project, or loosen a limit, need your trust); to use "
        "them: "
        f"`llmfix config trust {config}` (recorded until the file changes) or --trust-config"
    )


# ---------------------------------------------------------------------- untrusted project files


def untrusted_view(values: Mapping[str, Any], base: Path) -> tuple[dict[str, Any], list[str]]:
    """What an untrusted project file (in directory ``base``) may set, and the keys left out
    (as written in a file).

    Left out: turning LLM repair on, the llm: keys that choose where requests go, which
    secret they carry and where records of them are written (``provider``, ``base-url``,
    ``api-key-env``, ``cache-dir``, ``save-prompts``, ``redact``), and
    ``allow-remote-refs`` (top level, ``options``, a rule's ``options``); and what would
    read or write outside the file's own directory tree: ``output``, ``write-fixed``,
    ``schema``, ``tools``, ``baseline`` and ``paths`` entries, a rule's ``schema`` and
    ``tools``, and ``checks`` globs, that lead out of it (``..``, absolute paths, symbolic
    links) or into ``.git``, ``.hg``, ``.svn`` (see :mod:`llmfix.files.containment`; links met
    while walking are the walk's to refuse); and a ``schema`` that names a Python type
    (``module:Name``, ``file.py:Name``), since loading it runs the repository's code. The
    model name, attempts, timeouts and every other schema and check setting are kept
    (:func:`llmfix.run.ceilings.untrusted_limits` then leaves out the limits it would
    loosen).
    """
    out = dict(values)
    ignored: list[str] = []
    root = os.path.realpath(base)
    if _python_type(out.get("schema")):
        ignored.append("schema (a Python type: loading it runs code)")
        del out["schema"]
    for key in ("output", "write_fixed", "schema", "tools", "baseline"):
        if key in out and not _inside(root, out[key]):
            ignored.append(f"{key.replace('_', '-')} (outside {base})")
            del out[key]
    if "paths" in out:
        kept_paths = [p for p in out["paths"] if p == "-" or _inside(root, p)]
        if len(kept_paths) < len(out["paths"]):
            ignored.append(f"paths outside {base}")
            out["paths"] = kept_paths
    options = out.get("options")
    if options and "allow_remote_refs" in options:
        if options["allow_remote_refs"]:
            ignored.append("allow-remote-refs")
        out["options"] = {k: v for k, v in options.items() if k != "allow_remote_refs"}
    rules = []
    for index, rule in enumerate(out.get("checks", ())):
        files = tuple(f for f in rule.files if not _leaves(f))
        if len(files) < len(rule.files):
            ignored.append(f"checks[{index}].files outside {base}")
            rule = replace(rule, files=files)
        if _python_type(rule.schema):
            ignored.append(f"checks[{index}].schema (a Python type: loading it runs code)")
            rule = replace(rule, schema=None)
        for key in ("schema", "tools"):
            if getattr(rule, key) is not None and not _inside(root, getattr(rule, key)):
                ignored.append(f"checks[{index}].{key} (outside {base})")
                rule = replace(rule, **{key: None})
        if "allow_remote_refs" in rule.options:
            if rule.options["allow_remote_refs"]:
                ignored.append(f"checks[{index}].options.allow-remote-refs")
            kept = {k: v for k, v in rule.options.items() if k != "allow_remote_refs"}
            rule = replace(rule, options=kept)
        rules.append(rule)
    if "checks" in out:
        out["checks"] = rules
    llm = out.get("llm")
    if llm:
        if llm.get("enabled", True):
            ignored.append("llm (turning LLM repair on)")
        for key in LLM_NETWORK_KEYS:
            if key in llm and not (key == "redact" and llm[key] is True):
                ignored.append(f"llm.{key.replace('_', '-')}")
        kept_llm = {k: v for k, v in llm.items() if k not in LLM_NETWORK_KEYS}
        out["llm"] = {k: v for k, v in kept_llm.items() if k != "enabled"}
    return out, ignored


def _python_type(ref: Any) -> bool:
    """Whether a schema reference names a Python type (``module:Name``, ``file.py:Name``):
    loading one imports a module, which runs its code."""
    if not isinstance(ref, str) or ":" not in ref or ref.startswith("builtin:"):
        return False
    # (start-up: loaded only for a schema reference with a colon)
    from llmfix.schema.pydantic_models import is_model_ref

    return is_model_ref(ref)


def _inside(root: str, path: str) -> bool:
    """Whether ``path`` (symbolic links followed) is ``root`` or under it, and not in a
    version-control directory (``.git/config`` holds a CI job's token; a hook there runs);
    ``builtin:`` schemas are llmfix's own."""

    if path.startswith("builtin:"):
        return True
    below = os.path.relpath(os.path.realpath(path), root).split(os.sep)
    return within(path, root) and VCS_DIRS.isdisjoint(below)


def _leaves(glob: str) -> bool:
    """Whether a ``checks`` glob can match outside its file's directory, or in a
    version-control directory."""

    parts = glob.replace("\\", "/").split("/")
    return os.path.isabs(glob) or ".." in parts or not VCS_DIRS.isdisjoint(parts)
