"""Skill evolution: GEPA over a skill's SKILL.md (description and body), judged on the sessions that used it.

evidence (sessions, outcomes, the split), meter (budget and cost), model (the task, judge and reflection
calls), metric (the checks that cannot be gamed, the judged rubric), adapter (GEPA's interface), optimize
(one run and its proposal decision). Nothing here writes: the worker persists what a run decides.
"""
