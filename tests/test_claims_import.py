"""Importing seeds into the store (SQLite and PostgreSQL): counts, idempotence, edits, reorders, pruning."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from sqlalchemy import func, select

from monitor.claims.ids import claim_id
from monitor.claims.importer import import_claims
from monitor.claims.listing import list_claims
from monitor.config import PathSettings, Settings
from monitor.errors import InputError
from monitor.store.models import Anchor, Assessment, Claim, Line, LineClaim, Paper, SeedFile

REPO = Path(__file__).resolve().parent.parent
BAD = Path(__file__).parent / "fixtures" / "seeds_bad"
SQUEEZE = "Does reinforcement learning squeeze exploration diversity in search agents?"
INSTRUCTION_NOTE = (
    "Models trained on semantically empty or deliberately incorrect instructions achieve comparable "
    "performance to those trained on full correct instructions, achieving 43% vs random baseline 42.6%. "
    "The semantic content of instructions appears largely irrelevant; what transfers is knowledge of the "
    "output space."
)


@pytest.fixture
def seeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "seeds", tmp_path / "seeds")
    return tmp_path / "seeds"


@pytest.fixture
def settings(seeds: Path) -> Settings:
    return Settings(paths=PathSettings(seeds=seeds))


def seed(seeds: Path, prefix: str) -> Path:
    return next(seeds.glob(f"{prefix}_*.txt"))


def snapshot(store) -> dict[str, list[tuple]]:
    """Every row the claims stage owns, for before/after comparisons."""
    with store.session() as s:
        return {
            "lines": sorted(
                (r.id, r.question, r.framing, r.body, r.retired_at, r.updated_at)
                for r in s.scalars(select(Line))
            ),
            "claims": sorted(
                (r.id, r.text, r.kind, r.date_text, r.date_start, r.retired_at, r.replaced_by)
                for r in s.scalars(select(Claim))
            ),
            "links": sorted(
                (r.line_id, r.claim_id, r.role, r.position, r.retired_at)
                for r in s.scalars(select(LineClaim))
            ),
            "anchors": sorted(
                (r.line_id, r.arxiv_id, r.cited_date_text, r.cited_title, r.retired_at)
                for r in s.scalars(select(Anchor))
            ),
            "files": sorted((r.path, r.sha256, r.imported_at) for r in s.scalars(select(SeedFile))),
        }


def test_import_five_seeds_then_again_is_a_no_op(store, settings: Settings) -> None:
    first = import_claims(store, settings)
    assert first.changed and [f.status for f in first.files] == ["new"] * 5
    assert first.totals == {"lines": 5, "claims": 35, "anchors": 8}
    assert len(first.links_added) == 46  # 35 note citations + 001's note + 10 dated claims
    with store.session() as s:
        kinds = dict(s.execute(select(Line.source_kind, func.count()).group_by(Line.source_kind)).all())
        assert kinds == {"line": 4, "note": 1}
        squeeze = s.scalars(select(Claim).where(Claim.title == SQUEEZE)).one()
        linked = set(s.scalars(select(LineClaim.line_id).where(LineClaim.claim_id == squeeze.id)))
        assert len(linked) == 3
        dated = s.scalars(select(Claim).where(Claim.date_text == "2025-06, 2025-10")).one()
        assert (dated.date_start, dated.date_end, dated.date_precision) == (
            dt.date(2025, 6, 1), dt.date(2025, 10, 31), "month",
        )  # fmt: skip
        assert len(set(s.scalars(select(Anchor.arxiv_id)))) == 6
    before = snapshot(store)
    again = import_claims(store, settings)
    assert not again.changed
    assert [f.status for f in again.files] == ["unchanged"] * 5
    assert snapshot(store) == before


def test_edited_claim_text_retires_the_old_claim_keeping_its_history(
    store, settings: Settings, seeds: Path
) -> None:
    import_claims(store, settings)
    old_id = claim_id(INSTRUCTION_NOTE)
    with store.session() as s:  # a judged paper for the old claim: its history must survive the edit
        s.add(Paper(arxiv_id="2501.00001", title="t", abstract="a", source="file"))
        s.flush()
        s.add(
            Assessment(
                cache_key="k", arxiv_id="2501.00001", version=1, claim_id=old_id, claim_text_hash="h",
                judge="local", model="m", prompt_version="p", label="SUPPORTS", confidence=0.8,
            )
        )  # fmt: skip
    path = seed(seeds, "000")
    edited = INSTRUCTION_NOTE.replace("43% vs random baseline 42.6%", "43.1% vs a random baseline of 42.6%")
    path.write_text(path.read_text().replace(INSTRUCTION_NOTE, edited))
    report = import_claims(store, settings)
    new_id = claim_id(edited)
    assert report.claims_added == [new_id]
    assert report.claims_retired == [old_id]
    assert report.replaced_by == {old_id: new_id}
    assert [(f.path.split("/")[-1][:3], f.status) for f in report.files if f.status != "unchanged"] == [
        ("000", "changed")
    ]
    with store.session() as s:
        old = s.get(Claim, old_id)
        assert old.retired_at is not None and old.replaced_by == new_id and old.text == INSTRUCTION_NOTE
        assert s.get(Claim, new_id).retired_at is None
        assert s.scalars(select(Assessment.claim_id)).all() == [old_id]
        link = s.get(LineClaim, (report.links_removed[0][0], old_id))
        assert link.retired_at is not None
    views = {v.id: v for v in list_claims(store, include_retired=True)}
    assert views[old_id].status == "retired" and views[old_id].lines  # still shows where it was cited
    assert old_id not in {v.id for v in list_claims(store)}
    # Reverting the edit brings the old claim back rather than inventing a third.
    path.write_text(path.read_text().replace(edited, INSTRUCTION_NOTE))
    back = import_claims(store, settings)
    assert back.claims_reactivated == [old_id] and back.claims_retired == [new_id]
    assert not back.claims_added


def test_editing_a_shared_note_in_one_line_keeps_it_for_the_others(
    store, settings: Settings, seeds: Path
) -> None:
    import_claims(store, settings)
    path = seed(seeds, "003")
    text = path.read_text()
    start = text.index(SQUEEZE + "\n\n") + len(SQUEEZE) + 2  # the note, not a mention in the prose
    summary = text[start : text.index("\n", start)]
    path.write_text(text.replace(summary, summary.replace("search agents", "web agents")))
    report = import_claims(store, settings)
    assert len(report.claims_added) == 1 and not report.claims_retired  # 000 and 002 still cite it
    assert len(report.links_removed) == 1 and len(report.links_added) == 1
    with store.session() as s:
        assert s.get(Claim, claim_id(summary)).retired_at is None


def test_reordering_keeps_every_id(store, settings: Settings, seeds: Path) -> None:
    import_claims(store, settings)
    ids_before = {v.id for v in list_claims(store)}
    path = seed(seeds, "004")
    lines = path.read_text().split("\n")
    bullets = [i for i, ln in enumerate(lines) if ln.startswith("• ") and not ln.startswith("• arXiv")]
    for a, b in zip(bullets, reversed(bullets), strict=True):
        if a < b:
            lines[a], lines[b] = lines[b], lines[a]
    path.write_text("\n".join(lines))
    # and move 002's first note (title + summary) to the end of its notes
    p2 = seed(seeds, "002")
    t2 = p2.read_text()
    head, rest = t2.split("Sources 7 notes\n\n", 1)
    notes, tail = rest.split("\n\nNext inquiring lines", 1)
    blocks = notes.split("\n\n")
    blocks = blocks[2:] + blocks[:2]
    p2.write_text(head + "Sources 7 notes\n\n" + "\n\n".join(blocks) + "\n\nNext inquiring lines" + tail)
    report = import_claims(store, settings)
    assert {v.id for v in list_claims(store)} == ids_before
    assert not report.claims_added and not report.claims_retired
    assert not report.links_added and not report.links_removed
    assert report.links_moved > 0 and report.changed


def test_removed_file_kept_unless_pruned(store, settings: Settings, seeds: Path) -> None:
    import_claims(store, settings)
    seed(seeds, "003").unlink()
    kept = import_claims(store, settings)
    assert not kept.claims_retired and kept.totals["claims"] == 35
    pruned = import_claims(store, settings, prune=True)
    assert [f.status for f in pruned.files].count("pruned") == 1
    assert len(pruned.lines_retired) == 1
    # 003's six notes are all cited by 000 or 002 as well, except "Does preference tuning actually reduce..."
    assert len(pruned.claims_retired) == 1
    assert pruned.totals == {"lines": 4, "claims": 34, "anchors": 8}


def test_a_bad_file_aborts_the_whole_import(store, settings: Settings, seeds: Path) -> None:
    shutil.copy(BAD / "bad_date.txt", seeds / "005_bad.txt")
    with pytest.raises(InputError, match=r"005_bad.txt:22: unreadable date"):
        import_claims(store, settings)
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(Claim)) == 0
        assert s.scalar(select(func.count()).select_from(SeedFile)) == 0
    (seeds / "005_bad.txt").unlink()
    import_claims(store, settings)
    before = snapshot(store)
    path = seed(seeds, "002")
    path.write_text(path.read_text().replace("Sources 7 notes", "Sources 8 notes"))
    with pytest.raises(InputError, match=r"announces 8 notes but 7 follow"):
        import_claims(store, settings)
    assert snapshot(store) == before


def test_user_claims_land_in_the_same_tables(store, settings: Settings) -> None:
    report = import_claims(store, settings, [REPO / "examples" / "my_claims.yaml"])
    assert report.totals == {"lines": 2, "claims": 4, "anchors": 1}
    with store.session() as s:
        assert set(s.scalars(select(Claim.kind))) == {"user"}
        assert set(s.scalars(select(Line.source_kind))) == {"user"}
        assert set(s.scalars(select(LineClaim.role))) == {"user"}
    both = import_claims(store, settings.model_copy(update={"paths": PathSettings(
        seeds=settings.paths.seeds, claims_file=REPO / "examples" / "my_claims.yaml")}))  # fmt: skip
    assert both.totals == {"lines": 7, "claims": 39, "anchors": 9}
    assert [f.status for f in both.files].count("unchanged") == 1


def test_duplicate_question_across_files_is_an_error(store, settings: Settings, seeds: Path) -> None:
    shutil.copy(seed(seeds, "002"), seeds / "009_copy.txt")
    with pytest.raises(InputError, match=r"009_copy.txt:3: the question .* is already a line in seeds/002_"):
        import_claims(store, settings)


# --- issue 13 item 1: an import never retires anything by accident --------------------------------


def cut_lines(path: Path, keep: int) -> None:
    """Keep the first `keep` lines, as `head -n` would (each line with its newline)."""
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:keep]))


def test_all_five_real_seeds_pass_the_completeness_rule(seeds: Path) -> None:
    from monitor.claims.seeds import parse_seed_file

    kinds = [parse_seed_file(p).kind for p in sorted(seeds.glob("*.txt"))]
    assert kinds == ["line", "note", "line", "line", "line"]


@pytest.mark.parametrize(
    "prefix,cut,line",
    [
        ("000", 71, 71),  # the reported case: dated claims cut, anchors and the marker gone
        ("000", 20, 19),  # inside the notes: the marker check comes before the note count
        ("004", 84, 84),  # among the anchor papers
        ("001", 20, 20),  # the single note without its "Original note title"
        ("001", 28, 28),  # the single note with the heading but not the title under it
    ],
)
def test_seed_cut_at_a_line_boundary_is_an_input_error_and_changes_nothing(
    store, settings: Settings, seeds: Path, prefix: str, cut: int, line: int
) -> None:
    import_claims(store, settings)
    before = snapshot(store)
    path = seed(seeds, prefix)
    cut_lines(path, cut)
    with pytest.raises(InputError, match="looks cut off") as err:
        import_claims(store, settings)
    assert err.value.path.endswith(path.name) and err.value.line == line
    assert snapshot(store) == before


def test_seed_cut_mid_line_is_an_input_error_and_changes_nothing(
    store, settings: Settings, seeds: Path
) -> None:
    import_claims(store, settings)
    before = snapshot(store)
    for prefix in ("000", "002", "001"):
        path = seed(seeds, prefix)
        full = path.read_bytes()
        path.write_bytes(full[: len(full) * 2 // 3])  # the middle of some line
        text = path.read_text()
        with pytest.raises(InputError, match="looks cut off") as err:
            import_claims(store, settings)
        assert err.value.line == len(text.splitlines()) and str(err.value).startswith(f"{path}:")
        path.write_bytes(full)
    assert snapshot(store) == before


@pytest.mark.parametrize(
    "name,content,line,expected",
    [
        ("005_empty.txt", b"", 1, "empty file"),
        ("005_blank.txt", b"\n\n  \n", 1, "empty file"),
        ("005_binary.txt", b"INQUIRING LINE\n\x1f\x8b\x08\x00\xff\xfe", 2, "not UTF-8 text"),
        ("005_nul.txt", b"INQUIRING LINE\n\nQ?\n\x00\x00\x00", 4, "binary data"),
        ("mine.yaml", b"", 1, "empty file"),
        ("mine.toml", b"", 1, "empty file"),
        ("mine.yaml", b"question: Q?\nclaims:\n  - a\n\xff\xfe\x00", 4, "not UTF-8 text"),
    ],
)
def test_empty_and_binary_files_are_input_errors_with_a_line(
    store, settings: Settings, seeds: Path, name: str, content: bytes, line: int, expected: str
) -> None:
    import_claims(store, settings)
    before = snapshot(store)
    (seeds / name).write_bytes(content)
    with pytest.raises(InputError, match=expected) as err:
        import_claims(store, settings)
    assert str(err.value).startswith(f"{seeds / name}:{line}: ")
    assert snapshot(store) == before


def test_a_genuine_removal_is_refused_without_the_flag_and_done_loudly_with_it(
    store, settings: Settings, seeds: Path
) -> None:
    from monitor.claims.retirements import RetireRefused

    import_claims(store, settings)
    before = snapshot(store)
    path = seed(seeds, "000")
    lines = path.read_text().split("\n")
    dated = next(i for i, ln in enumerate(lines) if ln.startswith("• SFT on diverse demonstrations"))
    anchor = next(i for i, ln in enumerate(lines) if ln.startswith("• arXiv:2505.11711"))
    del lines[anchor], lines[dated]  # a user removing one dated claim and one anchor on purpose
    path.write_text("\n".join(lines))
    with pytest.raises(RetireRefused) as err:
        import_claims(store, settings)
    message = str(err.value)
    assert err.value.exit_code == 3 and message.startswith(f"seeds/{path.name}: ")
    assert "would retire 1 claim, 1 citation, 1 anchor" in message
    assert "'SFT on diverse demonstrations" in message and "arXiv:2505.11711" in message
    assert "--allow-retire" in message
    assert snapshot(store) == before  # refused: nothing written, not even the file's new hash
    done = import_claims(store, settings, allow_retire=True)
    assert len(done.claims_retired) == 1 and len(done.anchors_retired) == 1
    assert done.warnings[0] == "retired as asked: 1 claim, 1 citation, 1 anchor"
    assert any("arXiv:2505.11711" in w for w in done.warnings)
    assert done.totals == {"lines": 5, "claims": 34, "anchors": 7}
    assert not import_claims(store, settings).changed  # accepted once, later imports are quiet


def test_a_cut_user_file_cannot_retire_claims_either(store, settings: Settings, seeds: Path) -> None:
    mine = seeds / "mine.yaml"
    shutil.copy(REPO / "examples" / "my_claims.yaml", mine)
    import_claims(store, settings)
    before = snapshot(store)
    text = mine.read_text()
    mine.write_text(text[: text.index("  - question: Do longer chains")])  # a valid YAML, one line short
    with pytest.raises(InputError, match=r"would retire 1 line, 1 claim, 1 citation") as err:
        import_claims(store, settings)
    assert str(err.value).startswith("seeds/mine.yaml: ")
    assert snapshot(store) == before
    # cut mid-way through the last claim's text: a shortened text is a removal, not a rewording
    cut = text[: text.rindex("after which longer chains hurt")]
    mine.write_text(cut + '\n        date: "2025-02, 2025-06"\n')
    with pytest.raises(InputError, match=r"would retire 1 claim"):
        import_claims(store, settings)
    assert snapshot(store) == before


def test_a_reworded_claim_needs_no_flag_but_is_reported(store, settings: Settings, seeds: Path) -> None:
    import_claims(store, settings)
    path = seed(seeds, "000")
    edited = INSTRUCTION_NOTE.replace("largely irrelevant", "mostly irrelevant")
    path.write_text(path.read_text().replace(INSTRUCTION_NOTE, edited))
    report = import_claims(store, settings)
    assert report.replaced_by == {claim_id(INSTRUCTION_NOTE): claim_id(edited)}
    assert report.warnings == [
        f"claim {claim_id(INSTRUCTION_NOTE)} was reworded: retired, now watched as {claim_id(edited)}"
    ]
