"""The provider manager: one external provider, a bounded prefetch, ordered syncs, guarded hooks."""

from __future__ import annotations

import logging
import threading
import uuid

import pytest

from shared.providers import MemoryProvider, ProviderContext, ProviderManager, build_manager, register, unregister
from shared.providers.manager import PRE_COMPRESS_CUT
from tests.support.waiting import wait_until


def context(settings, db, session_id: str | None = None, user_id: str = "u-1") -> ProviderContext:
    return ProviderContext(settings, db, user_id, session_id or f"s-{uuid.uuid4().hex[:8]}")


class Recorder(MemoryProvider):
    """Records every hook; prefetch and sync wait on `gate` while it is cleared."""

    name = "recorder"

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.calls: list[tuple] = []
        self.gate = threading.Event()
        self.gate.set()
        self.prefetch_started = threading.Event()

    def initialize(self, ctx):
        self.calls.append(("initialize", ctx.session_id))

    def prefetch(self, query, ctx):
        self.calls.append(("prefetch", query))
        self.prefetch_started.set()
        self.gate.wait(10)
        return f"recalled for {query}"

    def sync_turn(self, user_text, assistant_text, ctx):
        self.gate.wait(10)
        self.calls.append(("sync", ctx.session_id, user_text))

    def tool_schemas(self):
        return [{"type": "function", "function": {"name": "recorder_lookup", "parameters": {"type": "object"}}},
                {"name": "recorder_bare", "description": "bare schema"}, {"description": "nameless"}]

    def on_pre_compress(self, messages, ctx):
        return "k" * 10_000

    def on_session_end(self, ctx):
        self.calls.append(("session_end", ctx.session_id))


@pytest.fixture
def manager(settings):
    manager = ProviderManager(settings.model_copy(update={"provider_prefetch_timeout_seconds": 0.2}))
    manager.add_provider(Recorder(manager.settings))
    yield manager
    manager.provider.gate.set()
    manager.shutdown()


def test_a_second_external_provider_is_refused_with_a_warning(manager, caplog):
    other = Recorder(manager.settings)
    other.name = "second"
    with caplog.at_level(logging.WARNING, logger="shared.providers.manager"):
        assert manager.add_provider(other) is False
    assert manager.provider.name == "recorder"
    assert "memory provider 'second' refused" in caplog.text and "only one external provider" in caplog.text


def test_an_unavailable_provider_is_not_used(settings, caplog):
    class Missing(MemoryProvider):
        name = "missing"

        def is_available(self):
            return False

    manager = ProviderManager(settings)
    with caplog.at_level(logging.WARNING, logger="shared.providers.manager"):
        assert manager.add_provider(Missing(settings)) is False
    assert not manager.active and "'missing' is not available" in caplog.text


def test_the_setting_selects_a_registered_provider_or_none(settings, caplog):
    @register
    class Chosen(MemoryProvider):
        name = f"chosen-{uuid.uuid4().hex[:6]}"

    try:
        assert isinstance(build_manager(settings.model_copy(update={"memory_provider": Chosen.name})).provider, Chosen)
        assert build_manager(settings).provider.name == "recall"  # the default
        for off in ("", "none", "None"):
            assert not build_manager(settings.model_copy(update={"memory_provider": off})).active
        with caplog.at_level(logging.ERROR, logger="shared.providers.manager"):
            assert not build_manager(settings.model_copy(update={"memory_provider": "nosuch"})).active
        assert "MEMORY_PROVIDER='nosuch' names no registered memory provider" in caplog.text
    finally:
        unregister(Chosen.name)


def test_two_classes_cannot_claim_one_name():
    with pytest.raises(ValueError, match="already registered"):
        register(type("Impostor", (MemoryProvider,), {"name": "recall"}))


