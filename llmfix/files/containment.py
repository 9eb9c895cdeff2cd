"""Where a run may read and write: one rule, kept here, for every path.

llmfix runs on repositories it did not write, so a path the repository chooses (its config's
settings, the files and symbolic links it holds) is followed only as far as this rule
allows; a path the user names on the command line is taken as named.

- A path is *within* a root when its real path (every symbolic link followed) is the root
  or below it (:func:`within`). An untrusted project file's paths stay within the file's
  directory (:func:`llmfix.run.trust.untrusted_view`). Walked folders follow no symbolic
  link unless ``check --follow-symlinks``, and then none that leads out of an untrusted
  project file's directory (:func:`llmfix.inputs.discover_files`).
- A file a walk listed is read only where it was listed (:class:`llmfix.files.read.Within`,
  carried from discovery to the readers in ``WalkNotes.within``): opened without following
  a final link (unless ``--follow-symlinks``), and refused unless the open file's real path
  (:func:`descriptor_path`) is still below the folder walked, or the untrusted project
  file's folder for its paths. The check is made on what was opened, so a file or folder
  swapped for a link after the listing is caught.
- Nothing is written into a version-control directory (``.git``, ``.hg``, ``.svn``),
  whoever named the path (:func:`refuse_vcs`): a hook or ``.git/config`` written there
  would run.
- The ``--write-fixed`` mirror is written through directory descriptors opened one
  component at a time without following links (:func:`open_below`): a link anywhere below
  the mirror's root is refused, and a link swapped in after a check cannot be followed,
  because the check is the open itself.
- No output is written onto an input of the same run (:func:`same_files`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Iterable, Sequence

from llmfix.errors import PathRefused

VCS_DIRS = frozenset({".git", ".hg", ".svn"})

# Directory descriptors (openat, mkdirat, renameat): every POSIX system Python runs on.
DIR_FDS = (
    hasattr(os, "O_DIRECTORY")
    and hasattr(os, "O_NOFOLLOW")
    and os.open in os.supports_dir_fd
    and os.rename in os.supports_dir_fd
    and os.mkdir in os.supports_dir_fd
)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def shown(path: str) -> str:
    """A path as messages show it: relative to the working directory when under it."""
    relative = os.path.relpath(path) if os.path.isabs(path) else path
    return path if relative.startswith("..") else relative


def within(path: str, root: str) -> bool:
    """Whether ``path`` (symbolic links followed) is ``root`` (followed too) or under it."""
    return real_below(os.path.realpath(path), os.path.realpath(root))


def real_below(real: str, top: str) -> bool:
    """Whether the real path ``real`` is the real path ``top`` or under it."""
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def vcs_dir(path: str) -> str | None:
    """The version-control directory ``path`` is in, as written or once links are followed."""
    for candidate in (os.path.abspath(path), os.path.realpath(path)):
        parts = candidate.split(os.sep)
        for index, part in enumerate(parts):
            if part in VCS_DIRS:
                return os.sep.join(parts[: index + 1]) or part
    return None


def refuse_vcs(path: str, doing: str = "writing") -> None:
    """Raise :class:`PathRefused` for a path in a version-control directory."""
    found = vcs_dir(path)
    if found is not None:
        raise PathRefused(path, f"{shown(found)} is a version-control directory", doing)


def first_link(path: str, root: str) -> str | None:
    """The first component of ``path`` below ``root`` (``path`` relative to it, or under
    it) that is a symbolic link, as a path; ``None`` when there is none."""
    relative = os.path.relpath(path, root)
    if relative == "." or relative.startswith(".."):
        return None
    current = root
    for part in relative.split(os.sep):
        current = os.path.join(current, part)
        if os.path.islink(current):
            return current
    return None


def link_problem(link: str, root: str) -> str:
    """Why the symbolic link ``link`` below ``root`` is not followed."""
    if within(link, root):
        return f"{shown(link)} is a symbolic link (not followed)"
    where = shown(root)
    where = "the working directory" if where == "." else where
    return f"{shown(link)} is a symbolic link that leads outside {where}"


def refuse_mirror_root(root: str) -> None:
    """Refuse a ``--write-fixed`` folder in a version-control directory, or one reached
    through a symbolic link of the working tree that leads out of it: the checkout's own
    link (``fixed -> ~``) would put the repository's file names (``.bashrc``) anywhere."""
    refuse_vcs(root)
    tree = os.getcwd()
    link = first_link(os.path.abspath(root), tree)
    if link is not None and not within(link, tree):
        why = link_problem(link, tree) + " (name the folder it leads to, if that is meant)"
        raise PathRefused(root, why, "writing into")


def open_below(root: str, parts: Sequence[str], target: str) -> int:
    """A descriptor of the directory ``root/parts...``, each component opened (and made,
    when missing) without following a symbolic link; the root itself as named.

    :class:`PathRefused` (naming ``target``, the file to be written) for a link or a
    version-control directory on the way. The caller closes the descriptor.
    """
    os.makedirs(root, exist_ok=True)
    descriptor = os.open(root, _DIR_FLAGS)
    try:
        current = root
        for part in parts:
            current = os.path.join(current, part)
            if part in VCS_DIRS:
                why = f"{shown(current)} is a version-control directory"
                raise PathRefused(target, why)
            following = _open_child(descriptor, part, current, root, target)
            os.close(descriptor)
            descriptor = following
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _open_child(parent: int, name: str, path: str, root: str, target: str) -> int:
    flags = _DIR_FLAGS | _NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP, errno.EMLINK):
            if stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                raise PathRefused(target, link_problem(path, root)) from None
            raise PathRefused(target, f"{shown(path)} is not a directory") from None
        raise
    with contextlib.suppress(FileExistsError):  # made meanwhile: opened as any other
        os.mkdir(name, 0o777, dir_fd=parent)
    return _open_child(parent, name, path, root, target)


def descriptor_path(descriptor: int) -> str | None:
    """The real path of an open file or directory, when the system says (Linux, macOS)."""
    if sys.platform.startswith("linux"):
        try:
            return os.readlink(f"/proc/self/fd/{descriptor}")
        except OSError:
            return None
    if sys.platform == "darwin":
        import fcntl

        try:
            raw = fcntl.fcntl(descriptor, 50, b"\0" * 1024)  # F_GETPATH
        except OSError:
            return None
        return raw.split(b"\0", 1)[0].decode(errors="surrogateescape") or None
    return None


def same_files(paths: Iterable[str]) -> dict[tuple[int, int], str]:
    """The existing files among ``paths``, by (device, inode): what an output must not be."""
    found: dict[tuple[int, int], str] = {}
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            continue
        found.setdefault((info.st_dev, info.st_ino), path)
    return found
