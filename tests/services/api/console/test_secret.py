"""The console's signing key: CONSOLE_SECRET, or one generated once into DATA_DIR that every replica shares."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor

from pydantic import SecretStr

from services.api.console.secret import FILE_NAME, console_secret


def test_the_generated_secret_is_private_kept_and_shared(settings, tmp_data_dir):
    local = settings.model_copy(update={"data_dir": tmp_data_dir, "console_secret": None})
    with ThreadPoolExecutor(8) as pool:  # replicas starting at once agree on one key
        keys = set(pool.map(lambda _: console_secret(local), range(16)))
    assert len(keys) == 1 and len(keys.pop()) >= 32
    path = tmp_data_dir / FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_data_dir.iterdir()] == [FILE_NAME]  # no temp file left behind
    assert console_secret(local) == path.read_text().strip().encode()


def test_console_secret_wins_when_set(settings, tmp_data_dir):
    local = settings.model_copy(update={"data_dir": tmp_data_dir, "console_secret": SecretStr("s" * 40)})
    assert console_secret(local) == b"s" * 40
    assert not (tmp_data_dir / FILE_NAME).exists()
