"""Narrowed wordings for claims that confirmed evidence RELAXES: proposed by an LLM, decided by a curator.

Only curator-confirmed RELAXES count (a model's own RELAXES never rewrites a claim). With an
OpenAI-compatible judge configured, `propose` asks its model once per claim and set of confirmed papers
(the LLM layer's transport: structured output, retries, one corrective turn, every exchange logged), and
checks the answer: a wording that differs from the claim, a condition, and citations drawn only from the
papers it was shown. `accept` adds the new claim to every line that cites the old one and retires the
old one with `replaced_by`, so its evidence and verdict history stay where they were; `reject` records
the decision. Without an LLM the digest quotes the condition the evidence names instead.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from openai import OpenAI
from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy.orm import Session

from monitor.claims.ids import claim_id, normalise
from monitor.claims.listing import check_claim_ids
from monitor.config import Settings
from monitor.errors import ConfigError, JudgeError, NotFound, UsageError
from monitor.llm.answers import InvalidAnswer, load_json
from monitor.llm.prompts import load_templates, untrusted_filter
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.texts import Recorder
from monitor.llm.transport import ChatTransport, Question
from monitor.store import Store
from monitor.store.assessments import latest_quote
from monitor.store.claims import active_links_of_claim, add_claim, cite_instead, get_claim
from monitor.store.models import Claim, ClaimRewording, utcnow
from monitor.store.papers import get_paper
from monitor.store.reviews import decisions_in_force
from monitor.store.rewordings import add_proposal, get_rewording, open_proposals, record_decision

TEMPLATE_NAMES = ("reword_system.j2", "reword_user.j2", "reword_correction.j2")
MAX_WORDS = 80  # the prompt asks for at most 60; a little slack before calling it a rewrite


@dataclass(frozen=True)
class Confirmed:
    """One paper a curator confirmed as RELAXING a claim: what the model is shown about it."""

    arxiv_id: str
    title: str
    quote: str
    note: str
    confirmed_at: dt.datetime


@dataclass(frozen=True)
class Proposal:
    wording: str
    condition: str
    cited: list[str]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    wording: str
    condition: str
    cited: list[str]


def parse_proposal(text: str | None, claim_text: str, ids: list[str]) -> Proposal:
    """The model's proposal, checked; InvalidAnswer says what is wrong (for the corrective turn)."""
    if not text or not text.strip():
        raise InvalidAnswer("the reply is empty")
    try:
        answer = _Answer.model_validate(load_json(text))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidAnswer(f"expected wording, condition and cited: {where}: {first['msg']}") from None
    wording, condition = " ".join(answer.wording.split()), " ".join(answer.condition.split())
    cited = list(dict.fromkeys(c.strip() for c in answer.cited if c.strip()))
    if not wording or not condition:
        raise InvalidAnswer("wording and condition must both be non-empty")
    if normalise(wording) == normalise(claim_text):
        raise InvalidAnswer("the wording is the claim unchanged; add the condition the papers found")
    if len(wording.split()) > MAX_WORDS:
        raise InvalidAnswer(f"the wording has {len(wording.split())} words; at most 60")
    unknown = [c for c in cited if c not in ids]
    if unknown or not cited:
        raise InvalidAnswer(f"cite at least one id, and only ids from {ids} (got {cited})")
    return Proposal(wording, condition, cited)


