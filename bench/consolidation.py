"""`python -m bench.consolidation`: one curator consolidation pass over a user with 60 agent-made skills.

The user holds 54 distinct agent skills, 3 overlapping pairs, a pinned and a user-made skill that overlap
the pairs (never shown to the model). The scripted model merges each group it is shown. Prints the model
calls and tokens of the pass (the scripted model's token estimate: ~4 characters a token), the time of the
pass without the model (candidates, overlap groups, staging) and with it. Set TEST_DATABASE=postgres for
Postgres. Asserts nothing.
"""

from __future__ import annotations

import json
import os
import time

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from shared import clock  # noqa: E402
from shared.config import get_settings  # noqa: E402
from shared.curation import overlap  # noqa: E402
from shared.curation.consolidation import candidates, consolidate, profiles  # noqa: E402
from shared.db import get_database  # noqa: E402
from shared.llm import get_llm  # noqa: E402
from shared.models.skills import SkillInstall  # noqa: E402
from shared.stores import users  # noqa: E402
from shared.stores.skill_writes import SkillEditor  # noqa: E402
from shared.stores.skills import SkillStore  # noqa: E402
from tests.fakes.model import FakeModel, text  # noqa: E402

DISTINCT, PAIRS = 54, ("tea", "taxes", "backup")


def skill_md(name: str, words: str) -> str:
    return f"---\nname: {name}\ndescription: How to {words}.\n---\n" + "".join(
        f"{n}. Step {n} of {words}: check the {words} result.\n" for n in range(1, 8))


def seed(db, settings) -> SkillStore:
    user = users.create_user(db, f"consolidation-bench-{time.time_ns()}")
    store = SkillStore.for_user(db, settings, user.id)
    editor = SkillEditor(store, "review")
    for n in range(DISTINCT):
        editor.create(f"topic{n}", skill_md(f"topic{n}", f"alpha{n} beta{n} gamma{n}"))
    for topic in PAIRS:
        for variant in ("a", "b"):
            editor.create(f"{topic}-{variant}", skill_md(f"{topic}-{variant}", f"{topic} {topic}x {topic}y {topic}z"))
    editor.create("tea-pinned", skill_md("tea-pinned", "tea teax teay teaz"))
    store.set_pinned("tea-pinned", True)
    store.install(SkillInstall(name="tea-mine", content=skill_md("tea-mine", "tea teax teay teaz")))
    return store


def merge(body: dict):
    names = body["messages"][-1]["content"].splitlines()[0].removeprefix("Overlapping skills: ").split(", ")
    umbrella = names[0].split("-")[0] + "-umbrella"
    content = skill_md(umbrella, " and ".join(names))
    return text(json.dumps({"merge": True, "name": umbrella, "merged": names, "content": content, "reason": "same"}))


def main() -> int:
    settings = get_settings()
    db = get_database(settings.sqlalchemy_url)
    model = FakeModel(port=ENV.model_port)
    model.start()
    try:
        store = seed(db, settings)
        started = time.perf_counter()
        found = candidates(store, set())
        groups = overlap.groups(profiles(found), set())
        scan = time.perf_counter() - started
        model.script(*[merge] * len(PAIRS))
        started = time.perf_counter()
        report = consolidate(db, settings, store.user_id, get_llm(settings), clock.utcnow())
        whole = time.perf_counter() - started
        print(f"Consolidation pass on {db.engine.dialect.name}: {len(found)} candidate skills of 62, "
              f"{len(groups)} overlapping groups; scan and grouping (no model) {scan * 1000:.0f} ms")
        print(f"  whole pass: {whole * 1000:.0f} ms, {report.calls} model calls, {report.prompt_tokens} prompt + "
              f"{report.completion_tokens} completion = {report.tokens} tokens, {len(report.staged)} staged")
        print(f"  summary: {report.summary}")
        return 0
    finally:
        model.stop()
        ENV.close()


if __name__ == "__main__":
    raise SystemExit(main())
