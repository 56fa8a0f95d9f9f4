"""A judge that answered almost nothing must not produce a confident, mailed digest (issue 22).

The judge is the OpenAI client against the scripted server (tests/llm_server.py, real HTTP); mail goes
to a real SMTP server (aiosmtpd). The digest of a period most of whose candidate pairs failed or were
parked says so, is not mailed, and the run exits 6; a later run with a working judge rewrites it and
mails it then.
"""

from __future__ import annotations

import email
import email.policy
import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import test_ops_run_faults as faults
from llm_server import Reply, ScriptedLLM, answer, answering, completion, research_questions
from ops_helpers import make_settings
from sqlalchemy import select

from monitor.config import Settings
from monitor.errors import JudgeError
from monitor.schedule.pipeline import RunOptions, run_once
from monitor.schedule.retest import retest
from monitor.store import open_store
from monitor.store.pairs import PairScope, count_pairs, unread_by_claim
from monitor.store.records import Digest, Run

# The scripted LLM server, the small snapshot and the aiosmtpd mailbox of the run fault tests.
llm, snapshot, mailbox, judge_options = faults.llm, faults.snapshot, faults.mailbox, faults.judge_options


def first_call_then_garbage() -> Callable[[Any], Reply]:
    """A server that answers the first judge request and then only invalid JSON (as in the issue)."""
    calls = itertools.count()

    def respond(request: Any) -> Reply:
        questions = research_questions(request)
        if questions is not None:
            return Reply(body=completion(questions))
        if next(calls) == 0:
            return Reply(body=completion(answer(request)))
        return Reply(body=completion("Sure! Here is my assessment: the paper is relevant."))

    return respond


def garbage(request: Any) -> Reply:
    questions = research_questions(request)
    return Reply(body=completion(questions or "no JSON here"))


def mailing(tmp_path: Path, db_url: str, server: ScriptedLLM, port: int, **judge: Any) -> Settings:
    return make_settings(
        tmp_path,
        db_url,
        judge=judge_options(server, **judge),
        report={"email": True},
        email={"host": "127.0.0.1", "port": port, "security": "none", "recipients": ["ana@example.org"]},
    )


def digest_row(store) -> Digest:
    with store.session() as s:
        return s.scalars(select(Digest)).one()


def run_tokens(store) -> list[int]:
    """What each run spent, as `monitor runs` shows it."""
    with store.session() as s:
        return [r.tokens for r in s.scalars(select(Run).order_by(Run.id))]


def assert_unread_claims_say_so(store, text: str) -> None:
    """Every claim with failed or parked pairs in the digest's period whose evidence the digest states
    (its list of untested claims, one a line: "- `ID` claim (date): sentence; what was read") says its
    pairs were not read, and never "no relevant paper" (claims without news but with a verdict are a
    table row with no sentence)."""
    row = digest_row(store)
    with store.session() as s:
        unread = unread_by_claim(count_pairs(s, PairScope(since=row.period_start, until=row.period_end)))
    stated = {cid: re.search(rf"^- `{re.escape(cid)}` .*?\): (.*)$", text, re.M) for cid in unread}
    stated = {cid: found[1] for cid, found in stated.items() if found}
    assert stated, "no claim with failed pairs is listed with its evidence"
    for claim_id, sentence in stated.items():
        assert f"{unread[claim_id]} candidate pair" in sentence and "failed" in sentence, sentence
        assert "no relevant paper" not in sentence, sentence


def run_statuses(store) -> list[str]:
    with store.session() as s:
        return [r.status for r in s.scalars(select(Run).order_by(Run.id))]


