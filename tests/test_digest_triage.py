"""Offline, the digest prints only what can be signed (issue 21).

The embedded judge's stance labels are not precise enough on this hardware to print: its papers are
listed per claim for triage (ranked, with the abstract sentence closest to the claim, no stance), the
claim's own anchor papers are left out, and its rationales are plain words (no stems, no thresholds).
"""

from __future__ import annotations

import datetime as dt
import html
import re

import numpy as np
import pytest
from digest_world import World, settled_digest, trusted_settings
from sqlalchemy import update

from monitor.judge.embedded import Decision, EmbeddedJudge
from monitor.judge.sentences import split_sentences
from monitor.llm.texts import ClaimText, PaperText
from monitor.report.period import resolve_period
from monitor.report.render import render
from monitor.store.models import Assessment

WEEK = resolve_period("2026-W11")
CLAIM = "Sparse parameter updates limit the reasoning gains of reinforcement learning"
# The first sentence is background that shares a little more with the claim than the finding does.
BACKGROUND = (
    "Sparse parameter updates limit memory and the gains of reinforcement learning for reasoning models."
)
FINDING = (
    "We find that sparse parameter updates cap the reasoning gains of reinforcement learning "
    "on math benchmarks."
)
ABSTRACT = f"{BACKGROUND} {FINDING} The cap disappears with dense updates in every model we study."


def world(store) -> World:
    w = World(store)
    w.line("rl", "What breaks in RL?")
    w.claim("c_sparse", CLAIM, ("rl",), date_text="2025")
    w.claim("c_other", "Binary rewards degrade calibration", ("rl",), date_text="2025")
    w.anchor("rl", "2603.00090")  # the claim's own source paper
    for n, conf in enumerate((0.62, 0.91, 0.55, 0.8, 0.7)):
        arxiv_id = f"2603.0000{n}"
        w.paper(arxiv_id, f"Paper {n}", dt.date(2026, 3, 10), abstract=ABSTRACT)
        w.assess(arxiv_id, "c_sparse", "SUPPORTS", conf, judge="local", evidence=BACKGROUND)
    w.paper("2603.00090", "The claim's own source", dt.date(2026, 3, 11), abstract=ABSTRACT)
    w.assess("2603.00090", "c_sparse", "SUPPORTS", 0.99, judge="local", evidence=BACKGROUND)
    # A withheld stance (related, stance unclear) on the other claim, from an earlier week.
    w.paper("2602.00001", "Calibration drifts", dt.date(2026, 2, 10), abstract=ABSTRACT)
    w.assess("2602.00001", "c_other", "RELAXES", 0.5, judge="local", evidence=BACKGROUND)
    with store.session() as s:
        s.execute(update(Assessment).where(Assessment.arxiv_id == "2602.00001").values(abstained=True))
    return w


def test_the_embedded_judges_papers_are_listed_for_triage_without_a_stance(store) -> None:
    world(store)
    settings = trusted_settings()
    settings.verdicts.exclude_anchors = False  # the triage list leaves a claim's own sources out anyway
    digest = settled_digest(store, settings, WEEK)
    (line,) = digest.lines
    claim = next(c for c in line.detailed if c.id == "c_sparse")
    assert claim.new_evidence == [] and digest.summary.new_evidence == 0
    # Ranked by the model's confidence, three shown, the claim's own anchor paper left out.
    assert [t.item.arxiv_id for t in claim.triage] == ["2603.00001", "2603.00003", "2603.00004"]
    assert claim.more_triage == 2 and digest.summary.triaged == 5
    # The finding is quoted, not the background first sentence that shares barely more.
    assert all(t.sentence == FINDING for t in claim.triage)
    assert claim.triage[0].words[:3] == ["sparse", "updates", "parameter"]
    for form in ("md", "html", "txt"):
        text = html.unescape(render(digest, form, settings)).replace(digest.scale, "")  # it names a label
        assert "ranks closest" in text and "not read for stance" in text
        assert FINDING in text
        for unsigned in ("SUPPORTS", "RELAXES", "**unconfirmed**", "suggests", "0.91", "leans"):
            assert unsigned not in text, (form, unsigned)
    md = render(digest, "md", settings)
    assert "papers 1, 2, 3 below (+2 more: `monitor review`)" in md
    assert "close to `c_sparse` (" in md and "shares “sparse”, “updates”, “parameter”" in md
    # No verdict-strength line for a claim whose only evidence waits for a curator; and an untested
    # claim with only a withheld suggestion says nothing counts (the one evidence sentence every reader
    # prints), not "weak evidence".
    assert "- Strength" not in md and "weak evidence" not in md
    assert "- `c_other` Binary rewards degrade calibration (2025): no paper counts yet; " in md


