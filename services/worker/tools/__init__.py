"""The agent's tools, one module per tool family; services/worker/registrations.py registers them all.

A tool module defines its `Tool`s and their handlers and fills no registry: the registration says which
toolset each tool belongs to and how it may share a batch with other calls.
"""
