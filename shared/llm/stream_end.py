"""A streamed answer's last bytes, read off the turn's path so its connection is used again.

A provider's stream ends with an answer's last event (`data: [DONE]`, `message_stop`) and then the end
of the HTTP body (the chunked terminator). A client that stops reading at that last event and closes
the response leaves the body's end unread, so httpcore cannot tell the connection is free and closes
it: every model call then opened a new connection (to a real provider: TCP and TLS handshakes before
the request could even be sent). `release` reads what is left of the body on a background thread and
closes the response there, so the connection goes back to the client's pool while the turn goes on.
A server that is still sending after TRAILING_READS more reads of its body, or does not end it, only
costs that thread until the read timeout; its connection is then closed, as before, and the process
says so once in its log.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Iterator

import httpx

from shared.concurrency.daemon_threads import DaemonThreads

log = logging.getLogger(__name__)

TRAILING_READS = 64  # reads of the body after the one that held the last event (each a list of events)

_readers = DaemonThreads("llm-stream-end")
_warned = threading.Event()


def release(response: httpx.Response, rest: Iterator) -> threading.Event:
    """Finish reading `rest` (what is left of the response's body, a read at a time) in the background, then
    close the response; the event is set when done."""
    return _readers.run(lambda: _finish(response, rest))


def _finish(response, rest: Iterator) -> None:
    ended = False
    try:
        ended = len(list(itertools.islice(rest, TRAILING_READS + 1))) <= TRAILING_READS
    except httpx.HTTPError:
        pass  # the answer is already complete; a broken end only means this connection is not reused
    finally:
        response.close()
    if not ended and not _warned.is_set():
        _warned.set()
        log.warning("the model server did not end its response after the answer's last event: its connections "
                    "are closed after each call instead of being reused")
