"""The curator's model pass: find overlapping agent-made skills and stage one umbrella per group, for approval.

It runs after a user's rule pass (CURATOR_CONSOLIDATE) as the reviewer's task `consolidate_skills`, never on
the beat's own path. Candidates are the agent's own skills only (a review made them), unpinned and not
archived; user-made, bundled and pinned skills are never shown to the model. Groups come from
shared.curation.overlap (no model call); the model is asked once per group, at most
CURATOR_CONSOLIDATE_MAX_CALLS times a pass, for a JSON answer: an umbrella SKILL.md and the skills it
replaces, or that they are distinct. An answer is checked like any skill write and staged whole
(shared.stores.skill_consolidations); nothing changes until the user approves. Each pass is one curator
run whose summary counts the model calls and tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from shared.config import Settings
from shared.curation import overlap
from shared.db import Database
from shared.errors import HermesError, InvalidInput, ModelError
from shared.evolution.model import json_object
from shared.files.skill_format import SKILL_FILE, FrontMatter, MAX_SKILL_MD_CHARS
from shared.files.skills import named_lock, read_text
from shared.llm import LLMClient
from shared.models.curator import RunKind
from shared.stores import curator, skill_consolidations
from shared.stores.curator_moves import curator_lock
from shared.stores.skill_consolidations import Proposal
from shared.stores.skills import Located, SkillStore

PASS_LOCK = "consolidate.lock"  # one pass per user at a time; never the curator's lock, so rule passes go on
SHOWN_CHARS = 6_000  # of each SKILL.md in the prompt: enough to merge procedures, bounded per call

INSTRUCTIONS = """You consolidate an AI agent's own skills. The skills below overlap. Either merge them into ONE \
class-level umbrella skill, or keep them apart when they are really distinct.
Rules: the umbrella gets a NEW lowercase-hyphenated name (not one of theirs); its SKILL.md starts with front matter \
(---, name: <the new name>, description: <one line>, ---) and keeps every step, pitfall and user preference of the \
skills it replaces; merge only skills listed here; the merged skills are archived (restorable), never deleted.
Answer with JSON only, no prose:
{"merge": true, "name": "<umbrella name>", "merged": ["<skill>", ...], "content": "<the umbrella's SKILL.md>", \
"reason": "<one sentence>"}
or {"merge": false, "reason": "<one sentence>"}"""


@dataclass
class ConsolidationReport:
    """What one pass found, asked and staged; `summary` goes to the curator's run."""

    user_id: str
    groups: list[tuple[str, ...]] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)  # pending skill write ids
    declined: list[str] = field(default_factory=list)  # "a+b: why", the model's or the checks'
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    run_id: str | None = None
    stopped: str | None = None  # why the pass ended early (the model failed)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def summary(self) -> str:
        parts = [f"consolidation: {len(self.groups)} overlapping group(s)", f"{len(self.staged)} staged",
                 f"{len(self.declined)} declined"]
        if len(self.groups) > self.calls:
            parts.append(f"{len(self.groups) - self.calls} left for the next pass")
        parts.append(f"{self.calls} model call(s), {self.tokens} tokens")
        text = ", ".join(parts)
        return f"{text}; stopped: {self.stopped}" if self.stopped else text


def candidates(store: SkillStore, busy: set[str]) -> dict[str, tuple[Located, str]]:
    """The skills a pass may merge, by name, with their SKILL.md; those in a pending consolidation wait."""
    found = {}
    for skill in store.visible(include_archived=False):
        if not skill_consolidations.eligible(skill) or skill.name in busy:
            continue
        if isinstance(store.front_matter(skill), FrontMatter):
            found[skill.name] = (skill, read_text(skill.path / SKILL_FILE, SKILL_FILE))
    return found


def profiles(found: dict[str, tuple[Located, str]]) -> list[overlap.Profile]:
    return [overlap.Profile(name, text) for name, (_, text) in sorted(found.items())]


def request(group: tuple[str, ...], found: dict[str, tuple[Located, str]]) -> list[dict]:
    """The one model call about one group: the instructions, then each skill's SKILL.md (cut)."""
    shown = "\n\n".join(f"## Skill: {name}\n{found[name][1][:SHOWN_CHARS]}" for name in group)
    return [{"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": f"Overlapping skills: {', '.join(group)}\n\n{shown}"}]


def proposal_of(content: str | None, group: tuple[str, ...]) -> Proposal | None:
    """The model's answer as a proposal; None when it keeps them apart; InvalidInput when it is unusable."""
    answer = json_object(content or "")
    if answer is None:
        raise InvalidInput("the model's answer was not a JSON object", code="consolidation_invalid")
    if answer.get("merge") is not True:
        return None
    merged, name, text = answer.get("merged"), answer.get("name"), answer.get("content")
    if not isinstance(merged, list) or not all(isinstance(n, str) and n in group for n in merged):
        raise InvalidInput("merged must list skills of this group only", code="consolidation_invalid")
    if not isinstance(name, str) or not isinstance(text, str) or len(text) > MAX_SKILL_MD_CHARS:
        raise InvalidInput("name and content must be text (content within the SKILL.md limit)",
                           code="consolidation_invalid")
    return Proposal(name.strip(), text, tuple(merged), str(answer.get("reason") or "")[:500])


def consolidate(db: Database, settings: Settings, user_id: str, llm: LLMClient, now: datetime) -> ConsolidationReport:
    """One pass for one user: at most CURATOR_CONSOLIDATE_MAX_CALLS model calls, each group staged or declined."""
    store = SkillStore.for_user(db, settings, user_id)
    report = ConsolidationReport(user_id)
    with named_lock(store.roots, PASS_LOCK):
        with curator_lock(store):
            skill_consolidations.settle(store, now)  # a merge left half-applied by a dead process is undone first
        found = candidates(store, skill_consolidations.pending_members(db, user_id, now))
        noted = overlap.noted_pairs(skill_consolidations.review_notes(db, user_id), sorted(found))
        report.groups = overlap.groups(profiles(found), noted)
        report.run_id = curator.start_run(db, user_id, RunKind.consolidation, now)
        try:
            for group in report.groups[:settings.curator_consolidate_max_calls]:
                _ask(store, settings, llm, group, found, report, now)
        except ModelError as exc:
            report.stopped = exc.message[:120]
        finally:
            curator.finish_run(db, report.run_id, now, report.summary, pass_done=False)
    return report


def _ask(store: SkillStore, settings: Settings, llm: LLMClient, group: tuple[str, ...],
         found: dict[str, tuple[Located, str]], report: ConsolidationReport, now: datetime) -> None:
    """One model call about one group, then its proposal staged (or why not, in the report)."""
    report.calls += 1  # counted before it is made: a call that fails was still made
    completion = llm.complete(request(group, found), stream=False, kind="curator")
    report.prompt_tokens += completion.usage.prompt_tokens
    report.completion_tokens += completion.usage.completion_tokens
    label = "+".join(group)
    try:
        proposal = proposal_of(completion.content, group)
        if proposal is None:
            report.declined.append(f"{label}: kept apart by the model")
            return
        report.staged.append(skill_consolidations.stage(store, settings, proposal, now).id)
    except HermesError as exc:
        report.declined.append(f"{label}: {exc.message[:160]}")
