"""`hstack users …`, `hstack keys create` and `hstack status` against a live api."""

from __future__ import annotations

import re
import uuid

import httpx

from shared.ops import heartbeats, metrics

KEY = re.compile(r"^\s+(hsk_\S+)$", re.MULTILINE)


def works(api_url: str, key: str) -> bool:
    return httpx.get(f"{api_url}/v1/sessions", headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_users_create_prints_the_id_and_a_working_key_once(hstack, api_url):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    code, out, _ = hstack("users", "create", name)

    assert code == 0
    assert re.search(rf"Created user {name} with id usr_\w+", out)
    assert len(KEY.findall(out)) == 1
    assert "shown once" in out
    assert works(api_url, KEY.search(out).group(1))


def test_users_list_shows_created_users(hstack):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    hstack("users", "create", name)
    code, out, _ = hstack("users", "list")
    assert code == 0 and name in out


def test_keys_create_by_name_or_id_issues_another_working_key(hstack, api_url):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    _, created, _ = hstack("users", "create", name)
    user_id = re.search(r"with id (usr_\w+)", created).group(1)

    by_name = hstack("keys", "create", name)
    by_id = hstack("keys", "create", user_id)

    keys = [KEY.search(out).group(1) for _, out, _ in (by_name, by_id)]
    assert by_name[0] == by_id[0] == 0
    assert len({KEY.search(created).group(1), *keys}) == 3
    assert all(works(api_url, key) for key in keys)


def test_an_unknown_user_is_a_readable_error(hstack):
    code, out, err = hstack("keys", "create", "nobody-by-this-name")
    assert code != 0 and out == ""
    assert "No user 'nobody-by-this-name'" in err


def test_a_wrong_admin_key_is_refused_in_words(hstack):
    code, _, err = hstack("users", "list", "--admin-key", "not-the-admin-key-at-all")
    assert code != 0
    assert "HTTP 401" in err and "Traceback" not in err


def test_status_lists_services_queues_and_turns(hstack, redis_client):
    heartbeats.announce(redis_client, "curator", ttl_seconds=30)
    code, out, _ = hstack("status")
    assert code == 0
    assert re.search(r"^\s+curator\s+\S+\s+pid \d+", out, re.MULTILINE)
    assert re.search(r"^queues\s+curator \d+\s+review \d+\s+turns \d+", out, re.MULTILINE)
    assert re.search(r"^turns\s+.*completed \d+", out, re.MULTILINE)


def test_status_shows_the_prompt_cache_hit_share_by_kind(hstack, redis_client):
    metrics.record(redis_client, increments=[("hstack_prompt_tokens_total", 1000, {"kind": "review"}),
                                             ("hstack_cached_prompt_tokens_total", 970, {"kind": "review"})])
    raw = redis_client.hgetall("metrics:hstack_prompt_tokens_total")
    cached = redis_client.hgetall("metrics:hstack_cached_prompt_tokens_total")
    prompt, hit = (float(h.get(b'kind="review"') or h.get('kind="review"')) for h in (raw, cached))

    code, out, _ = hstack("status")

    assert code == 0
    assert re.search(rf"^prompt cache\s+.*review {hit / prompt:.0%} of {prompt:,.0f} tokens", out, re.MULTILINE)


def test_status_without_an_api_says_so_and_fails(monkeypatch, capsys):
    from services.cli.main import main
    from tests.support.env import free_port

    monkeypatch.setenv("HSTACK_URL", f"http://127.0.0.1:{free_port()}")
    code = main(["status"])
    err = capsys.readouterr().err
    assert code != 0
    assert "Cannot reach the api" in err
