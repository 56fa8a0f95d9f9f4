"""The candidate pairs a stage works on, with the text it reads: shared by the judge and the LLM screen."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select

from monitor.store.claims import is_active
from monitor.store.models import Candidate, Claim, Paper, PaperVersion


def candidate_pairs(*claim_columns: Any) -> Select[Any]:
    """Rows (arxiv_id, version, claim id, claim text, *claim_columns, title, abstract) of the candidates
    of active claims on each paper's latest version, in paper then claim order.

    An older version's candidates are left out: a new version supersedes what its predecessor said.
    """
    return (
        select(
            Candidate.arxiv_id,
            Candidate.version,
            Claim.id,
            Claim.text,
            *claim_columns,
            func.coalesce(PaperVersion.title, Paper.title),
            func.coalesce(PaperVersion.abstract, Paper.abstract),
        )
        .join(Paper, Paper.arxiv_id == Candidate.arxiv_id)
        .join(Claim, Claim.id == Candidate.claim_id)
        .outerjoin(
            PaperVersion,
            (PaperVersion.arxiv_id == Candidate.arxiv_id) & (PaperVersion.version == Candidate.version),
        )
        .where(Candidate.version == Paper.version, is_active())
        .order_by(Candidate.arxiv_id, Candidate.version, Claim.id)
    )
