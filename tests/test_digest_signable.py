"""A digest prints only what a careful researcher would sign (issue 31): untested claims one a line and
once, what was read for each claim (never "no relevant paper found" of pairs no judge that reads stance
read, nor of papers the relevance stage never picked), the embedded model's picks only from a measured
floor, anchors that did not check out explained, and no empty heading.

Real stores (SQLite and PostgreSQL where the store matters), rendered digests, the lines asserted."""

from __future__ import annotations

import datetime as dt
import re

from digest_world import TRUSTED_PRECISION, World, settled_digest, trusted_settings
from sqlalchemy import update

from monitor.config import Settings
from monitor.report.period import resolve_period
from monitor.report.render import render
from monitor.report.research import DigestAsks, ResearchQuestions
from monitor.report.views import BRIEF_CHARS, TRIAGE_FLOOR
from monitor.store.db import Store
from monitor.store.models import Assessment, Candidate

WEEK = resolve_period("2026-W11")
LONG = (
    "Only about twenty percent of tokens exhibit high entropy as pivotal reasoning decision points, and "
    "reinforcement learning with verifiable rewards primarily adjusts these forking tokens while the "
    "rest stay"
)


def _candidate(store, arxiv_id: str, claim_id: str) -> None:
    with store.session() as s:
        s.add(Candidate(arxiv_id=arxiv_id, version=1, claim_id=claim_id, score=1.0, method="bm25"))


def _md(store, settings=None, period=WEEK, asked=None):
    settings = settings or trusted_settings()
    digest = settled_digest(store, settings, period, asked)
    return digest, render(digest, "md", settings)


def test_what_was_read_for_each_claim_is_said_and_no_relevant_paper_found_only_when_an_llm_read_all(
    store,
) -> None:
    w = World(store)
    w.line("rl", "What breaks in RL?")
    for cid in ("c_llm", "c_emb", "c_part", "c_none"):
        w.claim(cid, f"Claim {cid} about sparse updates", ("rl",), date_text="2025")
    for n in (1, 2):
        w.paper(f"2603.0000{n}", f"Paper {n}", dt.date(2026, 3, 10))
        _candidate(store, f"2603.0000{n}", "c_llm")
        w.assess(f"2603.0000{n}", "c_llm", "UNRELATED", 0.9)  # an LLM judge read both: none bears
        _candidate(store, f"2603.0000{n}", "c_emb")
        w.assess(f"2603.0000{n}", "c_emb", "UNRELATED", 0.9, judge="local")  # triage only
    _candidate(store, "2603.00001", "c_part")
    w.assess("2603.00001", "c_part", "UNRELATED", 0.9)
    _candidate(store, "2603.00002", "c_part")  # never judged
    # A paper of the period that relaxes c_none (a labelled fact) but the relevance stage never picked.
    w.paper("2603.00003", "The paper that relaxes c_none", dt.date(2026, 3, 11))
    digest, text = _md(store)
    notes = {c.id: c.read_note for line in digest.lines for c in line.untested}
    assert notes == {
        "c_llm": "no relevant paper found: an LLM judge read its 2 candidate papers",
        "c_emb": "its 2 candidate papers were read only by the embedded model (triage, no stance)",
        "c_part": "of its 2 candidate papers, 1 read by an LLM judge, 1 not read yet",
        "c_none": "the relevance stage has picked no candidate paper for it yet",
    }
    for cid, note in notes.items():
        assert f"- `{cid}` " in text and f": no paper judged relevant yet; {note}" in text
    assert text.count("no relevant paper found") == 1  # only where an LLM judge read every candidate
    assert "a paper it did not pick was not read" in text
    assert "The paper that relaxes c\\_none" not in text  # nothing claims it was read


def test_untested_claims_are_one_a_line_cut_at_a_word_and_listed_once_across_lines(store) -> None:
    w = World(store)
    w.line("a", "First question?")
    w.line("b", "Second question?")
    w.claim("c_long", LONG, ("a", "b"))
    w.claim("c_short", "SFT keeps breadth", ("b",))
    _, text = _md(store)
    entries = [line for line in text.splitlines() if line.startswith("- `c_long`")]
    assert len(entries) == 1  # under its first line only; the other names it
    shown = entries[0].removeprefix("- `c_long` ").split(" (undated)")[0]
    assert shown.endswith(" …") and len(shown) <= BRIEF_CHARS + 2
    assert LONG.startswith(shown.removesuffix(" …")) and LONG[len(shown) - 2] == " "  # cut at a word
    assert "without news, listed under another line: `c_long` (under `a`)" in text
    untested = [line for line in text.splitlines() if line.startswith("- `c_")]
    assert [e.split("`")[1] for e in untested] == ["c_long", "c_short"]  # one claim a line, no run-on
    assert "**Untested**:" not in text


