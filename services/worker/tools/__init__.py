"""The agent's tools; importing this package registers every built-in tool module."""

from services.worker.tools import files  # noqa: F401  (registers the workspace file tools)
