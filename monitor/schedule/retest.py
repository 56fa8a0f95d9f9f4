"""`monitor retest`: judge the stored papers again after claims, prompts, the model or papers changed.

The flow's stages from claims to verdicts (schedule/flow.py), under the run lock: re-import the claims
(an edited claim gets a new id and the old one is retired, pointing to it), run relevance and the screen
for the chosen claims (a new claim text has no relevance mark, so it is checked against every stored
paper), judge what is pending (a new prompt or model means a new cache key, so everything is pending
again; `--force` adds a new generation even when nothing changed), recompute verdicts, and compare each
claim's verdict with the one before. Old assessments stay in the store as history (the runner marks
them not current; it never overwrites them).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from monitor.config import Settings
from monitor.errors import NotFound
from monitor.schedule.flow import JUDGING, Flow, Scope, Steps, make_job
from monitor.schedule.lock import RunLock, locked_run
from monitor.schedule.signals import StopFlag
from monitor.store.claims import active_claims, active_claims_of_line, successors
from monitor.store.db import Store


@dataclass
class RetestRow:
    """One claim's verdict before and after the retest."""

    claim_id: str
    text: str
    lines: list[str]
    before: str  # UNTESTED when the claim is new
    after: str
    previous_claim_id: str | None = None  # the id the claim had before its text was edited

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def as_dict(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "previous_claim_id": self.previous_claim_id,
            "text": self.text,
            "lines": self.lines,
            "before": self.before,
            "after": self.after,
            "changed": self.changed,
        }


@dataclass
class RetestResult:
    """What a retest judged and which verdicts moved (recorded on the run as `retest`); `counts`: the
    run's counts before it."""

    stage: ClassVar[str] = "retest"

    run_id: int
    claims: int
    judged: int
    rows: list[RetestRow] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def changed(self) -> list[RetestRow]:
        return [r for r in self.rows if r.changed]

    def stage_counts(self) -> dict[str, Any]:
        return {"claims": self.claims, "judged": self.judged, "changed": len(self.changed)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "claims": self.claims,
            "judged": self.judged,
            "changed": [r.as_dict() for r in self.changed],
            "rows": [r.as_dict() for r in self.rows],
            "seconds": round(self.seconds, 2),
        }


def _successor_map(store: Store) -> dict[str, str]:
    """retired claim id -> the active claim that replaced it (following chains of edits)."""
    with store.session() as s:
        links = successors(s)
    out: dict[str, str] = {}
    for old in links:
        seen, new = {old}, links[old]
        while new in links and new not in seen:
            seen.add(new)
            new = links[new]
        out[old] = new
    return out


def resolve_claims(store: Store, claim_ids: list[str] | None, line_id: str | None) -> list[str] | None:
    """The active claim ids to retest (None: all). Retired ids are followed to their replacement."""
    if not claim_ids and not line_id:
        return None
    successors = _successor_map(store)
    with store.session() as s:
        active = {c.id for c in active_claims(s)}
        chosen: list[str] = []
        for cid in claim_ids or []:
            target = successors.get(cid, cid)
            if target not in active:
                raise NotFound(f"--claim: no active claim {cid!r} (see `monitor claims`)")
            chosen.append(target)
        if line_id:
            linked = [c.id for c in active_claims_of_line(s, line_id)]
            if not linked:
                raise NotFound(f"--line: no line {line_id!r} with active claims (see `monitor lines`)")
            chosen.extend(linked)
    return sorted(set(chosen))


def retest(
    store: Store,
    settings: Settings,
    claim_ids: list[str] | None = None,
    line_id: str | None = None,
    since: dt.date | None = None,
    judge: str | None = None,
    force: bool = False,
    stop: StopFlag | None = None,
    lock: RunLock | None = None,
) -> RetestResult:
    """Re-judge stored papers against claims and report which verdicts changed (module docstring)."""
    from monitor.verdicts.rollup import current_verdicts

    stop = stop or StopFlag(again="monitor retest")
    began = time.monotonic()
    with locked_run(store, settings, "retest", stop.event, lock) as (run, held, _):
        before = {v.claim_id: v.status for v in current_verdicts(store)}
        job = make_job(store, settings, run, stop, "monitor retest", held, provider=judge)
        flow = Flow(job, Steps(store, run, stop, held))
        flow.run("claims")  # an edited claim gets its new id here
        targets = resolve_claims(store, claim_ids, line_id)
        # A retest is the moment to ask parked pairs again. Verdicts move only on finished judging (the
        # judge stage's check raises otherwise; a rerun resumes).
        job.scope = Scope(claim_ids=targets, since=since, force=force, retry_parked=True)
        done = flow.run(*JUDGING, "verdicts")
        rows = _compare(store, before, targets)
        result = RetestResult(run.id, len(rows), done["judge"].judged, rows, dict(run.counts))
        run.record(result)
    result.seconds = time.monotonic() - began
    return result


def _compare(store: Store, before: dict[str, str], targets: list[str] | None) -> list[RetestRow]:
    """Each retested claim's verdict now against `before` (followed across edits of its text)."""
    from monitor.verdicts.rollup import current_verdicts

    predecessor = {new: old for old, new in _successor_map(store).items()}
    rows = []
    for v in current_verdicts(store):
        if targets is not None and v.claim_id not in targets:
            continue
        old = predecessor.get(v.claim_id)
        was = before.get(v.claim_id) or (before.get(old) if old else None) or "UNTESTED"
        rows.append(RetestRow(v.claim_id, v.text, v.lines, was, v.status, old))
    return rows