def test_the_embedded_models_picks_are_listed_only_from_the_measured_floor(store) -> None:
    """Worst case seen: a vision-language uncertainty paper ranked "closest" to the DARLING claim on
    shared words, at 0.51: below the floor it is not listed; the claim says nothing is ranked close."""
    w = World(store)
    w.line("div", "Why does RLVR reduce answer diversity?")
    darling = "DARLING jointly optimizes for quality and semantic diversity using a learned classifier"
    w.claim("c_darling", darling, ("div",))
    w.claim("c_rlvr", "RLVR narrows the reasoning boundary", ("div",))
    vl = "Visual Semantic Entropy: Do VLMs Recognize Visual Ambiguity?"
    w.paper("2607.31407", vl, dt.date(2026, 3, 10))
    w.assess("2607.31407", "c_darling", "SUPPORTS", 0.51, judge="local", evidence="joint output diversity")
    w.paper("2607.20543", "When RLVR Shrinks the Reasoning Boundary", dt.date(2026, 3, 11))
    w.assess("2607.20543", "c_rlvr", "SUPPORTS", TRIAGE_FLOOR, judge="local", evidence="the boundary shrinks")
    with store.session() as s:
        s.execute(update(Assessment).values(abstained=True))
    digest, text = _md(store)
    (line,) = digest.lines
    assert [c.id for c in line.detailed] == ["c_rlvr"] and [c.id for c in line.untested] == ["c_darling"]
    assert "When RLVR Shrinks the Reasoning Boundary" in text
    assert "Visual Semantic Entropy" not in text
    assert "and nothing the embedded model ranks close this period" in text
    assert digest.summary.triaged == 1 and digest.summary.for_review == 2  # both wait in monitor review
    assert "18 of 25 such papers bore on their claim" in text  # the measured floor, said where it acts


def test_anchors_not_checked_are_not_news_and_those_that_did_not_check_out_are_explained(store) -> None:
    w = World(store)
    w.line("rl", "What breaks in RL?")
    w.claim("c1", "RL updates few parameters", ("rl",), date_text="2025")
    w.anchor("rl", "2505.11711", status="unverified")
    w.anchor("rl", "2505.99999", status="not_found")
    w.anchor("rl", "2504.07912", status="title_differs")
    for fmt in ("md", "html", "txt"):
        settings = trusted_settings()
        text = render(settled_digest(store, settings, WEEK), fmt, settings)
        assert "Anchors not verified" not in text and "2505.11711" not in text, fmt
        assert "2505.99999" in text and "arXiv has no paper under this id" in text, fmt
        assert "another title than the one cited" in text, fmt
        assert "never counted as evidence" in text, fmt