class ClaimRewriter:
    """The narrowed-wording question, asked through the LLM layer's transport."""

    name = "openai-reword"

    def __init__(self, settings: Settings, client: OpenAI | None = None) -> None:
        if not settings.llm_configured():
            raise ConfigError(
                "proposing a wording needs an LLM: set llm.base_url (OPENAI_BASE_URL) or an API key "
                "(OPENAI_API_KEY)"
            )
        # A user's prompts folder from before rewording existed falls back to the shipped templates. The
        # prompt's own delimiters beyond the judge's (paper, title, abstract, claim): quote, curator_note.
        self.templates = load_templates(
            settings.judge.prompts_dir,
            TEMPLATE_NAMES,
            "rewording",
            prefix="rw-",
            fallback=True,
            untrusted=untrusted_filter(("quote", "curator_note")),
        )
        self.prompt_version = self.templates.version
        self.model = settings.llm.model
        self.transport = ChatTransport(settings.llm, self.name, self.prompt_version, client)

    def propose(
        self, claim: Claim, evidence: list[Confirmed], recorder: Recorder | None = None
    ) -> tuple[Proposal, int | None]:
        ids = [e.arxiv_id for e in evidence]
        render = self.templates.render

        def schema(bounds: bool) -> dict[str, Any]:
            cited: dict[str, Any] = {"type": "array", "items": {"type": "string", "enum": list(ids)}}
            if bounds:
                cited["minItems"] = 1
            return {
                "type": "object",
                "additionalProperties": False,
                "required": ["wording", "condition", "cited"],
                "properties": {
                    "wording": {"type": "string"},
                    "condition": {"type": "string"},
                    "cited": cited,
                },
            }

        question = Question(
            messages=[
                {"role": "system", "content": render("reword_system.j2")},
                {"role": "user", "content": render("reword_user.j2", claim=claim, evidence=evidence)},
            ],
            schema_name="claim_rewording",
            schema=schema,
            max_tokens=300 + 16 * len(ids),
            parse=lambda text: parse_proposal(text, claim.text, ids),
            correction=lambda problem: render("reword_correction.j2", problem=problem, ids=ids),
        )
        return self.transport.ask(question, f"rewording {claim.id}", recorder)


def confirmed_relaxes(session: Session, claim_ids: list[str] | None = None) -> dict[str, list[Confirmed]]:
    """Active claim id -> the papers a curator confirmed (or relabelled) as RELAXES, by arXiv id."""
    found: dict[str, list[Confirmed]] = {}
    for (cid, arxiv_id), decision in sorted(decisions_in_force(session, claim_ids).items()):
        if decision.label != "RELAXES":
            continue
        claim = get_claim(session, cid)
        paper = get_paper(session, arxiv_id)
        if claim is None or claim.retired_at is not None or paper is None:
            continue
        quote = latest_quote(session, cid, arxiv_id)
        confirmed = Confirmed(arxiv_id, paper.title, quote or "", decision.note, decision.decided_at)
        found.setdefault(cid, []).append(confirmed)
    return found


@dataclass
class ProposeSummary:
    proposed: list[int] = field(default_factory=list)  # new claim_rewordings ids
    unchanged: int = 0  # claims whose open proposal already covers their confirmed papers
    failed: list[str] = field(default_factory=list)  # "claim id: reason"


def propose_rewordings(
    store: Store,
    settings: Settings,
    claim_ids: list[str] | None = None,
    run_id: int | None = None,
    client: OpenAI | None = None,
) -> ProposeSummary:
    """Propose a wording for each claim with confirmed RELAXES evidence not covered by an open proposal."""
    check_claim_ids(store, claim_ids)
    summary = ProposeSummary()
    with store.session() as s:
        wanted = confirmed_relaxes(s, claim_ids)
        open_now = open_proposals(s, list(wanted))
        todo = []
        for cid, evidence in wanted.items():
            if _still_covers(open_now.get(cid), evidence):
                summary.unchanged += 1
                continue
            s.expunge(claim := get_claim(s, cid))  # type: ignore[arg-type]
            todo.append((claim, evidence))
    if not todo:
        return summary
    rewriter = ClaimRewriter(settings, client=client)
    recorder = ExchangeRecorder(store, run_id)
    for claim, evidence in todo:
        try:
            proposal, exchange_id = rewriter.propose(claim, evidence, recorder)
        except JudgeError as exc:
            summary.failed.append(f"{claim.id}: {exc}")
            continue
        with store.session() as s:
            fields = {
                "claim_id": claim.id,
                "text": proposal.wording,
                "condition": proposal.condition,
                "cited": proposal.cited,
                "model": rewriter.model,
                "prompt_version": rewriter.prompt_version,
                "exchange_id": exchange_id,
            }
            summary.proposed.append(add_proposal(s, fields))
    return summary


