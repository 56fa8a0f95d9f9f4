"""The claims and papers the relevance stage reads, and the text of a paper it compares.

Claims and papers are the LLM layer's `ClaimText` and `PaperText` (monitor/llm/texts.py): `load_claims`
is the one way relevance, the screen, the dry run's estimate and the judge read the active claims, so
the claim relevance ranks a paper for is the claim the judge is asked about.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from monitor.claims.ids import text_hash
from monitor.llm.texts import ClaimText, PaperText
from monitor.store.claims import active_claims, line_contexts
from monitor.store.models import PaperVersion


def paper_text(title: str, abstract: str) -> str:
    """What BM25 reads of a paper: its title and abstract."""
    return f"{title.strip()}. {abstract.strip()}"


def load_claims(session: Session, claim_ids: Sequence[str] | None = None) -> list[ClaimText]:
    """The active claims (only those among `claim_ids`, if given), in id order, each with its date, the
    hash of its text, its note title and its lines' questions and topics."""
    claims = active_claims(session, claim_ids)
    context: dict[str, tuple[list[str], list[str]]] = {c.id: ([], list(c.topics or [])) for c in claims}
    for claim_id, question, topics in line_contexts(session, context):
        questions, all_topics = context[claim_id]
        if question and question not in questions:
            questions.append(question)
        all_topics.extend(t for t in topics or [] if t not in all_topics)
    return [
        ClaimText(
            id=c.id,
            text=c.text,
            date_text=c.date_text,
            text_hash=text_hash(c.text),
            title=c.title,
            questions=tuple(context[c.id][0]),
            topics=tuple(context[c.id][1]),
        )
        for c in claims
    ]


def papers_of(rows: Sequence[PaperVersion]) -> list[PaperText]:
    """Stored paper versions as relevance reads them: their text and their row id (the scan marks')."""
    return [PaperText(r.arxiv_id, r.version, r.title, r.abstract, row_id=r.id) for r in rows]
