"""`hstack keys list` and `hstack keys revoke` against a live api."""

from __future__ import annotations

import re
import uuid

import httpx

KEY = re.compile(r"^\s+(hsk_\S+)$", re.MULTILINE)
KEY_ID = re.compile(r"^(key_\w+)\s+(hsk_\S+?)\.\.\.\s+\S+\s+(active|revoked)", re.MULTILINE)


def status_with(api_url: str, key: str) -> int:
    return httpx.get(f"{api_url}/v1/sessions", headers={"Authorization": f"Bearer {key}"}).status_code


def test_keys_list_and_revoke(hstack, api_url):
    """Finding: `hstack keys revoke` did not exist (argparse: invalid choice 'revoke'), so a leaked key could not
    be taken back from the command line.

    `hstack keys list` shows ids and prefixes (never the key), `hstack keys revoke KEY_ID` finds the owner by
    itself, and the key answers 401 at once while the user's other key keeps working.
    """
    name = f"cli-{uuid.uuid4().hex[:8]}"
    first = KEY.search(hstack("users", "create", name)[1]).group(1)
    second = KEY.search(hstack("keys", "create", name)[1]).group(1)

    code, listed, _ = hstack("keys", "list", name)
    assert code == 0 and first not in listed and second not in listed
    rows = {prefix: (key_id, state) for key_id, prefix, state in KEY_ID.findall(listed)}
    assert set(rows) == {first[:10], second[:10]} and {s for _, s in rows.values()} == {"active"}

    assert status_with(api_url, second) == 200
    code, out, err = hstack("keys", "revoke", rows[second[:10]][0])
    assert code == 0, err
    assert "Revoked key" in out and name in out
    assert status_with(api_url, second) == 401
    assert status_with(api_url, first) == 200
    assert "revoked" in hstack("keys", "list", name)[1]
    assert hstack("keys", "revoke", rows[first[:10]][0], "--user", name)[0] == 0
    assert status_with(api_url, first) == 401


def test_revoking_an_unknown_key_is_a_readable_error(hstack):
    """Finding (guard): an unknown key id is named in words, with no traceback."""
    code, out, err = hstack("keys", "revoke", "key_nobody")
    assert code != 0 and out == ""
    assert "No key 'key_nobody'" in err and "Traceback" not in err
