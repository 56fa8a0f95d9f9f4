"""The seed parser over the five real seeds, the date reader, the ids and the user claim file."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from pathlib import Path

import pytest

from monitor.claims.dates import DateError, parse_date
from monitor.claims.ids import claim_id, line_id, normalise, text_hash
from monitor.claims.seeds import parse_seed_file, parse_seed_text
from monitor.claims.userfile import parse_user_file
from monitor.errors import InputError

REPO = Path(__file__).resolve().parent.parent
SEEDS = REPO / "seeds"
BAD = Path(__file__).parent / "fixtures" / "seeds_bad"


@pytest.fixture(scope="module")
def docs():
    return {p.name[:3]: parse_seed_file(p) for p in sorted(SEEDS.glob("*.txt"))}


def test_five_seeds_counts(docs) -> None:
    assert sorted(docs) == ["000", "001", "002", "003", "004"]
    lines = [ln for d in docs.values() if d.kind == "line" for ln in d.lines]
    assert len(lines) == 4
    assert docs["001"].kind == "note"
    notes: dict[str, set[str]] = defaultdict(set)
    dated, anchor_ids, citations = [], set(), 0
    for doc in docs.values():
        for line in doc.lines:
            for c in line.claims:
                (notes[c.id].add(line.id) if c.kind == "note" else dated.append(c))
            anchor_ids |= {a.arxiv_id for a in line.anchors}
            citations += len(line.anchors)
    assert len(notes) == 25  # 24 distinct notes of the four lines + 001's note
    assert len(dated) == 10
    assert len(anchor_ids) == 6 and citations == 8
    shared = {cid: ls for cid, ls in notes.items() if len(ls) > 1}
    assert len(shared) == 8
    assert max(len(ls) for ls in shared.values()) == 3


def test_line_fields(docs) -> None:
    line = docs["000"].lines[0]
    assert line.question == (
        "Why does supervised fine-tuning on diverse demonstrations expand exploration diversity "
        "compared to RL?"
    )
    assert line.framing.startswith("This explores why training on a varied set of example demonstrations")
    assert line.body.startswith("This explores why training") and "\n\n" in line.body
    assert line.has_next_marker
    assert (line.span.text, line.span.start_year, line.span.end_year) == (
        "Findings span 2023–2026",
        2023,
        2026,
    )
    span = docs["004"].lines[0].span
    assert (span.text, span.start_year, span.end_year) == ("Findings span Sept 2024–May 2026", 2024, 2026)
    assert docs["002"].lines[0].span is None
    assert [len(d.lines[0].claims) for k, d in sorted(docs.items())] == [15, 1, 7, 6, 17]


def test_shared_note_links_to_every_citing_line(docs) -> None:
    title = "Does reinforcement learning squeeze exploration diversity in search agents?"
    citing = {
        key for key, d in docs.items() for c in d.lines[0].claims if c.title == title and c.kind == "note"
    }
    assert citing == {"000", "002", "003"}
    texts = {c.text for d in docs.values() for c in d.lines[0].claims if c.title == title}
    assert len(texts) == 1  # one claim, not three


EXPECTED_DATES = {
    # (file, bullet index): (date_text, start, end, precision, approximate)
    ("000", 0): ("~2025", dt.date(2025, 1, 1), dt.date(2025, 12, 31), "year", True),
    ("000", 3): ("~2024–2025", dt.date(2024, 1, 1), dt.date(2025, 12, 31), "year", True),
    ("000", 4): ("~2024–2026", dt.date(2024, 1, 1), dt.date(2026, 12, 31), "year", True),
    ("004", 0): ("2025-05", dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month", False),
    ("004", 1): ("2024-09", dt.date(2024, 9, 1), dt.date(2024, 9, 30), "month", False),
    ("004", 2): ("2025-10", dt.date(2025, 10, 1), dt.date(2025, 10, 31), "month", False),
    ("004", 4): ("2025-06, 2025-10", dt.date(2025, 6, 1), dt.date(2025, 10, 31), "month", False),
}


def test_dated_claims_keep_dates_and_precision(docs) -> None:
    dated = {key: [c for c in d.lines[0].claims if c.kind == "dated"] for key, d in docs.items()}
    assert {k: len(v) for k, v in dated.items()} == {"000": 5, "001": 0, "002": 0, "003": 0, "004": 5}
    for (key, i), (text, start, end, precision, approx) in EXPECTED_DATES.items():
        d = dated[key][i].date
        assert (d.text, d.start, d.end, d.precision, d.approximate) == (text, start, end, precision, approx)
    first = dated["000"][0]
    assert first.text == (
        "RL converges on single-peak reward optima, causing entropy collapse and parameter sparsity "
        "(only 5–30% of weights update in consistent subnetworks)"
    )


def test_anchors(docs) -> None:
    got = [(a.arxiv_id, a.date_text, a.title) for a in docs["000"].lines[0].anchors]
    assert got[0] == (
        "2504.07912",
        "2025-04",
        "Echo Chamber: RL Post-training Amplifies Behaviors Learned in Pretraining",
    )
    assert [a[0] for a in got] == ["2504.07912", "2505.11711", "2605.22817", "2411.16579"]
    assert got[3][1:] == (
        "2024-11",
        "Enhancing LLM Reasoning via Critique Models with Test-Time and Training-Time Supervision",
    )
    later = [(a.arxiv_id, a.date_text, a.title) for a in docs["004"].lines[0].anchors]
    assert later == [
        ("2505.11711", "2025-05", "RL finetunes small subnetworks"),
        ("2506.03106", "2025-06", "Natural language + numerical feedback"),
        ("2510.25992", "2025-10", "Supervised RL with step-wise rewards"),
        ("2504.07912", "2025-04", "RL amplifies pretraining behaviors"),
    ]


def test_single_note_document(docs) -> None:
    line = docs["001"].lines[0]
    assert line.kind == "note" and line.topics == ["Reinforcement Learning for LLMs"]
    assert line.question == "Does RL training narrow search diversity the same way it does reasoning?"
    (claim,) = line.claims
    assert claim.kind == "note" and claim.title == line.question
    assert claim.text.startswith('The "RL Squeezes, SFT Expands" paper studies search agents')
    assert claim.text.endswith("it is a property of RL training at large.")
    assert claim.original_title.startswith("rl training for search agents squeezes exploration diversity")
    assert (claim.date.start, claim.date.precision, claim.date.approximate) == (
        dt.date(2026, 2, 21),
        "day",
        False,
    )
    assert "periodic SFT refreshes" in line.body  # the whole body is kept on the line
    # 001's note differs from the shared "squeeze" note it resembles: a 25th claim, not a duplicate
    other = {c.id for k, d in docs.items() if k != "001" for c in d.lines[0].claims}
    assert claim.id not in other


def test_claim_texts_match_the_eval_set(docs, shared: Path) -> None:
    ids = {c.id for d in docs.values() for c in d.lines[0].claims}
    eval_claims = {}
    for raw in (shared / "eval" / "domain_dev.jsonl").read_text().splitlines():
        row = json.loads(raw)
        eval_claims[row["claim_id"]] = row["claim"]
    assert len(eval_claims) >= 30
    missing = {k: t[:50] for k, t in eval_claims.items() if claim_id(t) not in ids}
    assert not missing


@pytest.mark.parametrize(
    "text,start,end,precision,approx",
    [
        ("(2025-05)", dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month", False),
        ("(~2025)", dt.date(2025, 1, 1), dt.date(2025, 12, 31), "year", True),
        ("~2024–2025", dt.date(2024, 1, 1), dt.date(2025, 12, 31), "year", True),
        ("~2024-2025", dt.date(2024, 1, 1), dt.date(2025, 12, 31), "year", True),
        ("2025-06, 2025-10", dt.date(2025, 6, 1), dt.date(2025, 10, 31), "month", False),
        ("Sept 2024–May 2026", dt.date(2024, 9, 1), dt.date(2026, 5, 31), "month", False),
        ("2026-02-21", dt.date(2026, 2, 21), dt.date(2026, 2, 21), "day", False),
        ("2024-02", dt.date(2024, 2, 1), dt.date(2024, 2, 29), "month", False),
        ("2024, 2025-06", dt.date(2024, 1, 1), dt.date(2025, 6, 30), "year", False),
        ("late 2025", dt.date(2025, 1, 1), dt.date(2025, 12, 31), "year", True),
    ],
)
def test_dates(text: str, start: dt.date, end: dt.date, precision: str, approx: bool) -> None:
    d = parse_date(text)
    assert (d.start, d.end, d.precision, d.approximate) == (start, end, precision, approx)
    assert d.text == text.strip("()")


@pytest.mark.parametrize("text", ["soon", "2025-13", "2026–2024", "", "Smarch 2025", "2025-02-30"])
def test_unreadable_dates(text: str) -> None:
    with pytest.raises(DateError):
        parse_date(text)


def test_ids_are_stable_under_normalisation() -> None:
    a = claim_id("RL updates only 5–30% of parameters.")
    assert a == claim_id("  rl   updates ONLY 5–30% of\nparameters ")
    assert a == claim_id("RL updates only 5–30% of parameters")
    assert a.startswith("c-") and len(a) == 14
    assert claim_id("ＲＬ updates only 5–30% of parameters") == a  # NFKC folds full-width letters
    assert claim_id("RL updates only 5–31% of parameters") != a
    assert line_id("Why?").startswith("l-") and line_id("why?") == line_id("Why?")
    assert normalise("Café.  ") == "café"
    assert text_hash("RL x") != text_hash("rl x") and len(text_hash("a")) == 64


@pytest.mark.parametrize(
    "name,line,expected",
    [
        ("no_header.txt", 1, "expected an 'INQUIRING LINE' header or a 'Note · DATE' line"),
        ("sources_count.txt", 11, "'Sources 3 notes' announces 3 notes but 2 follow"),
        ("bad_date.txt", 22, "unreadable date 'sometime next spring'"),
        ("bad_date.yaml", 7, "claims[1].date: unreadable date 'sometime next spring'"),
    ],
)
def test_bad_files_name_file_and_line(name: str, line: int, expected: str) -> None:
    path = BAD / name
    parse = parse_user_file if path.suffix == ".yaml" else parse_seed_file
    with pytest.raises(InputError) as err:
        parse(path)
    assert err.value.line == line
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert expected in str(err.value)


def test_note_without_summary_and_missing_date_are_errors(tmp_path: Path) -> None:
    base = (
        "INQUIRING LINE\n\nQ?\n\nFraming.\n\nSources 2 notes\n\nA?\n\nSummary a.\n\nB?\n\n"
        "Next inquiring lines\n"
    )
    with pytest.raises(InputError, match=r":13: expected the summary paragraph of note 'B\?'"):
        parse_seed_text(base, tmp_path / "x.txt")
    undated = (
        "INQUIRING LINE\n\nQ?\n\nFraming.\n\nSources 1 notes\n\nA?\n\nSummary a.\n\n"
        "What a curated library found — and when:\n• A claim with no date.\n\nNext inquiring lines"
    )
    with pytest.raises(InputError, match=r":14: expected a dated claim ending in its date"):
        parse_seed_text(undated, tmp_path / "y.txt")


def test_user_file_yaml_and_toml(tmp_path: Path) -> None:
    doc = parse_user_file(REPO / "examples" / "my_claims.yaml")
    assert doc.kind == "user" and len(doc.lines) == 2
    first = doc.lines[0]
    assert first.topics == ["rlvr", "reasoning"] and len(first.claims) == 3
    assert first.claims[0].date.text == "2025-04" and first.claims[0].date.precision == "month"
    assert first.claims[1].date.approximate
    assert first.claims[2].date is None and first.claims[2].kind == "user"
    assert first.anchors[0].arxiv_id == "2504.13837"
    toml = tmp_path / "mine.toml"
    toml.write_text(
        'question = "Does X hold?"\ntopics = ["x"]\n\n'
        '[[claims]]\ntext = "X holds at scale"\ndate = 2025-05-14\n'
        '\n[[anchors]]\narxiv = "arXiv:2505.11711v2"\ndate = "2025-05"\n'
    )
    (line,) = parse_user_file(toml).lines
    assert line.claims[0].date.precision == "day" and line.claims[0].date.text == "2025-05-14"
    assert line.anchors[0].arxiv_id == "2505.11711"
    toml.write_text('question = "Does X hold?"\nclaim = ["typo"]\n')
    with pytest.raises(InputError, match="claim: unknown key"):
        parse_user_file(toml)
