"""Control characters, NULs and lone surrogates in what users and arXiv hand us (monitor/text.py), and the
one tokeniser and stop-word list the word-level checks share.

Papers are covered per source in tests/test_sources_*.py; here the rule itself, and claim files: a
NUL or a lone surrogate in a claim file is a bad input (exit 3, file:line, nothing imported), other
control characters are removed before the claim text is stored or printed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from ops_helpers import cli
from sqlalchemy import func, select

from monitor.store import open_store
from monitor.store.models import Claim, Line
from monitor.text import STOP_WORDS, content_words, printable, unprintable, unstorable, words

REPO = Path(__file__).resolve().parent.parent


def monitor(cwd: Path, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("--db", db, *args, cwd=cwd)


def test_printable_keeps_text_tabs_and_newlines_and_drops_every_control_character() -> None:
    assert printable("Größe\tÄnderung\n— 数学 🙂") == "Größe\tÄnderung\n— 数学 🙂"
    assert printable("a\x00b\x1b[2Jc\x7fd\x9b31me\x9d8;;x\x9cf\rg") == "ab[2Jcd31me8;;xfg"
    assert printable("half \ud83d emoji") == "half \ufffd emoji"
    assert unstorable("a\x00b") == "a NUL character" and unstorable("\udc00") == "a lone UTF-16 surrogate"
    assert unstorable("a\x1bb") is None and unprintable("a\x1bb") == "control characters"
    assert unprintable("plain text\n") is None


CLAIM_FILE = (
    'question: "Does X hold?"\nclaims:\n  - text: "A first claim."\n  - text: "{bad}"\n    date: 2025-01\n'
)


def test_a_word_is_a_run_of_letters_and_digits_of_any_script() -> None:
    text = "Naïve RLVR-trained f_θ beats GPT-4 (by 3.5%) on α-tasks"
    assert words(text) == [
        "naïve", "rlvr", "trained", "f", "θ", "beats", "gpt", "4", "by", "3", "5", "on", "α", "tasks"
    ]  # fmt: skip
    assert words(text, lower=False)[:3] == ["Naïve", "RLVR", "trained"]  # as written, for a reader
    assert words("chain-of-thought and GPT-4o, not well- or ill-posed", hyphenated=True) == [
        "chain-of-thought", "and", "gpt-4o", "not", "well", "or", "ill-posed"
    ]  # fmt: skip
    assert words("") == [] and words("-- … ___") == []


def test_content_words_drop_the_one_stop_word_list_only() -> None:
    said = "How far can RL go without the data of its own?"
    assert content_words(said) == ["far", "rl", "go", "data", "own"]
    said = "The state-of-the-art is not enough"
    assert content_words(said, hyphenated=True) == ["state-of-the-art", "enough"]
    # Every word a check dropped before they shared one list: the source check's, the anchor title check's,
    # the search terms' function words, and bm25s's English list.
    assert {"between", "vs", "via", "whether", "if", "there", "without"} <= STOP_WORDS
    assert not {"model", "paper", "results", "using"} & STOP_WORDS  # domain words: the search terms' own


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("Nul \\0 inside.", "claims[1].text: contains a NUL character"),
        ("Half an emoji \\ud83d.", "claims[1].text: contains a lone UTF-16 surrogate"),
    ],
)
def test_a_claim_file_with_a_nul_or_a_lone_surrogate_is_refused_naming_file_and_line(
    db_url: str, tmp_path: Path, bad: str, says: str
) -> None:
    # PostgreSQL refused the NUL (DataError, exit 1); a surrogate could not be encoded on either database.
    path = tmp_path / "claims.yaml"
    path.write_text(CLAIM_FILE.format(bad=bad), encoding="utf-8")
    done = monitor(tmp_path, db_url, "seeds", "import", str(path))
    assert done.returncode == 3, done.stderr
    assert f"{path}:4: {says}" in " ".join(done.stderr.split())
    store = open_store(db_url)
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(Claim)) == 0  # nothing half-imported
    store.close()


def test_a_control_character_written_as_such_in_yaml_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text(CLAIM_FILE.format(bad="Escape \x1b[2J here."), encoding="utf-8")
    done = monitor(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", "seeds", "import", str(path))
    assert done.returncode == 3, done.stderr
    assert f"{path}:4: not valid YAML: character #x001b is not allowed" in done.stderr


def test_terminal_escapes_in_claim_files_are_removed_before_they_are_stored_or_shown(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    user = tmp_path / "claims.yaml"
    # YAML escapes: an OSC 8 hyperlink whose text hides its target, and a clear-screen.
    user.write_text(
        CLAIM_FILE.format(bad="See \\e]8;;https://evil.example\\e\\\\this\\e]8;;\\e\\\\ paper.\\e[2J"),
        encoding="utf-8",
    )
    seed = tmp_path / "seed.txt"
    real = next((REPO / "seeds").glob("001_*.txt"))
    shutil.copy(real, seed)
    text = seed.read_text(encoding="utf-8").splitlines()
    text[2] = text[2].replace(" RL ", " RL\x1b[31m\x07 ", 1)  # the question line of a single note
    seed.write_text("\n".join(text) + "\n", encoding="utf-8")
    done = monitor(tmp_path, db, "seeds", "import", str(user), str(seed))
    assert done.returncode == 0, done.stderr
    store = open_store(db)
    with store.session() as s:
        claims = list(s.scalars(select(Claim.text)))
        questions = list(s.scalars(select(Line.question)))
    store.close()
    assert "See ]8;;https://evil.example\\this]8;;\\ paper.[2J" in claims
    assert not any(unprintable(t) for t in claims + questions)
    assert any(q.startswith("Does RL[31m training") for q in questions)
    listed = monitor(tmp_path, db, "claims", "--json")
    shown_id = next(c["id"] for c in json.loads(listed.stdout) if c["text"].startswith("See "))
    shown = monitor(tmp_path, db, "show", shown_id)
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "evil.example" in shown.stdout
