"""The LLM work a digest shows, done before it is written: proposed wordings and research questions.

The digest itself (gather.py) is a pure reader. This step, the flow's ask stage before the report
(schedule/flow.py, in `monitor run`, `replay` and `report`), asks the LLM: a narrowed
wording for each claim that confirmed RELAXES evidence bounds (stored as an open proposal the digest
then reads), and two research questions per line (stored as `llm_exchanges` rows an identical request
reuses; a failure is in the returned `DigestAsks`, which the digest written next shows). The caller
records on the run what asking did (`asks`, and `research` as research.py counts it) and its tokens.
"""

from __future__ import annotations

from monitor.config import Settings
from monitor.report.gather import gather_digest
from monitor.report.period import Period
from monitor.report.research import DigestAsks, research_questions
from monitor.review.rewording import propose_rewordings
from monitor.store.db import Store
from monitor.store.runs import partial_on_failure


def ask_before_digest(
    store: Store, settings: Settings, period: Period, run_id: int | None = None
) -> DigestAsks:
    """Propose wordings, then ask each line's research questions, for the digest of `period`; the LLM
    exchanges are stored under `run_id`. Reads the period's outcomes as the caller settled them
    (`settle_period`; OutcomesNotStored if it did not)."""
    asked = DigestAsks(period.key)
    # Without an LLM there is nothing to ask: the digest says so itself, without gathering twice.
    if settings.llm_configured():
        try:
            _ask(store, settings, period, run_id, asked)
        except BaseException:
            # What asking did and spent before the failure is still the run's (no `asks` counts).
            with partial_on_failure(asked.stage_notes()):
                raise
    return asked


def _ask(store: Store, settings: Settings, period: Period, run_id: int | None, asked: DigestAsks) -> None:
    digest = gather_digest(store, settings, period)  # on the outcomes the outcomes step settled
    due = sorted({c.id for line in digest.lines for c in line.claims if c.conditions})  # claim id order
    if due and settings.llm_configured():
        done = propose_rewordings(store, settings, due, run_id)
        asked.wordings_proposed, asked.wordings_failed = len(done.proposed), len(done.failed)
        asked.wording_failures = list(done.failed)
        if done.proposed:  # the questions' prompt shows the claims as the digest will, proposals included
            digest = gather_digest(store, settings, period)
    for line in digest.lines:
        asked.questions[line.id] = research_questions(
            store, settings, line, line.detailed, run_id, asked.research
        )
