"""A 100 MB upload is streamed to disk: the api's peak memory (tracemalloc, in this process) stays a few chunks,
not the file; over the cap the same upload is 413 with nothing kept."""

from __future__ import annotations

import tracemalloc

import httpx
import pytest

from shared.media.inbox import workspace_of
from tests.support.factories import make_session, make_user
from tests.support.live import serve_api
from tests.support.media import PNG

SIZE = 100 * 1024 * 1024
CHUNK = b"\x00" * (1024 * 1024)


def body():
    yield PNG
    for _ in range(SIZE // len(CHUNK)):
        yield CHUNK


@pytest.fixture(scope="module")
def roomy_api(settings):
    from services.api.main import create_app

    with serve_api(create_app(settings.model_copy(update={"media_max_bytes": 200 * 1024 * 1024}))) as base_url:
        yield base_url


def test_a_100_mb_upload_is_streamed_never_held_whole(roomy_api, settings, db):
    user = make_user(db)
    session_id = make_session(db, user.id).id
    tracemalloc.start()
    try:
        with httpx.Client(base_url=roomy_api, timeout=300) as client:
            answer = client.post(f"/v1/sessions/{session_id}/attachments", content=body(),
                                 headers={**user.headers, "X-Filename": "big.png"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert answer.status_code == 201, answer.text
    stored = workspace_of(settings, user.id) / answer.json()["path"]
    assert stored.stat().st_size == len(PNG) + SIZE
    print(f"\n100 MB upload: peak traced memory {peak / 1024 / 1024:.1f} MB")
    stored.unlink()
    assert peak < 32 * 1024 * 1024  # a file held whole would be 100 MB


def test_a_100_mb_upload_over_the_cap_is_413_and_leaves_nothing(client, settings, db):
    user = make_user(db)
    session_id = make_session(db, user.id).id
    answer = client.post(f"/v1/sessions/{session_id}/attachments", content=body(),
                         headers={**user.headers, "X-Filename": "big.png"})
    assert answer.status_code == 413 and str(settings.media_max_bytes) in answer.json()["error"]["message"]
    assert not [p for p in workspace_of(settings, user.id).rglob("*") if p.is_file()]