def test_the_embedded_judges_rationales_are_plain_words() -> None:
    judge = EmbeddedJudge()
    paper = PaperText("2603.00001", 1, "Sparse updates", ABSTRACT)
    (judgement,) = judge.judge(paper, [ClaimText("c1", CLAIM)])
    text = judgement.rationale
    assert text.startswith("Sentence ") and "comes closest to the claim, sharing the words “" in text
    assert not re.search(r"\d\.\d", text), text  # no probabilities or thresholds
    stems = {"spars", "updat", "paramet", "reinforc", "reason", "learn"}
    assert not stems & set(re.findall(r"\w+", text)), text
    assert "shares:" not in text and "precise enough" not in text
    sentences = split_sentences(ABSTRACT)
    pair = judge.encoder.encode(CLAIM, paper.title, sentences)
    # A label whose threshold lies above 1 is never stated: the rationale says so in words.
    never = max(judge.config.thresholds, key=judge.config.thresholds.__getitem__)
    assert judge.config.thresholds[never] > 1.0
    withheld = judge.rationale(sentences, pair, np.zeros(4), Decision(never, 0.4, True))
    assert "not right often enough at any confidence" in withheld and not re.search(r"\d\.\d", withheld)
    assert "For a curator to read." in withheld
    unrelated = judge.rationale(sentences, pair, np.zeros(4), Decision("UNRELATED", 0.9, False))
    assert unrelated.endswith("The model finds no bearing on the claim.")


@pytest.mark.parametrize("words", [[], ["x"]])
def test_a_sentence_without_claim_words_is_said_so(words: list[str]) -> None:
    from monitor.judge.embedded import Encoded

    judge = EmbeddedJudge()
    sentences = split_sentences("Nothing here matches. Nor here.")
    shared = ["zzzz"] if words else []
    unrelated = Decision("UNRELATED", 0.9, False)
    text = judge.rationale(sentences, Encoded([], [], 0, shared), np.zeros(4), unrelated)
    assert "it shares no key word with it" in text


def test_a_line_whose_claim_is_shown_under_another_line_does_not_say_nothing_ranks_close(store) -> None:
    """A claim of two lines is shown in full under its first; the second line's "strongest work" note
    must not say the embedded model ranks nothing close when that claim's picks are listed there."""
    w = world(store)
    w.line("sft", "What does SFT keep?")
    w.claim("c_shared", CLAIM + " in both lines", ("rl", "sft"), date_text="2025")
    for n in range(3):
        arxiv_id = f"2603.0010{n}"
        w.paper(arxiv_id, f"Shared {n}", dt.date(2026, 3, 10), abstract=ABSTRACT)
        w.assess(arxiv_id, "c_shared", "SUPPORTS", 0.8, judge="local", evidence=BACKGROUND)
    settings = trusted_settings()
    digest = settled_digest(store, settings, resolve_period("2026-03"))  # a month: "strongest" is shown
    sft = next(line for line in digest.lines if line.id == "sft")
    assert [c.id for c in sft.elsewhere] == ["c_shared"] and sft.triaged_elsewhere and not sft.triaged
    for form in ("md", "html"):
        text = html.unescape(render(digest, form, settings))
        assert "ranks none close enough to list" not in text, form
        assert "what it ranks closest is listed under the claim's own line, without a stance" in text, form
