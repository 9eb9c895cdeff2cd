"""Which ``checks`` rule of a config file a file falls under (:func:`rule_for`), and the
files the rules' globs name when a run is given no paths (:func:`rule_files`).

The globs are relative to the config file's directory (:attr:`Settings.base`); a glob
without ``/`` matches file names anywhere below it (see :func:`llmfix.inputs.glob_match`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from llmfix.files.containment import first_link, link_problem
from llmfix.inputs import WalkNotes, discover_files, glob_match

if TYPE_CHECKING:
    from llmfix.run.config_file import Settings


def rule_for(settings: Settings, path: str) -> int | None:
    """The index of the first ``checks`` rule whose globs match ``path``, if any."""
    if not settings.checks or path == "-":
        return None

    relative = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(settings.base)))
    text = relative.as_posix()
    for index, rule in enumerate(settings.checks):
        if any(glob_match(pattern, text) for pattern in rule.files):
            return index
    return None


def rule_files(
    settings: Settings, *, follow_symlinks: bool = False, notes: WalkNotes | None = None
) -> Iterator[str]:
    """The files the ``checks`` rules name, for a run given no paths (sorted, deduplicated).

    Walked as :func:`llmfix.inputs.discover_files` walks: no symbolic link followed unless
    ``follow_symlinks`` (a glob's own folders included: ``link/*``), and, for an untrusted
    file, none that leads out of its directory; what is passed over goes in ``notes``.
    """

    notes = notes if notes is not None else WalkNotes()
    confine = None if settings.trusted else settings.base
    seen: set[str] = set()
    base = Path(settings.base)
    for rule in settings.checks:
        for pattern in rule.files:
            root = base / _fixed_prefix(pattern)
            link = first_link(os.fspath(root), settings.base)
            if link is not None and not follow_symlinks:
                notes.skipped[os.fspath(root)] = link_problem(link, settings.base)
                continue
            if not (root.is_file() or root.is_dir()):
                continue
            found = discover_files(
                [os.fspath(root)], follow_symlinks=follow_symlinks, confine=confine, notes=notes
            )
            for file in sorted(found):
                rel = Path(file).relative_to(base).as_posix()
                if file in notes.unlisted or glob_match(pattern, rel):
                    name = os.path.relpath(file)
                    if file in notes.within:  # read where it was listed, by its new name
                        notes.within[name] = notes.within[file]
                    if name not in seen:
                        seen.add(name)
                        yield name


def _fixed_prefix(pattern: str) -> str:
    """The directories of a glob before its first wildcard (where a walk can start)."""
    parts = pattern.split("/")
    if len(parts) == 1:
        return "."
    fixed = []
    for part in parts[:-1]:
        if any(c in part for c in "*?["):
            break
        fixed.append(part)
    else:
        if not any(c in parts[-1] for c in "*?["):
            return pattern
    return "/".join(fixed) or "."
