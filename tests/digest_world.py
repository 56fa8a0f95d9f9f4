"""Test helper: a small hand-made store (lines, claims, papers, assessments) for verdict and digest tests.

Rows are inserted directly through the ORM, so these tests do not depend on the claims, sources or
judge stages.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from typing import Any

from monitor.config import Settings
from monitor.report.asks import ask_before_digest
from monitor.report.channels import Delivered, Mail, SettledPeriods, Webhooks, deliver
from monitor.report.digest import DigestResult, choose_period, write_digest
from monitor.report.gather import gather_digest, settle_period
from monitor.report.period import Period
from monitor.report.research import DigestAsks
from monitor.report.views import DigestView
from monitor.store.db import Store
from monitor.store.models import Anchor, Assessment, Claim, Line, LineClaim, Paper, PaperVersion
from monitor.store.records import LLMExchange

_keys = itertools.count(1)


# The `openai` judge these worlds use, measured perfectly precise: a single confident label moves a
# verdict (the rules' own thresholds are tested in test_verdicts_rules.py).
TRUSTED_PRECISION = {"openai": {"SUPPORTS": 1.0, "RELAXES": 1.0, "OVERTURNS": 1.0}}
TRUSTED_ENV = {"MONITOR_VERDICTS__PRECISION": json.dumps(TRUSTED_PRECISION)}


def trusted_settings() -> Settings:
    return Settings(verdicts={"precision": TRUSTED_PRECISION})


def settled_digest(
    store: Store, settings: Settings, period: Period, asked: DigestAsks | None = None
) -> DigestView:
    """A period's digest view-model as its callers in the code build one: the verdicts stage settles the
    period's outcomes first (report/gather.py `settle_period`), then the digest reads them."""
    settle_period(store, settings, period)
    return gather_digest(store, settings, period, asked)


def settled_ask(store: Store, settings: Settings, period: Period, run_id: int | None = None) -> DigestAsks:
    """The ask step as the pipeline runs it: after the outcomes step settled the period's outcomes,
    which it reads (report/asks.py `ask_before_digest` never settles them)."""
    settle_period(store, settings, period, run_id)
    return ask_before_digest(store, settings, period, run_id)


def settled_write(
    store: Store,
    settings: Settings,
    period: Period | str | None = "week",
    since: dt.date | None = None,
    until: dt.date | None = None,
    today: dt.date | None = None,
    follow_store: bool = True,
    **kw: Any,
) -> DigestResult:
    """`write_digest` as the pipeline's steps run it: the period chosen (a `Period`, or a spec such as
    "week" or "2026-W11" for `choose_period`), its outcomes settled first (the outcomes step,
    report/gather.py `settle_period`), then the digest written, a reader of them. `kw`: formats, run_id,
    asked."""
    if isinstance(period, Period):
        chosen = period
    else:
        chosen = choose_period(store, period, since, until, today, follow_store)
    settle_period(store, settings, chosen, kw.get("run_id"))
    return write_digest(store, settings, chosen, **kw)


def deliver_by(
    store: Store, settings: Settings, channel: str, digest_ids: list[int] | None = None, force: bool = False
) -> Delivered:
    """One channel ("email", "webhooks") as the flow's deliver stage runs it: over `digest_ids`
    (`monitor report`'s digest), or, None, every recent digest of a run it has not delivered
    (`monitor run`'s). DeliveryError as the stage raises it, carrying what went out."""
    chosen = Mail(settings) if channel == "email" else Webhooks(settings)
    return deliver(store, [chosen], SettledPeriods(store, settings, None), digest_ids, force)[channel]


