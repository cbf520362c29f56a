"""MCP server configuration as the API, the CLI and the settings files spell it, and what a listing shows
(here, not in shared/models: the settings files in shared/files are read with it, and file stores import no models)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

GLOBAL = "global"  # the scope of the owner's servers, which every user may call

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,23}$")
MAX_ARGV = 64
MAX_ARG_CHARS = 4096
MAX_ENV = 64
MAX_URL_CHARS = 2048


class McpServerIn(BaseModel):
    """One server: `command` (stdio, run in the user's sandbox) or `url` (streamable HTTP), never both."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., description="lowercase letters, digits and '-', at most 24: tools appear as mcp_<name>_<tool>")
    command: list[str] | None = Field(None, max_length=MAX_ARGV)
    env: dict[str, str] | None = None
    url: str | None = Field(None, max_length=MAX_URL_CHARS)
    headers: dict[str, str] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.match(value):
            raise ValueError("name: 1-24 lowercase letters, digits or '-', starting with a letter or digit")
        return value

    @field_validator("command")
    @classmethod
    def _argv(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            if not value or not value[0].strip():
                raise ValueError("command: the argv of the server, its program first")
            if any(len(a) > MAX_ARG_CHARS or "\0" in a for a in value):
                raise ValueError(f"command: each argument at most {MAX_ARG_CHARS} characters, no NUL")
        return value

    @field_validator("env", "headers")
    @classmethod
    def _pairs(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is None:
            return None
        if len(value) > MAX_ENV:
            raise ValueError(f"at most {MAX_ENV} entries")
        for key, item in value.items():
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_-]{0,127}$", key) or len(item) > MAX_ARG_CHARS or "\0" in item \
                    or "\n" in item or "\r" in item:
                raise ValueError(f"bad entry {key[:40]!r}: names are letters, digits, '_' or '-'; values one line")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/?#]+", value):
            raise ValueError("url: an http or https URL")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServerIn":
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (a streamable HTTP server)")
        if self.command is None and self.env:
            raise ValueError("env is for stdio servers (command); an HTTP server takes headers")
        if self.url is None and self.headers:
            raise ValueError("headers are for HTTP servers (url); a stdio server takes env")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


class McpServerPublic(BaseModel):
    """A server as listed: where it is configured, how it is reached, and its health (secrets never shown)."""

    name: str
    scope: Literal["global", "user"]
    transport: Literal["stdio", "http"]
    command: list[str] | None = None
    url: str | None = None
    state: Literal["ready", "starting", "failed", "unknown"] = "unknown"
    tools: int = 0
    last_error: str | None = None
    last_seen: float | None = None
    checked_at: float | None = None

    @classmethod
    def of(cls, server: McpServerIn, scope: str, health: dict[str, Any]) -> "McpServerPublic":
        """`scope` as the settings files key it: GLOBAL, or the id of the user whose server it is."""
        return cls(name=server.name, scope="global" if scope == GLOBAL else "user", transport=server.transport,
                   command=server.command, url=_without_query(server.url), **health)


def _without_query(url: str | None) -> str | None:
    """The URL without its query: a token passed as ?key=… is not shown back."""
    return url.split("?", 1)[0] if url else url