def _still_covers(pending: ClaimRewording | None, evidence: list[Confirmed]) -> bool:
    """An open proposal stands while every paper it cites is still confirmed and no paper was
    confirmed after it was made (a newer one may name another condition: ask again)."""
    if pending is None:
        return False
    confirmed = {e.arxiv_id for e in evidence}
    return set(pending.cited) <= confirmed and all(e.confirmed_at <= pending.created_at for e in evidence)


@dataclass(frozen=True)
class Decided:
    rewording_id: int
    status: str
    old_claim_id: str
    new_claim_id: str | None
    lines: int


def accept(store: Store, rewording_id: int, note: str = "") -> Decided:
    """Make the proposed wording the claim: new claim in the old one's lines, old one retired."""
    with store.session() as s:
        row = _open_row(s, rewording_id)
        old = get_claim(s, row.claim_id)
        if old is None or old.retired_at is not None:
            raise UsageError(
                f"claim {row.claim_id} is retired; its proposal {rewording_id} cannot be accepted"
            )
        new_id = claim_id(row.text)
        new = get_claim(s, new_id)
        now = utcnow()
        if new is None:
            new = Claim(
                id=new_id,
                text=row.text,
                kind=old.kind,
                title=old.title,
                original_title=old.original_title,
                date_text=old.date_text,
                date_start=old.date_start,
                date_end=old.date_end,
                date_precision=old.date_precision,
                date_approximate=old.date_approximate,
                topics=list(old.topics or []),
                created_at=now,
            )
            add_claim(s, new)
        new.retired_at, new.replaced_by = None, None
        links = active_links_of_claim(s, old.id)
        for link in links:
            cite_instead(s, link, new_id, now)
        old.retired_at, old.replaced_by = now, new_id
        record_decision(s, row, "accepted", note, new_id)
        return Decided(rewording_id, "accepted", old.id, new_id, len(links))


def reject(store: Store, rewording_id: int, note: str = "") -> Decided:
    with store.session() as s:
        row = _open_row(s, rewording_id)
        record_decision(s, row, "rejected", note, None)
        return Decided(rewording_id, "rejected", row.claim_id, None, 0)


def _open_row(s: Session, rewording_id: int) -> ClaimRewording:
    row = get_rewording(s, rewording_id)
    if row is None:
        raise NotFound(f"no proposed wording with id {rewording_id} (see `monitor review reword list`)")
    if row.status != "proposed":
        raise UsageError(
            f"proposed wording {rewording_id} was already {row.status} on {row.decided_at:%Y-%m-%d}"
        )
    return row


@dataclass(frozen=True)
class ProposalView:
    """An open proposal as the walk, `reword list` and the digest show it."""

    id: int
    claim_id: str
    claim: str
    claim_date: str | None
    wording: str
    condition: str
    cited: list[tuple[str, str]]  # (arXiv id, title)
    model: str

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["cited"] = [{"arxiv_id": a, "title": t} for a, t in self.cited]
        return out


def open_views(store: Store, claim_ids: list[str] | None = None) -> list[ProposalView]:
    """Proposals waiting for a curator, oldest first, with their claims and cited papers."""
    with store.session() as s:
        views = []
        for row in sorted(open_proposals(s, claim_ids).values(), key=lambda r: r.id):
            claim = get_claim(s, row.claim_id)
            if claim is None or claim.retired_at is not None:
                continue  # the library changed the claim meanwhile; the proposal no longer applies
            titles = [(a, (p.title if (p := get_paper(s, a)) else a)) for a in row.cited]
            views.append(
                ProposalView(
                    row.id, claim.id, claim.text, claim.date_text, row.text, row.condition, titles, row.model
                )
            )
        return views