def count_calls(monkeypatch: Any, module: Any, name: str) -> list[tuple[Any, ...]]:
    """Wrap `module.name` so each call's arguments are appended to the returned list; the real function
    still runs (a counting spy, not a stand-in)."""
    real = getattr(module, name)
    calls: list[tuple[Any, ...]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


class World:
    """Builder for store fixtures; every method commits its rows."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def line(self, line_id: str, question: str, span: tuple[int, int] | None = None) -> str:
        with self.store.session() as s:
            line = Line(id=line_id, question=question)
            if span is not None:
                line.span_text = f"Findings span {span[0]}–{span[1]}"
                line.span_start, line.span_end = span
            s.add(line)
        return line_id

    def claim(
        self,
        claim_id: str,
        text: str,
        lines: tuple[str, ...] = (),
        date_text: str | None = None,
        start: dt.date | None = None,
        end: dt.date | None = None,
        precision: str | None = None,
        approximate: bool = False,
        kind: str = "dated",
    ) -> str:
        with self.store.session() as s:
            s.add(
                Claim(
                    id=claim_id,
                    text=text,
                    kind=kind,
                    date_text=date_text,
                    date_start=start,
                    date_end=end,
                    date_precision=precision,
                    date_approximate=approximate,
                )
            )
            s.flush()
            for pos, line_id in enumerate(lines):
                s.add(LineClaim(line_id=line_id, claim_id=claim_id, role="dated", position=pos))
        return claim_id

    def paper(
        self,
        arxiv_id: str,
        title: str,
        published: dt.date,
        version: int = 1,
        abstract: str = "An abstract.",
        updated: dt.datetime | None = None,
        first_seen: dt.datetime | None = None,
    ) -> str:
        with self.store.session() as s:
            paper = s.get(Paper, arxiv_id)
            if paper is None:
                paper = Paper(
                    arxiv_id=arxiv_id,
                    title=title,
                    abstract=abstract,
                    published=published,
                    source="file",
                    first_seen=first_seen or dt.datetime.combine(published, dt.time(12)),
                )
                s.add(paper)
            paper.version = version
            paper.title = title
            s.flush()
            s.add(
                PaperVersion(
                    arxiv_id=arxiv_id,
                    version=version,
                    title=title,
                    abstract=abstract,
                    source="file",
                    updated=updated or dt.datetime.combine(published, dt.time(12)),
                )
            )
        return arxiv_id

    def assess(
        self,
        arxiv_id: str,
        claim_id: str,
        label: str,
        confidence: float,
        grounded: bool = True,
        judge: str = "openai",
        version: int = 1,
        evidence: str = "a quoted sentence",
        rationale: str = "because",
        created_at: dt.datetime | None = None,
        supersede: bool = True,
        abstained: bool = False,
    ) -> int:
        """An assessment; with `supersede`, earlier ones of the same pair stop being current."""
        with self.store.session() as s:
            if supersede:
                for old in s.query(Assessment).filter_by(
                    arxiv_id=arxiv_id, claim_id=claim_id, is_current=True
                ):
                    old.is_current = False
            row = Assessment(
                cache_key=f"k{next(_keys)}",
                arxiv_id=arxiv_id,
                version=version,
                claim_id=claim_id,
                claim_text_hash="h",
                judge=judge,
                model="m",
                prompt_version="p",
                label=label,
                confidence=confidence,
                rationale=rationale,
                evidence=evidence,
                grounded=grounded,
                abstained=abstained,
                is_current=True,
                **({"created_at": created_at} if created_at else {}),
            )
            s.add(row)
            s.flush()
            return row.id

    def anchor(self, line_id: str, arxiv_id: str, status: str = "grounded", title: str | None = None) -> None:
        with self.store.session() as s:
            s.add(Anchor(line_id=line_id, arxiv_id=arxiv_id, status=status, cited_title=title))

    def exchange(self, prompt_tokens: int, completion_tokens: int, created_at: dt.datetime) -> None:
        with self.store.session() as s:
            s.add(
                LLMExchange(
                    provider="openai",
                    model="m",
                    prompt_version="p",
                    request={},
                    response="{}",
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    created_at=created_at,
                )
            )


# The sample world used by the digest tests: week 2026-W11 is 9-15 March 2026.
WEEK = (dt.date(2026, 3, 9), dt.date(2026, 3, 15))
NASTY = "<script>alert(1)</script> | *bold* _x_ [link](http://evil) # h"


def sample(world: World) -> None:
    """Two lines, four claims (one in both lines), evidence inside and outside week 2026-W11."""
    w = world
    w.line("rl", "What breaks in the SFT→RL pipeline?")
    w.line("div", "Is diversity traded for ceiling?")
    w.claim(
        "c_sparse",
        "RL updates only 5–30% of parameters | in sparse subnetworks",
        ("rl", "div"),
        date_text="2025-05",
        start=dt.date(2025, 5, 1),
        end=dt.date(2025, 5, 31),
        precision="month",
    )
    w.claim(
        "c_calib",
        "Binary rewards degrade calibration",
        ("rl",),
        date_text="2024-09",
        start=dt.date(2024, 9, 1),
        end=dt.date(2024, 9, 30),
        precision="month",
    )
    w.claim(
        "c_quiet",
        "GRPO collapses out of distribution",
        ("rl",),
        date_text="~2025",
        start=dt.date(2025, 1, 1),
        end=dt.date(2025, 12, 31),
        precision="year",
        approximate=True,
    )
    w.claim("c_div", "Diversity falls as pass@1 rises", ("div",))
    w.anchor("rl", "2505.11711", status="not_found", title="RL finetunes small subnetworks")
    w.anchor("rl", "2504.07912", status="grounded")
    # Before the week: makes c_sparse DURABLE and c_quiet PERISHABLE going in (with the trusted judge).
    w.paper("2601.00001", "Sparse updates replicate", dt.date(2026, 1, 10))
    w.assess("2601.00001", "c_sparse", "SUPPORTS", 0.8, evidence="sparse updates replicate")
    w.paper("2602.00002", "Robust GRPO", dt.date(2026, 2, 2))
    w.assess("2602.00002", "c_quiet", "RELAXES", 0.85, evidence="robust variants")
    # In the week: a grounded OVERTURNS for c_sparse (title and quote are hostile markup); with the
    # strong SUPPORTS before it, c_sparse becomes CONTESTED.
    w.paper(
        "2603.01234", "Dense updates " + NASTY, dt.date(2026, 3, 10), first_seen=dt.datetime(2026, 3, 11, 6)
    )
    w.assess(
        "2603.01234",
        "c_sparse",
        "OVERTURNS",
        0.91,
        evidence="we find " + NASTY,
        rationale="Contradicts | directly",
        created_at=dt.datetime(2026, 3, 11, 7),
    )
    # In the week: a weak local-judge OVERTURNS for c_calib: for review, moves nothing.
    w.paper("2603.05555", "Calibration with binary rewards", dt.date(2026, 3, 12))
    w.assess(
        "2603.05555",
        "c_calib",
        "OVERTURNS",
        0.6,
        judge="local",
        evidence="calibration is kept",
        created_at=dt.datetime(2026, 3, 12, 7),
    )
    # In the week but UNRELATED: must not appear anywhere.
    w.paper("2603.07777", "Unrelated protein folding", dt.date(2026, 3, 13))
    w.assess("2603.07777", "c_div", "UNRELATED", 0.9, created_at=dt.datetime(2026, 3, 13, 7))
    w.exchange(1000, 200, dt.datetime(2026, 3, 11, 7))


def open_sqlite(url: str) -> Store:
    """A SQLite store for tests whose subject does not depend on the database."""
    from monitor.store import open_store

    return open_store(url)