def test_a_judge_that_failed_on_most_pairs_writes_an_unmailed_digest_that_says_so_and_exits_6(
    tmp_path,
    db_url,
    snapshot,
    llm,
    mailbox,
) -> None:
    box, port = mailbox
    llm.default = first_call_then_garbage()
    store = open_store(db_url)
    settings = mailing(tmp_path, db_url, llm, port)
    with pytest.raises(JudgeError) as err:
        run_once(store, settings, RunOptions(source=str(snapshot)))
    assert err.value.exit_code == 6 and "failed" in str(err.value)
    row = digest_row(store)
    tally = row.stats["judging"]
    assert row.stats["final"] is False and row.sent_at is None and box.messages == []
    assert tally["failed"] > tally["judged"]
    assert tally["pairs"] == tally["judged"] + tally["failed"] + tally["parked"] + tally["pending"]
    text = Path(row.markdown_path).read_text(encoding="utf-8")
    assert f"**Not final: the judge answered only {tally['judged']} of this period's {tally['pairs']}" in text
    assert f"**{tally['failed']} failed**" in text
    assert "none bears" not in text and "No relevant papers" not in text
    assert run_statuses(store) == ["failed"]
    # Issue 33, item 12: the cost line counts what the run spent on the answers that failed too (it
    # counted the one good answer), and a claim whose pairs failed says so, never "no relevant paper".
    spent = run_tokens(store)
    assert row.stats["tokens"] == sum(spent) > 0, (row.stats["tokens"], spent)
    assert f"- Tokens spent: {sum(spent):,}" in text
    assert_unread_claims_say_so(store, text)

    # The server recovers: the next run judges what failed, rewrites the digest and mails it then.
    llm.default = answering("UNRELATED", evidence="")
    outcome = run_once(store, settings, RunOptions(source=str(snapshot)))
    assert outcome.status in ("ok", "partial") and outcome.emailed == [row.id]
    again = digest_row(store)
    assert again.id == row.id and again.stats["final"] is True and again.sent_at is not None
    assert again.stats["judging"]["judged"] == again.stats["judging"]["pairs"] == tally["pairs"]
    assert again.stats["tokens"] == sum(run_tokens(store))  # the failed run's tokens stay the period's
    (message,) = box.messages
    body = email.message_from_bytes(message, policy=email.policy.default).get_body(("plain",)).get_content()
    assert "NOT FINAL" not in body
    assert f"Judged: {tally['pairs']} of the period's {tally['pairs']} candidate pairs" in body


def test_a_period_whose_pairs_were_all_parked_is_not_a_quiet_week(
    tmp_path,
    db_url,
    snapshot,
    llm,
    mailbox,
) -> None:
    box, port = mailbox
    llm.default = garbage
    store = open_store(db_url)
    settings = mailing(tmp_path, db_url, llm, port, park_after_failures=1)
    with pytest.raises(JudgeError):  # answered none: no verdicts, no digest (as before)
        run_once(store, settings, RunOptions(source=str(snapshot)))
    # Every pair is parked now, so nothing is asked: this run used to exit 0 with "none bears".
    with pytest.raises(JudgeError) as err:
        run_once(store, settings, RunOptions(source=str(snapshot)))
    assert err.value.exit_code == 6 and "parked" in str(err.value)
    row = digest_row(store)
    tally = row.stats["judging"]
    assert tally["judged"] == 0 and tally["parked"] == tally["pairs"] > 0
    assert row.sent_at is None and box.messages == []
    text = Path(row.markdown_path).read_text(encoding="utf-8")
    assert f"**{tally['parked']} parked**" in text and "none bears" not in text
    # Issue 33, item 12: the first run spent tokens on invalid answers only; the digest said 0.
    spent = run_tokens(store)
    assert spent[0] > 0 and row.stats["tokens"] == sum(spent), (row.stats["tokens"], spent)
    assert f"- Tokens spent: {sum(spent):,}" in text and "0- **" not in text  # the missing newline
    assert "No claim has a relevant paper yet" not in text
    assert_unread_claims_say_so(store, text)
    assert run_statuses(store) == ["failed", "failed"]

    # A retest asks the parked pairs again; the next run then writes the final digest and mails it.
    llm.default = answering("UNRELATED", evidence="")
    retest(store, settings)
    outcome = run_once(store, settings, RunOptions(source=str(snapshot)))
    assert outcome.emailed == [row.id] and len(box.messages) == 1
    assert digest_row(store).stats["final"] is True
