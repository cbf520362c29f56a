"""What a search may see, and what a backend hands back: shared by the SQLite and Postgres backends."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlmodel import Session

INDEXED_ROLES = ("user", "assistant")  # the roles the search index holds (migration 0003)


@dataclass(frozen=True)
class Scope:
    """One user's messages, optionally one session only or all but one, of these roles."""

    user_id: str
    session_id: str | None
    exclude_session_id: str | None
    roles: tuple[str, ...]

    def where(self, message: str = "m", session: str = "s") -> tuple[str, dict]:
        """SQL conditions (and their parameters) over `messages AS m JOIN sessions AS s`."""
        params: dict = {"scope_user": self.user_id}
        clauses = [f"{session}.user_id = :scope_user"]
        roles = []
        for i, role in enumerate(self.roles):
            params[f"scope_role{i}"] = role
            roles.append(f":scope_role{i}")
        clauses.append(f"{message}.role IN ({', '.join(roles)})")
        if self.session_id is not None:
            params["scope_session"] = self.session_id
            clauses.append(f"{message}.session_id = :scope_session")
        if self.exclude_session_id is not None:
            params["scope_not_session"] = self.exclude_session_id
            clauses.append(f"{message}.session_id <> :scope_not_session")
        return " AND ".join(clauses), params

    def members(self) -> tuple[str, dict]:
        """SQL listing the scope's message ids (and its parameters): through the user's sessions and
        each session's messages (their indexes), never a search index."""
        where, params = self.where()
        return f"SELECT m.id FROM sessions AS s JOIN messages AS m ON m.session_id = s.id WHERE {where}", params

    def size(self, s: Session, cap: int) -> int:
        """How many messages the scope holds, counting no further than `cap`: what a search of the
        user's own rows would cost. A message with no text counts though it is not indexed."""
        counted, params = self.counted(cap)
        return s.execute(text(counted), params).scalar()

    def counted(self, cap: int) -> tuple[str, dict]:
        """SQL of `size` (and its parameters)."""
        members, params = self.members()
        return f"SELECT count(*) FROM ({members} LIMIT :cap) AS scope", {**params, "cap": cap}

    def indexed(self, index: str = "ms") -> tuple[str, str, dict]:
        """Postgres: (joins, conditions, parameters) over `message_search AS ms`, which stores each
        message's owner (migration 0016): messages is joined only when a role or session narrows."""
        params: dict = {"scope_user": self.user_id}
        clauses = [f"{index}.user_id = :scope_user"]
        narrowed = (set(INDEXED_ROLES) - set(self.roles) or self.session_id is not None
                    or self.exclude_session_id is not None)
        if not narrowed:
            return "", " AND ".join(clauses), params
        where, more = self.where(session=index)
        joins = f"JOIN messages AS m ON m.id = {index}.message_id"
        return joins, where, {**params, **more}


@dataclass(frozen=True)
class Candidate:
    """A message matching the query, its BM25 score, and the two indexed messages before it."""

    message_id: int
    score: float
    prev_id: int | None
    prev2_id: int | None
