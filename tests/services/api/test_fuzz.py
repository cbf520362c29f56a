"""No input answers 500: schemathesis generates requests for every route of /openapi.json.

Finding: schemathesis with a user key found 89 responses >= 500 from 5 root causes. This
property test sends generated requests (valid and invalid: the examples, coverage and fuzzing phases)
to the real api over HTTP, with a user key and with the admin key, and fails on any response >= 500.
About half of the cases name the user's real objects (a session with messages, a finished turn, a skill,
a staged memory write) instead of random ids, so the routes' logic is reached, not only their 404s.
Bounded and reproducible: a fixed seed, derandomized, no shrinking, few examples per operation.
Inputs schemathesis does not generate (lone surrogates, names over 255 bytes, ...) have their own
regression tests in test_edge_inputs.py.
"""

from __future__ import annotations

import os
import zlib

import pytest
import requests
import schemathesis

from shared.queue.app import enqueue
from shared.models.cron import JobCreate
from shared.stores import cron_jobs, memory_staged, sessions, turns
from shared.stores.memory import MemoryRequest
from shared.stores.skills import SkillStore
from shared.models.skills import SkillInstall
from tests.support.factories import make_session, make_user
from tests.support.live import serve_api
from tests.support.worker import inprocess_worker

SEED = 9
# tests/run_all.py lowers it on the Postgres pass: the deterministic examples and coverage phases still run
# whole there (every route, the boundary values), only the random fuzzing phase is shorter.
MAX_EXAMPLES = int(os.environ.get("HSTACK_FUZZ_MAX_EXAMPLES", "30"))
REQUEST_TIMEOUT_SECONDS = 30
SKILL = "fuzz-notes"
SKILL_MD = f"---\nname: {SKILL}\ndescription: Notes the fuzz test archives and restores.\n---\nKeep notes short.\n"

FUZZ_CONFIG = {
    "seed": SEED,
    "phases": {
        "examples": {"enabled": True},
        "coverage": {"enabled": True},
        "fuzzing": {"enabled": True},
        "stateful": {"enabled": False},
    },
    "generation": {"max-examples": MAX_EXAMPLES, "no-shrink": True, "deterministic": True, "database": "none",
                   "with-security-parameters": False},
}


@pytest.fixture(scope="module")
def fuzz_api(settings):
    """The api with a real broker and worker (chat completions wait for their turn); streams end fast.

    Throttling would only turn cases into 429s (< 500, so still a pass) and hide the routes behind them.
    """
    from services.api.main import create_app

    quick = settings.model_copy(update={"sse_keepalive_seconds": 0.2, "chat_completion_timeout_seconds": 20.0})
    app = create_app(quick)
    app.state.enqueue = enqueue
    with inprocess_worker(concurrency=4), serve_api(app) as base_url:
        yield base_url


def load_schema():
    """The api's own OpenAPI document (the fuzzed server is built from the same code)."""
    from services.api.main import create_app

    return schemathesis.openapi.from_dict(create_app().openapi(), config=schemathesis.Config.from_dict(FUZZ_CONFIG))


@pytest.fixture(scope="module")
def objects(db, settings, fake_model) -> dict:
    """A user owning one of everything a path can name, and the ids to put in those paths."""
    fake_model.reset()
    owner = make_user(db)
    session = make_session(db, owner.id, title="fuzzed")
    sessions.append_messages(db, session.id, [{"role": "user", "content": "hello"},
                                              {"role": "assistant", "content": "hi there"}])
    turn, _ = turns.create_turn(db, owner.id, session.id, "an old question")
    turns.request_cancel(db, owner.id, turn.id)  # never enqueued: cancelled at once, so its stream ends
    SkillStore.for_user(db, settings, owner.id).install(SkillInstall(name=SKILL, content=SKILL_MD))
    staged = memory_staged.stage(db, settings, owner.id, MemoryRequest.from_args(
        {"target": "memory", "action": "add", "content": "Prefers tea."}), session_id=session.id)
    job = cron_jobs.create(db, owner.id, JobCreate(schedule="every 1h", prompt="Check the fuzz."))
    target = make_user(db)  # the admin's fuzz names this user, never the owner whose key is in use
    return {"owner": owner, "target": target, "session_id": session.id, "turn_id": turn.id, "name": SKILL,
            "staged_id": staged.id, "job_id": job.id}


schema = load_schema()


def with_real_ids(case, replacements: dict[str, str]) -> None:
    """Put a real object's id in place of a generated one for about half the cases (chosen by a stable hash)."""
    for name, value in replacements.items():
        generated = (case.path_parameters or {}).get(name)
        if generated is not None and zlib.crc32(repr(generated).encode()) % 2 == 0:
            case.path_parameters[name] = value


def call(case, base_url: str, token: str, replacements: dict[str, str]) -> None:
    """Send the case (with real ids in about half of them) and fail on any answer >= 500."""
    with_real_ids(case, replacements)
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}
    try:
        response = case.call(base_url=base_url, timeout=REQUEST_TIMEOUT_SECONDS)
    except requests.exceptions.ChunkedEncodingError:
        return  # a stream the server cut (a response < 500 had already started)
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} answered {response.status_code}: {response.text[:500]}\n"
        f"reproduce: {case.as_curl_command()}"
    )


@schema.parametrize()
def test_no_input_answers_500_with_a_user_key(case, fuzz_api, objects):
    ids = {k: objects[k] for k in ("session_id", "turn_id", "name", "staged_id", "job_id")}
    call(case, fuzz_api, objects["owner"].key, ids)


@schema.parametrize()
def test_no_input_answers_500_with_the_admin_key(case, fuzz_api, objects, settings):
    call(case, fuzz_api, settings.admin_api_key.get_secret_value(), {"user_id": objects["target"].id})
