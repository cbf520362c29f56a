"""Uploading files into a session: stored in the owner's workspace inbox, typed by content, refused when
hostile (a program called photo.png, an oversize body, a zip bomb, a name that is a path), and never
readable by another user."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from shared.media.inbox import workspace_of
from tests.services.api.helpers import error_of
from tests.support.factories import make_session, make_user

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + os.urandom(200)
ELF = b"\x7fELF\x02\x01\x01" + b"\x00" * 200


def upload(client, user, session_id, body, name="photo.png", **headers):
    return client.post(f"/v1/sessions/{session_id}/attachments", content=body,
                       headers={**user.headers, "X-Filename": name, **headers})


@pytest.fixture
def owner(db):
    return make_user(db)


@pytest.fixture
def session_id(db, owner):
    return make_session(db, owner.id).id


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_an_image_is_stored_in_the_inbox_and_served_to_its_owner(client, settings, owner, session_id):
    answer = upload(client, owner, session_id, PNG, "holiday.png")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert set(body) == {"id", "kind", "filename", "mime", "size", "path"}
    assert (body["kind"], body["mime"], body["size"], body["filename"]) == ("image", "image/png", len(PNG),
                                                                            "holiday.png")
    assert body["path"].startswith("inbox/") and body["path"].endswith("/holiday.png")
    assert (workspace_of(settings, owner.id) / body["path"]).read_bytes() == PNG
    meta = client.get(f"/v1/attachments/{body['id']}", headers=owner.headers).json()
    assert meta["session_id"] == session_id and len(meta["sha256"]) == 64
    content = client.get(f"/v1/attachments/{body['id']}/content", headers=owner.headers)
    assert content.status_code == 200 and content.content == PNG
    assert content.headers["content-type"] == "image/png"
    assert content.headers["x-content-type-options"] == "nosniff"
    assert content.headers["content-disposition"].startswith("inline")


def test_a_document_is_served_as_a_download(client, owner, session_id):
    answer = upload(client, owner, session_id, b"<script>alert(1)</script>\n", "page.html")
    assert answer.status_code == 201, answer.text
    assert answer.json()["mime"] == "text/plain"
    content = client.get(f"/v1/attachments/{answer.json()['id']}/content", headers=owner.headers)
    assert content.headers["content-disposition"].startswith("attachment")
    assert content.headers["content-type"].startswith("text/plain")


def test_another_users_attachment_and_session_are_404(client, db, owner, session_id):
    made = upload(client, owner, session_id, PNG).json()
    stranger = make_user(db)
    for path in (f"/v1/attachments/{made['id']}", f"/v1/attachments/{made['id']}/content"):
        answer = client.get(path, headers=stranger.headers)
        assert answer.status_code == 404 and error_of(answer)["code"] == "attachment_not_found"
    answer = upload(client, stranger, session_id, PNG)
    assert answer.status_code == 404 and error_of(answer)["code"] == "session_not_found"
    assert client.get("/v1/attachments/att_nope/content", headers=owner.headers).status_code == 404


@pytest.mark.parametrize("body,name", [(ELF, "cat.png"), (ELF, "report.pdf"), (b"#!/bin/sh\nrm -rf /\n", "cat.jpg"),
                                       (b"MZ\x90\x00" + b"\x00" * 100, "photo.gif"), (os.urandom(4096), "x.bin")])
def test_a_program_or_unknown_bytes_are_refused_whatever_the_name(client, settings, owner, session_id, body, name):
    before = files_under(workspace_of(settings, owner.id))
    answer = upload(client, owner, session_id, body, name)
    assert answer.status_code == 415, answer.text
    assert error_of(answer)["code"] == "unsupported_media_type"
    assert files_under(workspace_of(settings, owner.id)) == before


def test_an_upload_over_the_cap_is_413_and_leaves_nothing(client, settings, owner, session_id):
    before = files_under(workspace_of(settings, owner.id))

    def chunks():  # no Content-Length: the cap is counted as the body streams
        yield PNG
        for _ in range(settings.media_max_bytes // 65536 + 2):
            yield b"\x00" * 65536

    answer = upload(client, owner, session_id, chunks())
    assert answer.status_code == 413 and error_of(answer)["code"] == "payload_too_large"
    declared = upload(client, owner, session_id, PNG + b"\x00" * settings.media_max_bytes)
    assert declared.status_code == 413
    assert files_under(workspace_of(settings, owner.id)) == before


def zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(3):
            with archive.open(f"zeros-{i}.bin", "w", force_zip64=True) as member:
                block = b"\x00" * (1 << 20)
                for _ in range(200):
                    member.write(block)
    return buffer.getvalue()


def test_a_zip_is_kept_as_a_document_but_a_zip_bomb_is_refused(client, settings, owner, session_id):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("notes.txt", "hello " * 100)
    fine = upload(client, owner, session_id, buffer.getvalue(), "notes.zip")
    assert fine.status_code == 201 and fine.json()["mime"] == "application/zip"
    bomb = zip_bomb()
    assert len(bomb) < settings.media_max_bytes
    before = files_under(workspace_of(settings, owner.id))
    answer = upload(client, owner, session_id, bomb, "bomb.zip")
    assert answer.status_code == 415 and "zip bomb" in error_of(answer)["message"]
    assert files_under(workspace_of(settings, owner.id)) == before


@pytest.mark.parametrize("name", ["../../../etc/passwd.png", "..%2F..%2Fescape.png", "a%00b.png", "\\..\\win.png",
                                  "x" * 1000 + ".png", "%E2%80%AEgnp.exe.png", "..", ""])
def test_hostile_names_are_neutralised_and_nothing_lands_outside(client, settings, owner, session_id, name):
    data_dir = Path(settings.data_dir)
    before = files_under(data_dir) - files_under(workspace_of(settings, owner.id))
    answer = upload(client, owner, session_id, PNG, name)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    stored = body["filename"]
    assert "/" not in stored and "\\" not in stored and "\x00" not in stored and not stored.startswith(".")
    assert len(stored.encode()) <= 120 and stored.endswith(".png")
    assert all(ord(ch) >= 32 and ch != "\u202e" for ch in stored)
    path = workspace_of(settings, owner.id) / body["path"]
    assert path.resolve().is_relative_to(workspace_of(settings, owner.id).resolve()) and path.read_bytes() == PNG
    assert files_under(data_dir) - files_under(workspace_of(settings, owner.id)) <= before | {
        p for p in files_under(data_dir) if "hstack.db" in p.name}


def test_a_link_planted_in_the_workspace_cannot_redirect_the_inbox(client, settings, tmp_path, owner, session_id):
    workspace = workspace_of(settings, owner.id)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "inbox").symlink_to(tmp_path)
    answer = upload(client, owner, session_id, PNG)
    assert answer.status_code == 422 and "not a plain folder" in error_of(answer)["message"]
    assert list(tmp_path.iterdir()) == []


def test_the_same_name_twice_keeps_both_files(client, owner, session_id):
    first = upload(client, owner, session_id, PNG, "same.png").json()
    second = upload(client, owner, session_id, PNG, "same.png").json()
    assert first["path"] != second["path"] and second["filename"] == "same-2.png"


def test_a_turn_carries_the_callers_attachments(client, db, owner, session_id):
    from shared.stores import attachments

    made = upload(client, owner, session_id, PNG).json()
    answer = client.post(f"/v1/sessions/{session_id}/turns", headers=owner.headers,
                         json={"input": "", "attachments": [made["id"]]})
    assert answer.status_code == 202, answer.text
    assert [a.id for a in attachments.for_turn(db, answer.json()["id"])] == [made["id"]]
    again = client.post(f"/v1/sessions/{session_id}/turns", headers=owner.headers,
                        json={"input": "and again", "attachments": [made["id"]]})
    assert again.status_code == 409 and error_of(again)["code"] == "attachment_in_use"


def test_a_turn_naming_another_users_attachment_is_404_and_not_accepted(client, db, owner, session_id, enqueued):
    stranger = make_user(db)
    theirs = upload(client, stranger, make_session(db, stranger.id).id, PNG).json()
    other_session = make_session(db, owner.id).id
    mine_elsewhere = upload(client, owner, other_session, PNG).json()
    for ids in ([theirs["id"]], [mine_elsewhere["id"]], ["att_missing"]):
        answer = client.post(f"/v1/sessions/{session_id}/turns", headers=owner.headers,
                             json={"input": "look", "attachments": ids})
        assert answer.status_code == 404 and error_of(answer)["code"] == "attachment_not_found", answer.text
    assert enqueued.calls == []


@pytest.mark.parametrize("body", [{"input": ""}, {"input": "x", "attachments": [f"att_{i}" for i in range(11)]},
                                  {"input": "x", "attachments": "att_1"}, {"input": "x", "attachments": ["a" * 41]},
                                  {"input": "x", "attachments": [1]}])
def test_bad_attachment_lists_are_422(client, owner, session_id, body):
    answer = client.post(f"/v1/sessions/{session_id}/turns", headers=owner.headers, json=body)
    assert answer.status_code == 422, answer.text


def test_forgetting_a_session_removes_its_attachments_and_their_files(client, db, settings, owner, session_id):
    made = upload(client, owner, session_id, PNG).json()
    client.post(f"/v1/sessions/{session_id}/turns", headers=owner.headers,
                json={"input": "look", "attachments": [made["id"]]})
    assert client.delete(f"/v1/sessions/{session_id}", headers=owner.headers).status_code in (200, 202, 204)
    assert client.get(f"/v1/attachments/{made['id']}", headers=owner.headers).status_code == 404
    assert not (workspace_of(settings, owner.id) / made["path"]).exists()


def test_the_transcript_names_each_messages_attachments(client, db, owner, session_id):
    from shared.stores import attachments as store

    made = upload(client, owner, session_id, PNG).json()
    turn = client.post(f"/v1/sessions/{session_id}/turns", headers=owner.headers,
                       json={"input": "see", "attachments": [made["id"]]}).json()
    from shared.stores import sessions as session_store

    message = session_store.append_messages(db, session_id, [{"role": "user", "content": "see", "turn_id": turn["id"],
                                                              "turn_position": 0}])[0]
    store.link_message(db, turn["id"], message.id)  # what the worker does when it claims the turn
    data = client.get(f"/v1/sessions/{session_id}/messages", headers=owner.headers).json()["data"]
    assert [m["attachments"] for m in data] == [[made["id"]]]
