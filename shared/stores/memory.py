"""A user's MEMORY.md and USER.md: reading them, and every write under the memory tool's rules.

Every write: threat scan, exclusive lock on `<file>.lock`, re-read under the lock, drift guard,
limit check, then temp file + fsync + rename (mode 0600). Results are the tool's JSON payloads, so
the tool, the api and approved staged writes all say the same thing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shared.config import Settings
from shared.security.scanner import scan
from shared.files import memory as files
from shared.stores import memory_rules as rules
from shared.stores.memory_rules import Op, RuleError

TARGETS = tuple(files.FILE_NAMES)
SAVED_NOTE = "Write saved. This update is complete — do not repeat it."
SUCCESS_MESSAGES = {"add": "Entry added.", "replace": "Entry replaced.", "remove": "Entry removed."}
DUPLICATE_MESSAGE = "Entry already exists (no duplicate added)."


@dataclass(frozen=True)
class MemoryRequest:
    """One call of the memory tool: a single action, or a batch of `operations`."""

    target: str
    action: str | None = None
    content: str | None = None
    old_text: str | None = None
    operations: list[dict[str, Any]] | None = None

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> "MemoryRequest":
        """From tool or api arguments; a missing target means `memory`, as Hermes Agent does."""
        return cls(target=args.get("target") or "memory", action=args.get("action"), content=args.get("content"),
                   old_text=args.get("old_text"), operations=args.get("operations"))

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def contents(self) -> list[str]:
        """The entry texts this request would store (add and replace contents), for a classifier to judge."""
        ops = self.operations if isinstance(self.operations, list) else [self.to_json()]
        return [op["content"] for op in ops
                if isinstance(op, dict) and op.get("action") in ("add", "replace") and isinstance(op.get("content"), str)]

    def summary(self) -> str:
        """One line saying what the write would do, for people deciding on staged writes."""
        if self.operations is not None:
            return f"{len(self.operations)} operation(s) on {self.target}"
        content, old = rules.preview((self.content or "").strip()), rules.preview((self.old_text or "").strip())
        if self.action == "replace":
            return f"replace '{old}' in {self.target} with: {content}"
        if self.action == "remove":
            return f"remove '{old}' from {self.target}"
        return f"add to {self.target}: {content}"


@dataclass(frozen=True)
class WriteResult:
    """The tool's JSON payload, and the stable code of the rule that refused the write (None on success)."""

    payload: dict[str, Any]
    code: str | None = None

    @property
    def ok(self) -> bool:
        return self.code is None

    @property
    def message(self) -> str:
        return self.payload.get("error") or self.payload.get("message") or ""


def failure(code: str, message: str, **extra: Any) -> WriteResult:
    return WriteResult({"success": False, "error": message, **extra}, code)


