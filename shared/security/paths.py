"""Path safety: a user-supplied path may only name something inside its root, and messages never show server paths."""

from __future__ import annotations

import os
import re
from pathlib import Path

from shared.errors import InvalidInput


PATH_MAX = 4096  # the kernel's limit on one path; a longer one could be written folder by folder, never read


def _check_relative(user_path: str) -> None:
    """Refuse what can never name something under a root: nothing, NUL, absolute or home paths."""
    if not isinstance(user_path, str) or not user_path.strip():
        raise InvalidInput("A path is required.")
    if "\x00" in user_path:
        raise InvalidInput("The path contains a NUL byte.")
    if Path(user_path).is_absolute() or user_path.startswith("~"):
        raise InvalidInput(f"Absolute paths are not allowed: {user_path!r}. Give a path relative to the workspace.")


def relative_parts(user_path: str) -> tuple[str, ...]:
    """The names `user_path` walks through under its root, `.` and `..` settled by text alone.

    Nothing on disk is consulted, so a caller resolves the names beneath a descriptor of the root
    (where a symbolic link is refused, which keeps this reading equal to the kernel's).
    """
    _check_relative(user_path)
    parts: list[str] = []
    for name in user_path.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if not parts:
                raise InvalidInput(f"The path {user_path!r} points outside the workspace.")
            parts.pop()
            continue
        parts.append(name)
    if len(os.fsencode("/".join(parts))) >= PATH_MAX:
        raise InvalidInput("The path is too long.")
    return tuple(parts)


def resolve_inside(root: Path, user_path: str) -> Path:
    """The real path `user_path` names under `root`; absolute paths and escapes are refused.

    Symlinks are followed before the check, so a link inside the root that points outside it
    is refused like `../` is.
    """
    _check_relative(user_path)
    real_root = Path(root).resolve()
    target = (real_root / user_path).resolve()
    if not target.is_relative_to(real_root):
        raise InvalidInput(f"The path {user_path!r} points outside the workspace.")
    return target


def relative_name(root: Path, path: Path) -> str:
    """How a path inside `root` is shown to the model: relative, with forward slashes."""
    rel = Path(path).relative_to(Path(root).resolve())
    return rel.as_posix() if rel.parts else "."


_ABSOLUTE_PATH = re.compile(r"(?:^|(?<=[\s'\"(=\[]))/[\w.@+~-]+(?:/[\w.@+~-]*)*")


def _forms(path: Path) -> list[str]:
    """The spellings of `path` a message may contain: as given, absolute, and with links resolved."""
    forms = {str(path), str(path.absolute()), str(path.resolve())}
    return sorted(forms, key=len, reverse=True)


def private_paths_hidden(text: str, *, data_dir: Path, user_id: str, foreign_paths: bool = False) -> str:
    """`text` as a model may see it: workspace paths relative, other server paths and the user id hidden.

    `foreign_paths` also hides any other absolute path (for messages of unexpected exceptions,
    which may name library or system files).
    """
    user_root = Path(data_dir) / "users" / user_id
    for form in _forms(user_root / "workspace"):
        text = text.replace(form + "/", "").replace(form, ".")
    for form in _forms(user_root):
        text = text.replace(form, "[your files]")
    for form in _forms(Path(data_dir)):
        if Path(form).is_absolute() and form != "/":
            text = text.replace(form, "[data]")
    if user_id:
        text = text.replace(user_id, "[user]")
    if foreign_paths:
        text = _ABSOLUTE_PATH.sub("[path]", text)
    return text