def test_prefetch_is_bounded_and_skipped_while_the_previous_one_runs(manager, settings, db):
    provider = manager.provider
    ctx = context(settings, db)
    provider.gate.clear()
    assert manager.prefetch("slow question", ctx) is None  # gave up after the (0.2 s) bound
    assert manager.prefetch("next question", ctx) is None  # skipped: the first still runs
    assert [c for c in provider.calls if c[0] == "prefetch"] == [("prefetch", "slow question")]

    other = context(settings, db)
    provider.prefetch_started.clear()
    threading.Thread(target=manager.prefetch, args=("other session", other), daemon=True).start()
    provider.prefetch_started.wait(5)
    assert ("prefetch", "other session") in provider.calls  # another session is not held up

    provider.gate.set()
    assert wait_until(lambda: manager.prefetch("third question", ctx), 5) == "recalled for third question"


def test_a_session_is_initialised_once_before_its_first_call(manager, settings, db):
    ctx = context(settings, db)
    manager.prefetch("one", ctx)
    manager.prefetch("two", ctx)
    assert [c for c in manager.provider.calls if c[0] != "prefetch"] == [("initialize", ctx.session_id)]


def test_post_turn_syncs_of_a_session_run_in_order(manager, settings, db):
    provider = manager.provider
    first, second = context(settings, db), context(settings, db)
    provider.gate.clear()
    for n in range(20):
        manager.sync_turn(f"turn {n}", "answer", first)
    manager.sync_turn("other session", "answer", second)
    provider.gate.set()
    assert manager.flush(10)
    mine = [c[2] for c in provider.calls if c[0] == "sync" and c[1] == first.session_id]
    assert mine == [f"turn {n}" for n in range(20)]
    assert ("sync", second.session_id, "other session") in provider.calls


def test_a_failing_hook_costs_only_its_own_contribution(settings, db, caplog):
    class Broken(MemoryProvider):
        name = "broken"

        def prefetch(self, query, ctx):
            raise RuntimeError("provider down")

        def sync_turn(self, user_text, assistant_text, ctx):
            raise RuntimeError("provider down")

    manager = ProviderManager(settings)
    manager.add_provider(Broken(settings))
    ctx = context(settings, db)
    with caplog.at_level(logging.ERROR):
        assert manager.prefetch("hello there", ctx) is None
        manager.sync_turn("hello", "hi", ctx)
        assert manager.flush(5)
    assert "memory provider hook prefetch failed" in caplog.text
    manager.shutdown()


def test_tool_schemas_are_unwrapped_and_nameless_ones_dropped(manager):
    assert [s["name"] for s in manager.tool_schemas()] == ["recorder_lookup", "recorder_bare"]


def test_pre_compress_text_is_capped_and_the_session_ends(manager, settings, db):
    ctx = context(settings, db)
    text = manager.on_pre_compress([{"role": "user", "content": "hi"}], ctx)
    assert len(text) == 4000 + len(PRE_COMPRESS_CUT) + 1500 and PRE_COMPRESS_CUT in text
    assert ("session_end", ctx.session_id) in manager.provider.calls


def test_after_shutdown_syncs_are_dropped_not_run(manager, settings, db):
    manager.shutdown()
    manager.sync_turn("late", "answer", context(settings, db))
    assert not [c for c in manager.provider.calls if c[0] == "sync"]


PLUGIN_MODULE = '''
from shared.providers import MemoryProvider, register


@register
class Honcho(MemoryProvider):
    name = "{name}"

    def prefetch(self, query, ctx):
        return "recalled by a plugin"
'''


def test_a_plugin_module_named_in_the_settings_is_imported_and_selectable(settings, db, tmp_path, monkeypatch,
                                                                          caplog):
    name = f"honcho-{uuid.uuid4().hex[:6]}"
    module = f"hstack_plugin_{uuid.uuid4().hex[:6]}"
    (tmp_path / f"{module}.py").write_text(PLUGIN_MODULE.format(name=name))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with caplog.at_level(logging.ERROR, logger="shared.providers.registry"):
            manager = build_manager(settings.model_copy(update={
                "memory_provider": name, "memory_provider_modules": f"no_such_module_xyz, {module}"}))
        assert manager.provider.name == name
        assert manager.prefetch("what did we say", context(settings, db)) == "recalled by a plugin"
        assert "memory provider module 'no_such_module_xyz' could not be imported" in caplog.text
    finally:
        unregister(name)
