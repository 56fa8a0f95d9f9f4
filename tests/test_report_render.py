"""Rendering a fixed store: Markdown and HTML structure, links, escaping of hostile text, empty periods."""

from __future__ import annotations

import datetime as dt
import re
from html.parser import HTMLParser

import pytest
from digest_world import NASTY, World, open_sqlite, sample, settled_digest, trusted_settings
from markdown_it import MarkdownIt
from sqlalchemy import update

from monitor.judge.embedded import Coverage, EmbeddedJudge, measured_coverage
from monitor.report.period import resolve_period
from monitor.report.render import md, render
from monitor.store.models import Assessment

WEEK = resolve_period("2026-W11")


@pytest.fixture
def digest(store):
    sample(World(store))
    return settled_digest(store, trusted_settings(), WEEK)


@pytest.fixture
def lite(sqlite_url: str):
    """SQLite only, for rendering checks that do not depend on the database."""
    s = open_sqlite(sqlite_url)
    yield s
    s.close()


@pytest.fixture
def lite_digest(lite):
    sample(World(lite))
    return settled_digest(lite, trusted_settings(), WEEK)


class Tags(HTMLParser):
    """Collects start tags with attributes, and text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_md(text: str):
    return MarkdownIt("commonmark").enable("table").parse(text)


def test_view_model_groups_by_line_changed_first_and_drops_unrelated(digest) -> None:
    s = digest.summary
    assert s.counts == {
        "OVERTURNED": 0, "CONTESTED": 1, "PERISHABLE": 1, "DURABLE": 0, "UNSETTLED": 0, "UNTESTED": 2
    }
    # c_calib's weak local OVERTURNS is for review and moves nothing.
    assert [(c.id, c.previous_status, c.status) for c in s.changed] == [("c_sparse", "DURABLE", "CONTESTED")]
    # c_calib's local OVERTURNS is not evidence the digest can sign: listed for triage, for review.
    assert (s.papers_published, s.pairs_judged, s.new_evidence, s.for_review, s.tokens) == (3, 3, 1, 1, 1200)
    assert s.triaged == 1
    rl, div = digest.lines
    assert rl.id == "rl" and [c.id for c in rl.detailed] == ["c_sparse", "c_calib"]
    assert [c.id for c in rl.quiet] == ["c_quiet"]
    # c_sparse sits in both lines: in full once, cross-referenced in the other.
    assert [c.id for c in div.elsewhere] == ["c_sparse"] and div.detailed == []
    assert [a.arxiv_id for a in rl.ungrounded_anchors] == ["2505.11711"]
    all_evidence = [e.item.arxiv_id for line in digest.lines for c in line.detailed for e in c.new_evidence]
    assert "2603.07777" not in all_evidence  # UNRELATED never shows


def test_markdown_structure_links_and_escaping(digest) -> None:
    from monitor.markup import plain_text

    text = render(digest, "md", trusted_settings())
    assert text.startswith("# Claim monitor digest — week 2026-W11 (09 Mar – 15 Mar 2026)\n")
    assert text.index("## Summary") < text.index("## What breaks") < text.index("## Is diversity")
    assert "**DURABLE → CONTESTED**" in text
    figures = "supports 0.80 · relaxes or overturns 0.91 · overturns 0.91"
    assert f"- Strength of the papers that count: {figures}" in text
    assert "](https://arxiv.org/abs/2603.01234v1) — 2026-03-10, v1\n" in text
    assert "- on `c_sparse` (RL updates only 5–30% of parameters \\| in sparse subnetworks): " in text
    assert "**OVERTURNS 0.91 (openai judge)**" in text
    assert "**1 for review**: `monitor review`" in text  # c_calib's local label, waiting for a curator
    # The embedded judge's label waits for a curator: listed for triage, its stance never printed.
    local = next(line for line in text.splitlines() if "2603.05555" in line)
    assert "OVERTURNS" not in local and "0.60" not in local and "suggests" not in text
    assert "ranked close to `c_calib`" in text and "by the embedded model, not read for stance" in text
    assert "protein folding" not in text
    tokens = parse_md(text)
    # No raw HTML survives: hostile <script> in a title and a quote is text, not markup.
    assert not [t for t in tokens if t.type == "html_block"]
    inline_html = [c for t in tokens if t.children for c in t.children if c.type == "html_inline"]
    assert inline_html == []
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<script>" not in html and "&lt;script&gt;" in html
    # The only links are the ones we made (the [link](http://evil) in the title stays text).
    hrefs = [c.attrs["href"] for t in tokens if t.children for c in t.children if c.type == "link_open"]
    assert "http://evil" not in hrefs
    assert "https://arxiv.org/abs/2603.01234v1" in hrefs and "https://arxiv.org/abs/2505.11711" in hrefs
    # The evidence quote is a blockquote, with the hostile text intact as text (its emphasis as plain text).
    quotes = [i for i, t in enumerate(tokens) if t.type == "blockquote_open"]
    quoted = [tokens[i + 2].content for i in quotes]
    assert any(plain_text(NASTY).split(" h")[0].replace("\\", "") in q.replace("\\", "") for q in quoted)
    # Tables keep their shape although a claim contains "|": every row has the header's cell count.
    rows: list[int] = []
    cells = 0
    for t in tokens:
        if t.type == "tr_open":
            cells = 0
        elif t.type in ("td_open", "th_open"):
            cells += 1
        elif t.type == "tr_close":
            rows.append(cells)
    assert rows and set(rows) == {3, 5} and rows.count(5) == 2  # summary table + one quiet table
    # Every claim is named: an untested one without news, one a line, with what was read for it.
    untested = (
        "- `c_div` Diversity falls as pass@1 rises (undated): no paper judged relevant yet; "
        "no relevant paper found: an LLM judge read its 1 candidate paper"
    )
    assert untested in text


def test_markdown_escape_function() -> None:
    assert md("a | b") == "a \\| b"
    assert md("<b>x</b>") == "\\<b\\>x\\</b\\>"
    assert md("1. not a list\nsecond *line*") == "1\\. not a list second line"
    assert md("a * b * c") == "a \\* b \\* c"
    assert md("- dash") == "\\- dash"
    assert md(None) == ""


def test_html_is_escaped_inline_styled_and_self_contained(lite_digest) -> None:
    text = render(lite_digest, "html", trusted_settings())
    parser = Tags()
    parser.feed(text)
    names = [tag for tag, _ in parser.tags]
    assert "script" not in names and "style" not in names and "link" not in names
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    hrefs = [attrs["href"] for tag, attrs in parser.tags if tag == "a"]
    assert "https://arxiv.org/abs/2603.01234v1" in hrefs and all(
        h.startswith("https://arxiv.org/") for h in hrefs
    )
    assert "table" in names and "blockquote" in names
    # Every table and cell carries its own style or layout attributes; no class-based CSS.
    assert not [attrs for _, attrs in parser.tags if "class" in attrs]
    body = " ".join(parser.text)
    assert "for review" in body and "DURABLE" in body and "protein folding" not in body
    assert "ranked close to c_calib" in body and "suggests" not in body


def test_text_part_is_plain(lite_digest) -> None:
    text = render(lite_digest, "txt", trusted_settings())
    assert "DURABLE -> CONTESTED" in text
    assert "<https://arxiv.org/abs/2603.01234v1>" in text
    assert "suggests" not in text
    assert "ranked close to c_calib by the embedded model, not read for stance" in text
    assert "calibration is kept" in text
    assert "Research questions: Research questions need an LLM judge" in text


def test_empty_period_says_so_plainly(store) -> None:
    sample(World(store))
    quiet = settled_digest(store, trusted_settings(), resolve_period("2026-W20"))
    text = render(quiet, "md", trusted_settings())
    assert "No arXiv announcements in this period" in text
    assert "No verdict changed this period." in text
    assert "**New evidence**" not in text


def test_period_with_papers_but_nothing_relevant(lite) -> None:
    w = World(lite)
    sample(w)
    w.paper("2604.00001", "Unrelated", dt.date(2026, 4, 7))
    settings = trusted_settings()
    digest = settled_digest(lite, settings, resolve_period("2026-W15"))
    text = render(digest, "md", settings)
    # The period's one paper is no candidate of any claim: nothing read it, and the digest says so.
    picked = "**No candidate pair this period:** the relevance stage picked none of the period's 1 papers"
    assert picked in text
    assert "No relevant papers this period" not in text and "papers were read" not in text
    plain = render(digest, "txt", settings).splitlines()  # the mail's text part (it read "Tokens: 0.No ...")
    assert any(line.startswith("Papers: 1 published") and line.endswith("Tokens: 0.") for line in plain)


def test_a_period_judged_offline_says_how_much_the_embedded_judge_misses(lite) -> None:
    w = World(lite)
    sample(w)
    w.paper("2604.00001", "Read offline", dt.date(2026, 4, 7))
    w.paper("2604.00002", "Read by an LLM", dt.date(2026, 4, 8))
    w.assess("2604.00001", "c_sparse", "UNRELATED", 0.9, judge="local", evidence="")
    w.assess("2604.00002", "c_calib", "UNRELATED", 0.9, evidence="")
    settings = trusted_settings()
    d = settled_digest(lite, settings, resolve_period("2026-W15"))
    coverage = measured_coverage()
    assert coverage is not None and 0 < coverage.found < coverage.bearing  # the shipped model's figures
    assert d.summary.pairs_judged == 2 and d.summary.judged_embedded == 1
    assert EmbeddedJudge.name == "local"  # the name monitor/store/digests.py counts it by
    figure = f"it found {coverage.found} of the {coverage.bearing} papers that bear on their claim"
    text = render(d, "md", settings)
    head = "**1 of 2 pairs judged offline by the embedded model.**"
    assert f"{head} On held-out pairs like these {figure}" in text
    closest = "**Nothing the embedded model ranks close this period:** it read 1 candidate pair for triage"
    assert closest in text
    assert "none bears on a claim" not in text and "No relevant papers" not in text
    html, plain = render(d, "html", settings), render(d, "txt", settings)
    assert figure in html and figure in plain
    assert "Nothing the embedded model ranks close this period (it read 1 pair for triage" in plain


def test_a_store_without_claims_says_so_instead_of_nothing_bears(lite) -> None:
    World(lite).paper("2604.00001", "A paper and no claim", dt.date(2026, 4, 7))
    settings = trusted_settings()
    d = settled_digest(lite, settings, resolve_period("2026-W15"))
    for form in ("md", "html", "txt"):
        text = render(d, form, settings)
        assert "No claims to test yet" in text and "monitor seeds import" in text
        assert "none bears" not in text and "No relevant papers" not in text


def test_a_period_judged_by_an_llm_alone_carries_no_offline_caveat(lite) -> None:
    w = World(lite)
    sample(w)
    w.paper("2604.00002", "Read by an LLM", dt.date(2026, 4, 8))
    w.assess("2604.00002", "c_calib", "UNRELATED", 0.9, evidence="")
    settings = trusted_settings()
    d = settled_digest(lite, settings, resolve_period("2026-W15"))
    assert d.summary.judged_embedded == 0 and d.summary.embedded_coverage is None
    for form in ("md", "html", "txt"):
        text = render(d, form, settings)
        for caveat in ("judged offline", "ranks close this period", "ranks closest", "not read for stance"):
            assert caveat not in text, (form, caveat)


def test_a_model_built_without_coverage_figures_reads_as_none(tmp_path) -> None:
    assert measured_coverage(tmp_path) is None
    (tmp_path / "coverage.json").write_text('{"test_ranked": {"n": 5}}')
    assert measured_coverage(tmp_path) is None
    figures = '{"test_ranked": {"n": 5, "bearing": 2, "flagged": 1, "found": 1}}'
    (tmp_path / "coverage.json").write_text(figures)
    assert measured_coverage(tmp_path) == Coverage(5, 2, 1, 1)


def test_user_templates_override_the_shipped_ones(lite, tmp_path) -> None:
    sample(World(lite))
    (tmp_path / "digest.md.j2").write_text("custom {{ d.period.key }} {{ d.summary.counts.CONTESTED }}\n")
    settings = trusted_settings()
    settings.report.templates_dir = tmp_path
    digest = settled_digest(lite, settings, WEEK)
    assert render(digest, "md", settings) == "custom 2026-W11 1\n"
    assert render(digest, "html", settings).startswith("<!DOCTYPE html>")  # not overridden: shipped


def test_a_broken_user_template_is_a_config_error(lite, tmp_path) -> None:
    from monitor.errors import ConfigError

    (tmp_path / "digest.md.j2").write_text("{% for x in %}\n")
    settings = trusted_settings()
    settings.report.templates_dir = tmp_path
    with pytest.raises(ConfigError, match="digest.md.j2:1"):
        render(settled_digest(lite, settings, WEEK), "md", settings)


def test_older_work_behind_a_verdict_is_named(lite) -> None:
    w = World(lite)
    sample(w)
    w.paper("2603.04444", "GRPO still collapses", dt.date(2026, 3, 11))
    w.assess("2603.04444", "c_quiet", "SUPPORTS", 0.9, evidence="still collapses")
    w.paper("2601.03333", "Older support for calibration loss", dt.date(2025, 7, 1))
    w.assess("2601.03333", "c_sparse", "SUPPORTS", 0.5)
    digest = settled_digest(lite, trusted_settings(), WEEK)
    quiet = next(c for c in digest.lines[0].detailed if c.id == "c_quiet")
    assert quiet.status == "PERISHABLE" and not quiet.changed
    assert quiet.strongest_recent.item.arxiv_id == "2602.00002" and quiet.rests_on == []
    text = render(digest, "md", trusted_settings())
    assert (
        "Strongest contradicting work of the last 6 months: [Robust GRPO](https://arxiv.org/abs/2602.00002v1)"
        in text
    )


def test_claim_in_two_lines_is_cross_referenced_once(lite_digest) -> None:
    text = render(lite_digest, "md", trusted_settings())
    assert text.count("### CONTESTED (was DURABLE)") == 1
    assert "(`c_sparse`, under `rl`)" in text
    assert "- Also under: `div`" in text


def test_new_evidence_is_capped_per_claim_strongest_first_and_the_changed_verdict_names_its_paper(
    lite,
) -> None:
    w = World(lite)
    sample(w)
    for n, conf in enumerate((0.81, 0.95, 0.83, 0.9, 0.85), start=1):
        w.paper(f"2603.0200{n}", f"Support {n}", dt.date(2026, 3, 10))
        w.assess(f"2603.0200{n}", "c_div", "SUPPORTS", conf)
    digest = settled_digest(lite, trusted_settings(), WEEK)
    div = next(c for line in digest.lines for c in line.detailed if c.id == "c_div")
    assert [e.item.title for e in div.new_evidence] == ["Support 2", "Support 4", "Support 5"]
    assert div.more_evidence == 2
    # The summary counts what is not shown too (c_calib's local label is listed for triage instead).
    assert digest.summary.new_evidence == 1 + 5
    text = render(digest, "md", trusted_settings())
    assert "+2 more: `monitor show c_div`" in text
    assert "+2 more: monitor show c_div" in render(digest, "txt", trusted_settings())
    # The changed verdict names the one paper that moved it, strongest first.
    moved = "moved by [Support 2](https://arxiv.org/abs/2603.02002v1): SUPPORTS 0.95 (openai judge)"
    assert f"(`c_div`); {moved}" in text


def test_dated_claims_come_first_in_their_line(lite) -> None:
    w = World(lite)
    w.line("rl", "What breaks?")
    w.claim("a_note", "An undated note that changed", ("rl",), kind="note")
    w.claim("z_dated", "A dated claim with weak news", ("rl",), date_text="2025")
    w.paper("2603.00001", "Strong", dt.date(2026, 3, 10))
    w.assess("2603.00001", "a_note", "SUPPORTS", 0.9)  # its verdict changes: more urgent
    w.paper("2603.00002", "Weak", dt.date(2026, 3, 10))
    w.assess("2603.00002", "z_dated", "SUPPORTS", 0.5)
    [line] = settled_digest(lite, trusted_settings(), WEEK).lines
    assert [c.id for c in line.detailed] == ["z_dated", "a_note"]


def test_a_paper_is_shown_once_per_line_with_its_own_quote_for_each_claim(lite) -> None:
    """Issue 31: a paper bearing on two claims of a line is printed once, with each claim's label and
    the quote written for that claim (never a pointer to another claim's quote)."""
    w = World(lite)
    w.line("rl", "What breaks?")
    w.claim("c_a", "First claim", ("rl",), date_text="2025")
    w.claim("c_b", "Second claim", ("rl",), date_text="2025")
    w.paper("2603.00009", "One paper, two claims", dt.date(2026, 3, 10))
    w.assess("2603.00009", "c_a", "SUPPORTS", 0.9, evidence="the first quoted finding here")
    w.assess("2603.00009", "c_b", "RELAXES", 0.85, evidence="the second quoted finding here")
    settings = trusted_settings()
    digest = settled_digest(lite, settings, WEEK)
    [paper] = digest.lines[0].papers
    assert [(c.id, e.item.evidence) for c, e in paper.bearings] == [
        ("c_b", "the second quoted finding here"),  # PERISHABLE c_b is more urgent: first
        ("c_a", "the first quoted finding here"),
    ]
    for form in ("md", "html", "txt"):
        section = render(digest, form, settings).split("What breaks?", 1)[1]
        assert section.count("One paper, two claims") == 1, form
        assert section.count("the first quoted finding here") == 1, form
        assert section.count("the second quoted finding here") == 1, form
        for gone in ("Also bears on", "shown above under"):
            assert gone not in section, (form, gone)
    md = render(digest, "md", settings).split("## What breaks?", 1)[1]
    assert md.index("on `c_b` (Second claim): **RELAXES 0.85 (openai judge)**") < md.index(
        "> the second quoted finding here"
    ) < md.index("on `c_a` (First claim): **SUPPORTS 0.90 (openai judge)**") < md.index(
        "> the first quoted finding here"
    )
    assert md.count("- New this period: paper 1 below") == 2  # each claim points at the one entry


def test_a_paper_listed_for_triage_and_judged_never_states_the_embedded_label(lite) -> None:
    w = World(lite)
    w.line("rl", "What breaks?")
    for cid in ("c_a", "c_b", "c_c"):
        w.claim(cid, f"Claim {cid}", ("rl",), date_text="2025")
    w.paper("2603.00009", "One paper, three claims", dt.date(2026, 3, 10))
    w.assess("2603.00009", "c_a", "SUPPORTS", 0.7, judge="local", evidence="the first quoted finding here")
    w.assess("2603.00009", "c_b", "RELAXES", 0.6, judge="local", evidence="the second quoted finding here")
    w.assess("2603.00009", "c_c", "OVERTURNS", 0.9, evidence="the third quoted finding here")
    with lite.session() as s:  # the embedded judge withheld its stance on c_b
        s.execute(update(Assessment).where(Assessment.claim_id == "c_b").values(abstained=True))
    settings = trusted_settings()
    section = render(settled_digest(lite, settings, WEEK), "md", settings).split("## What breaks?", 1)[1]
    # Listed once: the LLM judge's stance on c_c, the embedded model's picks for c_a and c_b without one.
    assert section.count("[One paper, three claims]") == 1
    assert "on `c_c` (Claim c\\_c): **OVERTURNS 0.90 (openai judge)**" in section
    assert section.count("- ranked close to `c_") == 2  # c_a and c_b, in the one entry
    assert "SUPPORTS" not in section and "RELAXES" not in section.replace("RELAXES or OVERTURNS", "")
    assert "unconfirmed" not in section and "leans" not in section


LATEX_TITLE = r"\textsc{Sparse} updates: RL changes only 20\% of $\theta$ \\ \emph{not} all"
LATEX_QUOTE = r"RL \textbf{updates} only $5$--$30\%$ of the parameters"


def test_latex_and_markdown_emphasis_read_as_text_in_every_format(lite, capsys) -> None:
    """arXiv's LaTeX and the claims' Markdown emphasis never reach a reader as syntax."""
    from rich.console import Console

    from monitor.cli.show.verdicts import print_claim
    from monitor.verdicts.detail import claim_detail

    w = World(lite)
    w.line("rl", "What does RL change?")
    w.claim("c_tex", "Preference tuning *reduces* diversity in **code**", ("rl",), date_text="2025")
    w.paper("2603.04444", LATEX_TITLE, dt.date(2026, 3, 10))
    w.assess("2603.04444", "c_tex", "SUPPORTS", 0.9, evidence=LATEX_QUOTE, rationale=r"It says \emph{only}.")
    settings = trusted_settings()
    digest = settled_digest(lite, settings, WEEK)
    title = "Sparse updates: RL changes only 20% of θ not all"
    for fmt in ("md", "html", "txt"):
        text = render(digest, fmt, settings)
        plain = re.sub(r"\\(.)", r"\1", text) if fmt == "md" else text  # Markdown's own escapes
        if fmt == "html":
            parser = Tags()
            parser.feed(text)
            plain = " ".join(parser.text)
        plain = " ".join(plain.split())
        for syntax in ("\\emph", "\\textsc", "\\textbf", "\\%", "$", "\\\\", "*reduces*", "**code**"):
            assert syntax not in plain, (fmt, syntax)
        assert title in plain, fmt
        assert "RL updates only 5--30% of the parameters" in plain, fmt
        assert "Preference tuning reduces diversity in code" in plain, fmt
    console = Console(width=300, no_color=True)
    print_claim(console, claim_detail(lite, settings, "c_tex"))
    shown = " ".join(capsys.readouterr().out.split())
    assert "Preference tuning reduces diversity in code" in shown and "*reduces*" not in shown
    assert "RL updates only 5--30% of the parameters" in shown and "\\textbf" not in shown


def test_plain_text_keeps_what_is_not_markup() -> None:
    from monitor.markup import plain_text

    assert plain_text("costs $5 and $10, ~2025, snake_case_name, a * b") == (
        "costs $5 and $10, ~2025, snake_case_name, a * b"
    )
    assert plain_text(r"G{\"o}del's \'ecole, $\alpha \leq 10^{-3}$, \{a\}") == "Gödel's école, α ≤ 10^-3, {a}"
    # Seen in the shipped sample's abstracts:
    real = {
        r"We propose $\textbf{RISE-RL}$ (Rubric": "We propose RISE-RL (Rubric",
        r"an early SFT$\rightarrow$RL transition": "an early SFT→RL transition",
        r"and $\sim$200M tokens": "and ~200M tokens",
        r"from \(66.34\%\) to \(69.79\%\)": "from 66.34% to 69.79%",
        r"corpora \cite{jang2022knowledge}. In": "corpora. In",
        r"at \href{https://github.com/a/b}{https://github.com/a/b}.": "at https://github.com/a/b.",
        r"Optimization~(\textbf{DGO})": "Optimization (DGO)",
        r"SGG-R$^{\rm 3}$, a": "SGG-R^3, a",
        r"translation$\unicode{x2014}$hence": "translation—hence",
        r"(4) $>$70% faster": "(4) >70% faster",
    }
    assert {raw: plain_text(raw) for raw in real} == real
