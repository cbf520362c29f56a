"""Provider classes by name: built-ins and third parties register the same way.

A third-party provider is one small module that subclasses `MemoryProvider` and decorates the class
with `@register`; listing the module in MEMORY_PROVIDER_MODULES makes the worker import it, and
MEMORY_PROVIDER=<name> selects it.
"""

from __future__ import annotations

import importlib
import logging
import threading

from shared.providers.base import MemoryProvider

log = logging.getLogger(__name__)

_CLASSES: dict[str, type[MemoryProvider]] = {}
_LOCK = threading.Lock()


def register(provider_class: type[MemoryProvider]) -> type[MemoryProvider]:
    """Make a provider class selectable by its `name`; usable as a class decorator."""
    name = (provider_class.name or "").strip().lower()
    if not name or name == "none":
        raise ValueError(f"{provider_class.__name__} needs a `name` other than '' or 'none'.")
    if not issubclass(provider_class, MemoryProvider):
        raise TypeError(f"{provider_class.__name__} must subclass shared.providers.MemoryProvider.")
    with _LOCK:
        existing = _CLASSES.get(name)
        if existing is not None and existing is not provider_class:
            raise ValueError(f"A memory provider named {name!r} is already registered ({existing.__name__}).")
        _CLASSES[name] = provider_class
    return provider_class


def unregister(name: str) -> None:
    """Forget a provider class (a plugin being unloaded, or a test cleaning up)."""
    with _LOCK:
        _CLASSES.pop(name.strip().lower(), None)


def provider_class(name: str) -> type[MemoryProvider] | None:
    """The class registered under `name`, if any."""
    with _LOCK:
        return _CLASSES.get(name.strip().lower())


def registered_names() -> list[str]:
    with _LOCK:
        return sorted(_CLASSES)


def import_modules(spec: str) -> None:
    """Import each comma-separated module of `spec` (MEMORY_PROVIDER_MODULES) so it can register."""
    for module in (m.strip() for m in spec.split(",")):
        if not module:
            continue
        try:
            importlib.import_module(module)
        except Exception:
            log.exception("memory provider module %r could not be imported", module)
