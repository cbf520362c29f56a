"""Path safety: a user-supplied path may only name something inside its root directory."""

from __future__ import annotations

from pathlib import Path

from shared.errors import InvalidInput


def resolve_inside(root: Path, user_path: str) -> Path:
    """The real path `user_path` names under `root`; absolute paths and escapes are refused.

    Symlinks are followed before the check, so a link inside the root that points outside it
    is refused like `../` is.
    """
    if not isinstance(user_path, str) or not user_path.strip():
        raise InvalidInput("A path is required.")
    if "\x00" in user_path:
        raise InvalidInput("The path contains a NUL byte.")
    if Path(user_path).is_absolute() or user_path.startswith("~"):
        raise InvalidInput(f"Absolute paths are not allowed: {user_path!r}. Give a path relative to the workspace.")
    real_root = Path(root).resolve()
    target = (real_root / user_path).resolve()
    if not target.is_relative_to(real_root):
        raise InvalidInput(f"The path {user_path!r} points outside the workspace.")
    return target


def relative_name(root: Path, path: Path) -> str:
    """How a path inside `root` is shown to the model: relative, with forward slashes."""
    rel = Path(path).relative_to(Path(root).resolve())
    return rel.as_posix() if rel.parts else "."
