"""Per inquiring line, the strongest work of the period that contradicts (OVERTURNS) or supersedes
(RELAXES) one of its claims: the seeds' research prompt's second task, in every digest of a month or
longer (a week is too short to ask it of).

A *finding* is an assessment that counts toward verdicts (`counts_toward_verdicts`): it passed the
rules' rule 1 (`Outcome.counted`: grounded, newer than the claim, a stated stance, confident enough, not
an anchor of the claim's own lines) and does not wait for a curator (`Thresholds.held`). Findings are
ranked by the weight the rules give them (`Thresholds.weight`). A stance an LLM judge stated that
waits for a curator (`verdicts.confirm_judges`) is a *candidate*: listed for review, never as a
finding. Nothing without a stated stance is listed here: a withheld stance ("related, stance unclear")
and the embedded model's suggestions are triage, shown per claim above the section, never under
"contradicting or superseding". With no finding the section says what was read for the line and by
which judge, so a judge that found nothing, or one that reads no stance, never reads as "nothing
contradicts your claims".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from monitor.config import Settings
from monitor.judge_names import shown_judge, triage_only_judge
from monitor.report.labels import label_phrase
from monitor.report.period import Period, day_range
from monitor.sources.base import arxiv_url
from monitor.store.db import Store
from monitor.store.digests import JudgedPair, judged_pairs
from monitor.verdicts.rules import EvidenceItem, Outcome, Thresholds, strength

if TYPE_CHECKING:  # views.py imports this module's dataclasses
    from monitor.report.views import ClaimView, LineView

# A period at least this long gets the section: a calendar month, or --since/--until spanning 4 weeks.
LONG_PERIOD_DAYS = 28
SHOWN = 5  # papers listed per line and kind; the rest are counted
AGAINST = ("RELAXES", "OVERTURNS")


@dataclass
class Work:
    """One paper's strongest bearing against a claim of the line."""

    item: EvidenceItem
    claim_id: str
    claim: str  # the claim's text, shortened
    weight: float  # what the verdict rules give it (a candidate: what it would weigh once confirmed)
    candidate: bool = False  # withheld or unconfirmed: for review, not a finding
    also: list[tuple[str, str]] = field(default_factory=list)  # other claims of the line: (id, label)

    @property
    def url(self) -> str:
        return arxiv_url(self.item.ref)

    @property
    def judged_as(self) -> str:
        """Who says what, in words every format prints alike (the label as `label_phrase` names it)."""
        item = self.item
        if item.reviewed:
            who = _judge_name(item.judge)
            said = f" (the {who} said {item.model_label})" if item.model_label != item.label else ""
            return f"{item.label}, {item.review} by a curator{said}"
        phrase = label_phrase(item, unconfirmed=self.candidate)
        return f"{phrase}; it waits for a curator" if self.candidate else phrase


@dataclass
class JudgeReading:
    """What one judge read for a line in the period."""

    judge: str
    models: list[str]
    pairs: int
    papers: int

    @property
    def name(self) -> str:
        return _judge_name(self.judge)

    @property
    def triage_only(self) -> bool:
        return triage_only_judge(self.judge)


@dataclass
class StrongestWork:
    """A line's section: findings strongest first, candidates for review, and what was read."""

    findings: list[Work] = field(default_factory=list)
    candidates: list[Work] = field(default_factory=list)
    more_findings: int = 0
    more_candidates: int = 0
    read: list[JudgeReading] = field(default_factory=list)
    pairs_read: int = 0
    papers_read: int = 0

    not_read: int = 0  # the period's candidate pairs of the line's claims that no judge answered yet
    pairs_in_period: int = 0  # the period's candidate pairs of the line's claims, read or not

    @property
    def read_by_embedded(self) -> int:
        return sum(r.pairs for r in self.read if r.triage_only)

    @property
    def read_by_llm(self) -> int:
        """Pairs a judge that reads stance answered: only these can find (or fail to find) such work."""
        return sum(r.pairs for r in self.read if not r.triage_only)