class MemoryStore:
    """One user's two memory files, with the configured limits."""

    def __init__(self, data_dir: Path, user_id: str, limits: dict[str, int]) -> None:
        self.directory = files.memory_dir(data_dir, user_id)
        self.limits = limits

    @classmethod
    def for_user(cls, settings: Settings, user_id: str) -> "MemoryStore":
        return cls(settings.data_dir, user_id, {"memory": settings.memory_char_limit,
                                                "user": settings.user_char_limit})

    def path(self, target: str) -> Path:
        return self.directory / files.FILE_NAMES[target]

    def entries(self, target: str) -> list[str]:
        """The live entries, as a reader sees them (no lock; the rename is atomic)."""
        return files.read_entries(self.path(target))

    def view(self, target: str) -> dict[str, Any]:
        """Live entries with their usage, for the api and the CLI."""
        entries, limit = self.entries(target), self.limits[target]
        used = rules.chars(entries)
        return {"entries": entries, "chars": used, "limit": limit, "percent": rules.percent(used, limit),
                "usage": f"{used:,}/{limit:,}"}

    def precheck(self, request: MemoryRequest) -> WriteResult | None:
        """The refusal a request earns before any file is touched (shape, then threat scan), or None."""
        planned = self._plan(request)
        return planned if isinstance(planned, WriteResult) else None

    def write(self, request: MemoryRequest) -> WriteResult:
        """Apply a request under the file's lock; the result is the tool's payload."""
        planned = self._plan(request)
        if isinstance(planned, WriteResult):
            return planned
        ops, batch = planned
        path, limit = self.path(request.target), self.limits[request.target]
        with files.locked(path):
            raw = files.read_raw(path)
            drift = files.drift_reason(raw, limit)
            saved = files.backup(path, raw) if drift else None
            if drift and (batch or ops[0].action != "add"):
                return self._drift_failure(request.target, drift, saved)
            entries = files.split_entries(raw)
            try:
                after = (rules.apply_batch(entries, ops, limit, request.target) if batch
                         else rules.apply_one(entries, ops[0], limit, request.target))
            except RuleError as err:
                return failure(err.code, err.message, **err.extra, current_entries=entries,
                               usage=rules.usage(entries, limit))
            if after is not entries:
                files.write_atomic(path, files.render(after))
        message = f"Applied {len(ops)} operation(s)." if batch else (
            SUCCESS_MESSAGES[ops[0].action] if after is not entries else DUPLICATE_MESSAGE)
        return self._success(request.target, after, message)

    def _plan(self, request: MemoryRequest) -> tuple[list[Op], bool] | WriteResult:
        """The request's checked operations and whether they are a batch, or the refusal it earns."""
        if request.target not in TARGETS:
            return failure("memory_invalid", f"Invalid target '{request.target}'. Use: memory, user")
        try:
            return self._ops(request)
        except RuleError as err:
            extra = self._state(request.target) if err.show_state else {}
            return failure(err.code, err.message, **err.extra, **extra)

    def _ops(self, request: MemoryRequest) -> tuple[list[Op], bool]:
        """The request's operations, checked and scanned; RuleError names the first problem."""
        if request.operations is None:
            op = Op.of(request.action, request.content, request.old_text)
            rules.check(op)
            _scan(op.content)
            return [op], False
        if not isinstance(request.operations, list) or not request.operations:
            raise RuleError("memory_invalid", "operations must be a non-empty list of {action, content?, old_text?}.")
        ops = []
        for number, raw in enumerate(request.operations, start=1):
            op = Op.of(**_fields(raw))
            try:
                rules.check(op)
            except RuleError as err:
                raise RuleError(err.code, f"Operation {number} ({op.action}): {err.message} {rules.BATCH_ABORTED}",
                                show_state=err.show_state) from err
            ops.append(op)
        for number, op in enumerate(ops, start=1):  # every content is scanned before any work starts
            try:
                _scan(op.content)
            except RuleError as err:
                raise RuleError(err.code, f"Operation {number}: {err.message}") from err
        return ops, True

    def _state(self, target: str) -> dict[str, Any]:
        entries = self.entries(target)
        return {"current_entries": entries, "usage": rules.usage(entries, self.limits[target])}

    def _success(self, target: str, entries: list[str], message: str) -> WriteResult:
        used, limit = rules.chars(entries), self.limits[target]
        return WriteResult({"success": True, "done": True, "target": target,
                            "usage": f"{rules.percent(used, limit)}% — {used:,}/{limit:,} chars",
                            "entry_count": len(entries), "message": message, "note": SAVED_NOTE})

    def _drift_failure(self, target: str, reason: str, saved: Path) -> WriteResult:
        name, limit = files.FILE_NAMES[target], self.limits[target]
        return failure(
            "memory_drift",
            f"{name} was edited outside the memory tool and cannot be rewritten safely: {reason}. Nothing was "
            f"changed; its text was backed up to {saved.name}.",
            drift_backup=saved.name,
            remediation=(f"Fix {name} by hand (entries separated by a line holding only '§', none longer than "
                         f"{limit:,} chars) or restore it from {saved.name}; until then only 'add' works."),
        )


def _fields(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {"action": None}
    return {k: raw.get(k) for k in ("action", "content", "old_text")}


def _scan(content: str) -> None:
    if content:
        finding = scan(content)
        if finding is not None:
            raise RuleError("memory_blocked", finding.message)
