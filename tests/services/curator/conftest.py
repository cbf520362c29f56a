"""Curator tests move the clock; each starts and ends in real time. Plus skill factories."""

from __future__ import annotations

import pytest

from shared import clock
from shared.models.skills import SkillInstall
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.support.factories import make_user

BUNDLED = "tidy-memory"  # one of the repository's bundled skills


def skill_md(name: str) -> str:
    return f"---\nname: {name}\ndescription: The {name} procedure.\n---\n1. Do the {name} thing.\n"


@pytest.fixture(autouse=True)
def real_time():
    clock.reset()
    yield
    clock.reset()


class Skills:
    """One new user's skills store, with shortcuts to create each kind of skill."""

    def __init__(self, db, settings) -> None:
        self.user = make_user(db)
        self.store = SkillStore.for_user(db, settings, self.user.id)

    def agent(self, *names: str, writer: str = "review") -> None:
        for name in names:
            SkillEditor(self.store, writer).create(name, skill_md(name))

    def installed(self, name: str) -> None:
        self.store.install(SkillInstall(name=name, content=skill_md(name)))

    def use(self, name: str) -> None:
        self.store.mark_used(self.store.get(name))

    def states(self) -> dict[str, str]:
        return {s.name: s.state.value for s in self.store.summaries()}

    def index(self) -> list[str]:
        return [name for name, _ in self.store.index()]


@pytest.fixture
def skills(db, settings):
    return lambda: Skills(db, settings)
