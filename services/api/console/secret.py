"""The key that signs console cookies: CONSOLE_SECRET, or one generated once and kept in DATA_DIR.

Every api replica sharing the volume must agree on it, or a cookie signed by one would be refused by
another. So the first process writes a random key to a temp file (mode 0600) and links it into place;
`link` fails when the file already exists, so racing replicas all end up reading the one winner.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from shared.config import Settings

FILE_NAME = "console_secret"
KEY_BYTES = 32


def console_secret(settings: Settings) -> bytes:
    """The signing key for this stack's console cookies."""
    if settings.console_secret is not None and settings.console_secret.get_secret_value():
        return settings.console_secret.get_secret_value().encode()
    path = Path(settings.data_dir) / FILE_NAME
    if not path.exists():
        _create(path)
    value = path.read_text().strip()
    if len(value) < KEY_BYTES:
        raise RuntimeError(f"{path} holds no usable console secret; delete it to generate a new one")
    return value.encode()


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mode 0600
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(KEY_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another replica won the race: use its key
    finally:
        Path(tmp).unlink(missing_ok=True)
