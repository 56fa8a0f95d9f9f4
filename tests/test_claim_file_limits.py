"""Claim files that would cost without bound (issue 33, items 6 and 10): a claim the size of a page,
duplicate YAML keys, YAML aliases that expand without end. Each is refused at import, naming the file
and line, before anything is stored; `monitor run` reads `paths.claims_file` every time, so it stops
there too, in well under a second of parsing.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from ops_helpers import REPO, cli, write_config, write_snapshot
from sqlalchemy import func, select

from monitor.claims.model import MAX_CLAIM_CHARS
from monitor.claims.userfile import MAX_ALIAS_NODES
from monitor.store import open_store
from monitor.store.models import Claim, Line

SEED = "000_62116cef48a85a24.txt"  # an inquiring line; its dated bullets start on line 69


def import_(tmp_path: Path, db: str, *files: Path) -> tuple[int, str]:
    done = cli("--db", db, "seeds", "import", *map(str, files), cwd=tmp_path)
    return done.returncode, " ".join(done.stderr.split())


def stored(db: str) -> tuple[int, int]:
    store = open_store(db)
    with store.session() as s:
        counts = (
            s.scalar(select(func.count()).select_from(Claim)) or 0,
            s.scalar(select(func.count()).select_from(Line)) or 0,
        )
    store.close()
    return counts


def bomb(levels: int = 9) -> str:
    """The "billion laughs": each level a list of nine aliases of the one before (9**levels strings)."""
    rows = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "question: Does the bomb go off?\nclaims:\n  - One claim.\nframing:\n" + "".join(
        f"  {row}\n" for row in rows
    )


# --- item 6: a claim is one statement, not a page --------------------------------------------------


@pytest.mark.parametrize("kind", ["yaml", "toml", "seed"])
def test_a_claim_longer_than_the_cap_is_refused_naming_file_and_line(
    db_url: str, tmp_path: Path, kind: str
) -> None:
    """A 1.1 MB claim imported and then went whole into every judge request (1,113,041 bytes)."""
    page = "This claim goes on and on. " * 41_000  # 1.1 MB
    if kind == "yaml":
        path = tmp_path / "claims.yaml"
        path.write_text(
            f'question: "Does it fit?"\nclaims:\n  - A short claim.\n  - "{page}"\n', encoding="utf-8"
        )
        where = f"{path}:4: "
    elif kind == "toml":
        path = tmp_path / "claims.toml"
        path.write_text(
            f'question = "Does it fit?"\nclaims = ["A short claim.", "{page}"]\n', encoding="utf-8"
        )
        where = f"{path}: "  # tomllib keeps no line numbers
    else:
        path = tmp_path / SEED
        lines = (REPO / "seeds" / SEED).read_text(encoding="utf-8").splitlines(keepends=True)
        lines[69] = f"• {page.strip()} (~2025).\n"  # line 70: the second dated bullet
        path.write_text("".join(lines), encoding="utf-8")
        where = f"{path}:70: "
    code, err = import_(tmp_path, db_url, path)
    assert code == 3, err
    assert (
        f"{where}claim text is {len(page.strip()):,} characters long; a claim may have at most 2,000" in err
    )
    assert "Traceback" not in err and len(err) < 400  # the claim is not echoed back
    assert stored(db_url) == (0, 0)  # nothing imported, not even the file's short claim


def test_a_claim_at_the_cap_imports_and_a_question_over_it_is_refused(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    path = tmp_path / "claims.yaml"
    at_cap = "x" * (MAX_CLAIM_CHARS - 1) + "."
    path.write_text(f'question: "Does it fit?"\nclaims:\n  - "{at_cap}"\n', encoding="utf-8")
    assert import_(tmp_path, db, path)[0] == 0 and stored(db) == (1, 1)
    question = "Why " * 600 + "?"
    path.write_text(f'question: "{question}"\nclaims:\n  - "{at_cap}"\n', encoding="utf-8")
    code, err = import_(tmp_path, db, path)
    assert code == 3 and f"{path}:1: question text is 2,401 characters long" in err, err
    assert stored(db) == (1, 1)


def test_the_shipped_seeds_are_well_under_the_cap() -> None:
    from monitor.claims.importer import read_document

    longest = max(
        len(text)
        for path in sorted((REPO / "seeds").glob("*.txt"))
        for line in read_document(path).lines
        for text in [line.question, *(c.text for c in line.claims)]
    )
    assert longest == 510 and longest * 3 < MAX_CLAIM_CHARS  # docs/claims.md gives these figures


# --- item 10: YAML that says one thing twice, or expands without end --------------------------------


@pytest.mark.parametrize(
    ("text", "line", "key", "first"),
    [
        # Two `claims:` blocks: only the second was stored, exit 0.
        ('question: "Q?"\nclaims:\n  - First claim.\nclaims:\n  - Second claim.\n', 4, "claims", 2),
        ('question: "Q?"\nclaims:\n  - text: One.\n    date: 2025-01\n    text: Two.\n', 5, "text", 3),
        ('lines:\n  - question: "Q?"\n    claims: [A.]\n    question: "R?"\n', 4, "question", 2),
    ],
)
def test_a_duplicate_yaml_key_is_refused_naming_both_lines(
    db_url: str, tmp_path: Path, text: str, line: int, key: str, first: int
) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text(text, encoding="utf-8")
    code, err = import_(tmp_path, db_url, path)
    assert code == 3, err
    assert f"{path}:{line}: duplicate key '{key}' (first on line {first})" in err
    assert stored(db_url) == (0, 0)


def test_a_yaml_alias_bomb_is_refused_at_once_naming_its_line(db_url: str, tmp_path: Path) -> None:
    """472 bytes whose aliases stand for 9**9 strings: past 60 s and 1.6 GB before."""
    path = tmp_path / "claims.yaml"
    path.write_text(bomb(), encoding="utf-8")
    assert len(path.read_bytes()) < 600
    started = time.monotonic()
    code, err = import_(tmp_path, db_url, path)
    assert code == 3, err
    # Levels 1-3 (lines 6-8) add 90 + 819 + 7,380 nodes; the first alias of level 4 (line 9) passes 10,000.
    assert f"{path}:9: YAML aliases expand the file by more than {MAX_ALIAS_NODES:,} values" in err
    assert time.monotonic() - started < 10
    assert stored(db_url) == (0, 0)


def test_monitor_run_reading_a_bombed_claims_file_stops_at_its_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    claims = tmp_path / "claims.yaml"
    claims.write_text(bomb(), encoding="utf-8")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    shutil.copy(REPO / "seeds" / SEED, seeds / SEED)
    snapshot = tmp_path / "s.jsonl"
    write_snapshot(snapshot, limit=5)
    config = write_config(tmp_path, db, paths={"seeds": str(seeds), "claims_file": str(claims)})
    started = time.monotonic()
    done = cli("--config", str(config), "run", "--source", str(snapshot), cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{claims}:9: YAML aliases expand the file" in " ".join(done.stderr.split())
    assert time.monotonic() - started < 30
    assert stored(db) == (0, 0)


def test_a_yaml_alias_inside_what_it_names_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text('question: "Q?"\nclaims: &all\n  - One claim.\n  - *all\n', encoding="utf-8")
    code, err = import_(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", path)
    assert code == 3 and f"{path}:4: a YAML alias inside the node it names" in err, err


def test_aliases_that_share_a_few_values_still_load(tmp_path: Path) -> None:
    """Sharing one topics list among many claims is what aliases are for, and stays far below the bound."""
    db = f"sqlite:///{tmp_path / 'm.db'}"
    path = tmp_path / "claims.yaml"
    claims = "".join(f"  - text: Claim number {i} holds.\n    topics: *shared\n" for i in range(300))
    path.write_text(
        f'question: "Do they hold?"\ntopics: &shared [rl, sparsity, "fine-tuning"]\nclaims:\n{claims}',
        encoding="utf-8",
    )
    code, err = import_(tmp_path, db, path)
    assert code == 0, err
    assert stored(db) == (300, 1)
    store = open_store(db)
    with store.session() as s:
        assert {tuple(c.topics) for c in s.scalars(select(Claim))} == {("rl", "sparsity", "fine-tuning")}
    store.close()
