"""Importing this package registers every feature's tools, prompt parts and per-turn hooks.

One module per feature (memory, skills, search, providers, …); the worker runtime imports this package.
"""
