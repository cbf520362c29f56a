"""The TLS settings of the HTTP clients a tool or a download makes for one call, built once per process.

An `httpx.Client` made without `verify` builds its own SSL context, loading a whole CA bundle (certifi's, or
the one SSL_CERT_FILE names): 30-45 ms of CPU on this machine, for every web fetch, web search, speech call and
chat download, most of them plain requests of a few milliseconds. One context per trust mode serves them all:
the same certificates are trusted and the same checks made as each client's own context would have, and an
SSLContext may be shared between threads and clients.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def verified(trust_env: bool = True) -> ssl.SSLContext:
    """What `httpx.Client(trust_env=trust_env)` would verify servers with: with `trust_env`, the CA file or folder
    named by SSL_CERT_FILE or SSL_CERT_DIR when set, else certifi's bundle."""
    return httpx.create_ssl_context(trust_env=trust_env)