def _empty_headings(markdown: str) -> list[str]:
    """Headings followed by nothing but a heading of the same or a higher level, or the end."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", markdown) if b.strip()]
    empty = []
    for here, after in zip(blocks, [*blocks[1:], None], strict=True):
        level = len(here) - len(here.lstrip("#")) if here.startswith("#") else 0
        if level and "\n" not in here:
            nxt = len(after) - len(after.lstrip("#")) if after and after.startswith("#") else 0
            if after is None or after == "---" or (nxt and nxt <= level):
                empty.append(here)
    return empty


def test_no_heading_is_left_empty(store) -> None:
    w = World(store)
    w.line("a", "First question?")
    w.line("b", "Second question?")
    w.claim("c1", "RL updates few parameters", ("a",), date_text="2025")
    w.claim("c2", "SFT keeps breadth", ("b",), date_text="2025")
    w.paper("2603.00001", "Dense updates", dt.date(2026, 3, 10))
    w.assess("2603.00001", "c1", "RELAXES", 0.9, evidence="every weight moves, we find")
    # The lines' research questions differ (so each line gets its section): one asked and answered,
    # one with nothing to say at all.
    asked = DigestAsks(
        "2026-W11", {"a": ResearchQuestions("ok", ["What now?", "What next?"]), "b": ResearchQuestions("ok")}
    )
    _, text = _md(store, asked=asked)
    assert _empty_headings(text) == []
    assert text.count("### Research questions") == 1 and "1. What now?" in text
    for period in (resolve_period("2026-03"), resolve_period("2026-W20")):
        assert _empty_headings(_md(store, period=period, asked=asked)[1]) == []


def test_the_unsure_papers_listed_under_a_claim_are_the_periods_and_say_so(store) -> None:
    """The "Evidence to date" line counts every withheld paper; the line pointing at the period's unsure
    papers names its period, so a count of two beside one listed paper reads as what it is (graders took
    the mismatch for an error)."""
    settings = trusted_settings()
    floor = settings.verdicts.min_confidence
    w = World(store)
    w.line("rl", "What breaks in RL?")
    w.claim("c1", "RL updates only a few parameters", ("rl",), date_text="2025")
    w.paper("2602.00001", "An earlier unsure paper", dt.date(2026, 2, 10))
    w.assess("2602.00001", "c1", "SUPPORTS", floor - 0.1, evidence="sparse, maybe")
    w.paper("2603.00001", "This week's unsure paper", dt.date(2026, 3, 10))
    w.assess("2603.00001", "c1", "RELAXES", floor - 0.1, evidence="dense, maybe")
    _, text = _md(store, settings)
    section = text[text.index("RL updates only a few parameters") :]
    assert "2 papers withheld (2 too unsure)" in section
    listed = "- Possibly relevant this period, stance unsure, not counted (for review): paper 1 below"
    assert listed in section
    assert "This week's unsure paper" in section and "An earlier unsure paper" not in section


def supports_and_relaxes(store: Store, supports: float, relaxes: float) -> World:
    """One claim under one line, a SUPPORTS and a RELAXES of the week on it at these confidences."""
    w = World(store)
    w.line("rl", "What breaks in RL?")
    w.claim("c1", "RL updates only a few parameters", ("rl",), date_text="2025")
    w.paper("2603.00001", "A sparse-update replication", dt.date(2026, 3, 10))
    w.assess("2603.00001", "c1", "SUPPORTS", supports, evidence="updates touch 12% of weights")
    w.paper("2603.00002", "Dense updates at full precision", dt.date(2026, 3, 11))
    w.assess("2603.00002", "c1", "RELAXES", relaxes, evidence="updates are dense at full precision")
    return w


def test_a_relaxes_between_the_two_bars_is_listed_unsure_and_a_supports_there_is_stated(store) -> None:
    """RELAXES and OVERTURNS count from verdicts.min_confidence_against (0.60), SUPPORTS from
    min_confidence (0.50): a SUPPORTS at 0.50 is printed as a finding, a RELAXES at 0.55 as a paper whose
    stance is unsure, its line giving both bars and not its leaning, in every format. With the two bars
    equal the RELAXES is stated too, and the unsure line gives the one bar."""
    supports_and_relaxes(store, 0.5, 0.55)
    settings = trusted_settings()
    digest = settled_digest(store, settings, WEEK)
    bars = "a label needs 0.50, or 0.60 to relax or overturn a claim"
    for fmt in ("md", "html", "txt"):
        text = render(digest, fmt, settings)
        assert "SUPPORTS 0.50" in text and "RELAXES 0.55" not in text, fmt
        assert "updates touch 12% of weights" in text, fmt
        assert "updates are dense at full precision" not in text, fmt
        assert text.count(f"not confident enough of any label to state one ({bars})") == 1, fmt
    md = render(digest, "md", settings)
    assert "Evidence to date: 1 paper counts (1 SUPPORTS); 1 paper withheld (1 too unsure)" in md

    equal = Settings(verdicts={"precision": TRUSTED_PRECISION, "min_confidence_against": 0.5})
    md = render(settled_digest(store, equal, WEEK), "md", equal)
    assert "RELAXES 0.55" in md and "updates are dense at full precision" in md
    assert bars not in md


def test_a_side_nothing_counts_toward_reads_none_counted_and_withheld_papers_are_said_to_weigh_nothing(
    store,
) -> None:
    """The strength line gives each side's figure from the papers that count. A side nothing counts
    toward reads "none counted", not 0.00 (graders read 0.00 as "nothing points that way" while an
    unsure paper listed below leaned that way), and a claim with withheld papers says they weigh nothing
    either way; a claim with none withheld says nothing of them. In every format."""
    w = supports_and_relaxes(store, 0.65, 0.5)
    w.claim("c2", "RL collapses entropy", ("rl",), date_text="2025")
    w.paper("2603.00003", "Entropy falls under GRPO", dt.date(2026, 3, 12))
    w.assess("2603.00003", "c2", "SUPPORTS", 0.65, evidence="entropy falls within 100 steps")
    settings = trusted_settings()
    digest = settled_digest(store, settings, WEEK)
    weigh = "papers withheld or waiting weigh nothing, whichever way they lean"
    for fmt, sep in (("md", " · "), ("html", ", "), ("txt", ", ")):
        text = render(digest, fmt, settings)
        lines = [line for line in text.splitlines() if "strength of the papers that count:" in line.lower()]
        withheld = [line for line in lines if weigh in line]
        assert len(lines) == 2 and len(withheld) == 1, fmt  # c1 has a withheld paper, c2 none
        figures = f"supports 0.60{sep}relaxes or overturns: none counted{sep}overturns: none counted"
        assert figures in withheld[0], fmt
        assert "relaxes or overturns 0.00" not in text and "overturns 0.00" not in text, fmt
