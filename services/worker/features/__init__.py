"""Importing this package registers every feature's tools, prompt parts and per-turn hooks.

One module per feature (memory, skills, search, providers, …); the worker runtime imports this package.
"""

from services.worker.features import memory  # noqa: F401  (memory snapshot, <memory-update> notes)
from services.worker.features import skills  # noqa: F401  (the skill index in the system prompt)
from services.worker.features import providers  # noqa: F401  (memory provider: recall, syncs, its tools)
from services.worker.features import review  # noqa: F401  (counts turns, sends due background reviews)
from services.worker.features import titles  # noqa: F401  (a short title after a session's first exchange)
