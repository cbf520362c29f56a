"""What a search may see, and what a backend hands back: shared by the SQLite and Postgres backends."""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True)
class Candidate:
    """A message matching the query, its BM25 score, and the two indexed messages before it."""

    message_id: int
    score: float
    prev_id: int | None
    prev2_id: int | None
