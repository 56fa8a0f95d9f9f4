"""Verdict names that mean one thing (issue 31): UNSETTLED, papers count but none strong enough yet, is
told apart from UNTESTED, no paper counts. A data step, no DDL.

Stored rows are renamed so a store keeps one vocabulary and its history gains no spurious change on
the next run:

* `verdicts`: a row stored as UNTESTED whose evidence summary counted a paper becomes UNSETTLED; a
  row's `previous_status` follows the renamed row before it, and `changed` is recomputed where either
  moved. Rows written before summaries were kept (no `details`) cannot be told apart and stay UNTESTED.
* `claim_outcomes`: an UNTESTED outcome with a counted paper that waits for no curator becomes
  UNSETTLED (these rows are recomputed anyway: the rules' version is part of their fingerprint).
* The evidence sentence "no relevant paper found yet" reads "no paper judged relevant yet" (the
  rules cannot know who read the candidates), in `verdicts.summary` and the stored summaries, so the
  next run does not see changed details and write every claim's row again.

Frozen: the names and the sentence are spelled out here, never imported from the rules.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Connection, Integer, String, Text, bindparam, text

OLD_SENTENCE = "no relevant paper found yet"
NEW_SENTENCE = "no paper judged relevant yet"
UNTESTED, UNSETTLED = "UNTESTED", "UNSETTLED"


def _counted(evidence: Any) -> bool:
    counted = evidence.get("counted") if isinstance(evidence, dict) else None
    return isinstance(counted, dict) and any(int(n or 0) > 0 for n in counted.values())


def _reworded(evidence: Any) -> Any:
    if isinstance(evidence, dict) and evidence.get("sentence") == OLD_SENTENCE:
        return {**evidence, "sentence": NEW_SENTENCE}
    return evidence


def _verdicts(conn: Connection) -> None:
    rows = conn.execute(
        text(
            "SELECT id, claim_id, status, previous_status, changed, summary, details FROM verdicts "
            "ORDER BY claim_id, as_of, id"
        ).columns(
            id=Integer, claim_id=String, status=String, previous_status=String, summary=Text, details=JSON
        )
    ).all()
    update = text(
        "UPDATE verdicts SET status = :status, previous_status = :previous, changed = :changed, "
        "summary = :summary, details = :details WHERE id = :id"
    ).bindparams(bindparam("details", type_=JSON))
    before: tuple[str, str, str] | None = None  # the claim's previous row: (claim, old status, new status)
    for row in rows:
        details = row.details
        evidence = details.get("evidence") if isinstance(details, dict) else None
        status = UNSETTLED if row.status == UNTESTED and _counted(evidence) else row.status
        previous = row.previous_status
        if before is not None and before[0] == row.claim_id and previous == before[1]:
            previous = before[2]  # it named the row before it: name it as renamed
        summary = row.summary.replace(OLD_SENTENCE, NEW_SENTENCE)
        if isinstance(details, dict) and "evidence" in details:
            details = {**details, "evidence": _reworded(evidence)}
        moved = status != row.status or previous != row.previous_status
        changed = status != (previous or UNTESTED) if moved else bool(row.changed)
        if moved or summary != row.summary or details != row.details:
            conn.execute(
                update,
                {
                    "status": status,
                    "previous": previous,
                    "changed": changed,
                    "summary": summary,
                    "details": details,
                    "id": row.id,
                },
            )
        before = (row.claim_id, row.status, status)


def _outcomes(conn: Connection) -> None:
    rows = conn.execute(
        text("SELECT id, outcome FROM claim_outcomes").columns(id=Integer, outcome=JSON)
    ).all()
    update = text("UPDATE claim_outcomes SET outcome = :outcome WHERE id = :id").bindparams(
        bindparam("outcome", type_=JSON)
    )
    for row in rows:
        outcome = row.outcome
        if not isinstance(outcome, dict):
            continue
        fixed = {**outcome, "summary": _reworded(outcome.get("summary"))}
        moving = set(outcome.get("counted") or []) - set(outcome.get("held") or [])
        if outcome.get("status") == UNTESTED and moving:
            fixed["status"] = UNSETTLED
        if fixed != outcome:
            conn.execute(update, {"outcome": fixed, "id": row.id})


def upgrade(conn: Connection) -> None:
    _verdicts(conn)
    _outcomes(conn)
