"""One evolution run: GEPA selects on the train split, the held-out split decides whether anything is proposed.

GEPA sees only train tasks (as its train and validation set), so its choice of best candidate never looked
at a held-out session. That best candidate is proposed only if its held-out score beats the current text's
by `margin` and its train score is no worse. Why a margin of 0.1 by default: scores are means of 0..1 rubric
grades over a handful of tasks, and a judge's grade of one answer moves by about a tenth between wordings;
a smaller gain is within that noise, and a proposal costs the owner a review.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from statistics import mean

import gepa

from shared.evolution.adapter import SkillAdapter
from shared.evolution.evidence import Example
from shared.evolution.meter import Meter, Stopped
from shared.evolution.metric import sections
from shared.evolution.model import RunModel
from shared.files.skill_format import parse_skill_md

log = logging.getLogger(__name__)
TOKEN_SHARE_FOR_GEPA = 0.75  # the rest is kept for scoring the best candidate on held-out


@dataclass
class Outcome:
    """What a run found: scores of the current and best text on both splits, and the best text if proposed."""

    scores: dict[str, float | int | None] = field(default_factory=dict)
    proposed: str | None = None
    summary: str = ""


class _Quiet:
    """GEPA's logger: its lines go to debug, not to the worker's output."""

    def log(self, message: str) -> None:
        log.debug("gepa: %s", message)


def _stopper(meter: Meter):
    def stop(_state) -> bool:
        return meter.cancelled() or meter.tokens >= meter.token_budget * TOKEN_SHARE_FOR_GEPA
    return stop


def _score(adapter: SkillAdapter, examples: list[Example], candidate: dict[str, str]) -> float:
    return round(mean(adapter.evaluate(examples, candidate).scores), 4)


def evolve(model: RunModel, name: str, current: str, train: list[Example], held_out: list[Example],
           margin: float, max_chars: int) -> Outcome:
    """Run GEPA within the meter's budget and decide; raises Stopped when cancelled or out of tokens."""
    meter = model.meter
    front = parse_skill_md(current, name)
    adapter = SkillAdapter(model, name, current, front, sections(front.body), max_chars)
    seed = {"body": front.body, "description": front.description}
    meter.at("scoring the current text on held-out")
    held_before = _score(adapter, held_out, seed)
    gepa_budget = meter.metric_budget - meter.metric_calls - len(held_out)
    scores: dict[str, float | int | None] = {"heldout_before": held_before, "margin": margin,
                                             "train_tasks": len(train), "heldout_tasks": len(held_out),
                                             "train_before": None, "train_after": None, "heldout_after": None}
    if held_before + margin > 1.0:
        return Outcome(scores, None, f"The current text already scores {held_before:.2f} on held-out; no text can "
                                     f"beat it by the margin ({margin:.2f}), so nothing is searched or proposed.")
    if gepa_budget < 2 * len(train):
        return Outcome(scores, None, f"The budget leaves {max(gepa_budget, 0)} metric calls for the search; it "
                                     f"needs at least {2 * len(train)}. Nothing is proposed.")
    meter.at("searching (GEPA)")
    result = gepa.optimize(seed_candidate=seed, trainset=train, valset=train, adapter=adapter,
                           max_metric_calls=gepa_budget, logger=_Quiet(),
                           stop_callbacks=[_stopper(meter), gepa.ScoreThresholdStopper(1.0)],  # perfect on train: done
                           reflection_minibatch_size=min(3, len(train)), seed=0, display_progress_bar=False,
                           raise_on_exception=True, skip_perfect_score=True)
    if meter.cancelled():
        raise Stopped.by_owner()
    best = result.best_candidate
    train_before = round(result.val_aggregate_scores[0], 4)
    train_after = round(result.val_aggregate_scores[result.best_idx], 4)
    scores.update(train_before=train_before, train_after=train_after, candidates=len(result.candidates))
    if best == seed:
        scores["heldout_after"] = held_before
        return Outcome(scores, None, f"No candidate beat the current text on train ({train_before:.2f}); "
                                     "nothing is proposed.")
    meter.at("scoring the best candidate on held-out")
    held_after = _score(adapter, held_out, best)
    scores["heldout_after"] = held_after
    if held_after < held_before + margin or train_after < train_before:
        return Outcome(scores, None, f"The best candidate scored {train_after:.2f} on train (was {train_before:.2f}) "
                                     f"but {held_after:.2f} on held-out (was {held_before:.2f}, needed "
                                     f"+{margin:.2f}); it only fits the train sessions, so nothing is proposed.")
    return Outcome(scores, adapter.text(best), f"Held-out {held_before:.2f} → {held_after:.2f}, train "
                                               f"{train_before:.2f} → {train_after:.2f}: proposed for approval.")
