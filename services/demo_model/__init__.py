"""The scripted model: an OpenAI- and Anthropic-compatible HTTP server whose answers are scripted.

`python -m services.demo_model --demo` is the offline demo model `hstack run` and compose serve when no
LLM is configured; the tests script the same server (tests/fakes/ re-exports it).
"""