def _judge_name(judge: str) -> str:
    return f"{shown_judge(judge)} judge"


def is_long(period: Period) -> bool:
    return period.kind == "month" or (period.end - period.start).days + 1 >= LONG_PERIOD_DAYS


def counts_toward_verdicts(outcome: Outcome, th: Thresholds) -> list[EvidenceItem]:
    """The claim's assessments that move its verdict: counted by rule 1 and not waiting for a curator.

    The one place this module decides what counts; `verdicts.rules.decide` applies the same two tests.
    """
    return [i for i in outcome.counted if not th.held(i)]


def attach_strongest(
    store: Store, settings: Settings, period: Period, outcomes: dict[str, Outcome], lines: list[LineView]
) -> None:
    """Give each line of a month-or-longer digest its section (`line.strongest`); a shorter one none."""
    if not is_long(period):
        return
    th = Thresholds.from_settings(settings.verdicts)
    with store.session() as s:
        read = judged_pairs(s, period.start, period.end, *day_range(period))
    for line in lines:
        claims = {c.id: c for c in line.claims}
        findings, candidates = [], []
        for claim_id in claims:
            outcome = outcomes[claim_id]
            findings += [(claim_id, i) for i in counts_toward_verdicts(outcome, th)]
            # A stated stance waiting for a curator; never a withheld one, nor a triage-only judge's.
            candidates += [
                (claim_id, i) for i in outcome.held if not triage_only_judge(i.judge) and not i.abstained
            ]
        section = StrongestWork(
            findings=_ranked(findings, claims, period, th, candidate=False),
            candidates=_ranked(candidates, claims, period, th, candidate=True),
        )
        section.more_findings = max(0, len(section.findings) - SHOWN)
        section.more_candidates = max(0, len(section.candidates) - SHOWN)
        section.findings, section.candidates = section.findings[:SHOWN], section.candidates[:SHOWN]
        _tally(section, [p for p in read if p.claim_id in claims])
        section.not_read = line.period_reading.not_read
        section.pairs_in_period = line.period_reading.candidates
        line.strongest = section


def _ranked(
    pairs: list[tuple[str, EvidenceItem]],
    claims: dict[str, ClaimView],
    period: Period,
    th: Thresholds,
    candidate: bool,
) -> list[Work]:
    """The period's RELAXES/OVERTURNS, one entry per paper under the claim it bears on most strongly,
    strongest first; its other claims are named with it."""

    def rank(pair: tuple[str, EvidenceItem]) -> tuple[object, ...]:
        item = pair[1]
        # A stated stance before a withheld one; then the rules' weight, then their "strongest".
        return (not item.abstained, th.weight(item), *strength(item))

    works: dict[str, Work] = {}
    mine = [(c, i) for c, i in pairs if i.label in AGAINST and period.contains(i.appeared)]
    for claim_id, item in sorted(mine, key=rank, reverse=True):
        if item.arxiv_id in works:
            works[item.arxiv_id].also.append((claim_id, item.label))
            continue
        works[item.arxiv_id] = Work(item, claim_id, claims[claim_id].short, th.weight(item), candidate)
    return list(works.values())


def _tally(section: StrongestWork, pairs: Iterable[JudgedPair]) -> None:
    """Papers and pairs read for the line, in all and per judge (with the models that judged)."""
    per_judge: dict[str, tuple[set[tuple[str, str]], set[str], set[str]]] = {}
    every_pair: set[tuple[str, str]] = set()
    for pair in pairs:
        seen, papers, models = per_judge.setdefault(pair.judge, (set(), set(), set()))
        seen.add((pair.claim_id, pair.arxiv_id))
        papers.add(pair.arxiv_id)
        models.add(pair.model)
        every_pair.add((pair.claim_id, pair.arxiv_id))
    section.read = [
        JudgeReading(judge, sorted(models), len(seen), len(papers))
        for judge, (seen, papers, models) in sorted(per_judge.items())
    ]
    section.pairs_read = len(every_pair)
    section.papers_read = len({paper for _, paper in every_pair})
