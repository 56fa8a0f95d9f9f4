"""A claim's own sources: the papers its seed rests on. They are shown as sources, never as evidence.

The research library's exports link a claim to its papers in two ways:

* an inquiring line's "Anchor papers" (the Research prompt block) cite arXiv ids: the work every claim
  of that line was written from;
* each note under "Sources N notes" summarises one paper, but cites it by neither id nor title. A note
  is taken to be the summary of a paper when it *names* the paper (a quoted phrase that starts the
  paper's title, or a coined name of six or more characters with two capitals, such as "DARLING" or
  "Critique-GRPO", that the paper's title or abstract defines) or *paraphrases* its abstract (at least
  `PARAPHRASE_SHARE` of the note's consecutive content-word pairs recur in the title and abstract; a
  different paper on the same topic shares at most 0.18 with any seed note, a note's own paper 0.30
  to 0.32 where it is caught: bench/source_check.py, docs/verdicts.md). Words and stop words are
  monitor/text.py's, the ones every word-level check reads.

A paper is a source of a claim when it is an anchor of one of the claim's lines or the paper of any note
of those lines: a line's prose and its dated claims were written from its notes' papers, so none of them
is new evidence about any claim of the line.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy.orm import Session

from monitor.store.claims import active_claims, anchor_refs_by_claim, lines_by_claim
from monitor.store.papers import abstracts_of
from monitor.text import content_words, words

PARAPHRASE_SHARE = 0.25
_VERSION_SUFFIX = re.compile(r"v\d+$")
_NAME = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*")
_QUOTED = re.compile(r"[\"“]([^\"”]{8,})[\"”]")


def anchor_ids_by_claim(session: Session) -> dict[str, set[str]]:
    """Each claim's lines' anchor papers (without version suffix): the work the claim rests on."""
    return {
        claim_id: {_VERSION_SUFFIX.sub("", ref.removeprefix("arXiv:")) for ref in refs}
        for claim_id, refs in anchor_refs_by_claim(session).items()
    }


@functools.lru_cache(maxsize=4096)
def _pairs(text: str) -> frozenset[tuple[str, str]]:
    """Cached, so frozen: the one value is shared by every reader that asks for the same text."""
    content = content_words(text)
    return frozenset(zip(content, content[1:], strict=False))


@functools.lru_cache(maxsize=4096)
def _coined_names(text: str) -> frozenset[str]:
    """Names a paper might go by: six or more characters with at least two capitals. Cached: every
    reader of the evidence (the claim board's each page) asks it of the same notes for each paper."""
    return frozenset(m for m in _NAME.findall(text) if len(m) >= 6 and sum(c.isupper() for c in m) >= 2)


def _defines(name: str, title: str, abstract: str) -> bool:
    """The paper calls itself `name`: its title starts with it, or its abstract introduces it."""
    return title.lower().startswith(name.lower()) or f"({name})" in abstract


def names_paper(note: str, title: str, abstract: str) -> str:
    """How a note names or paraphrases a paper ("" when it does not): see the module doc."""
    head = " ".join(words(title))
    for quoted in _QUOTED.findall(note):
        said = words(quoted)
        if len(said) >= 3 and head.startswith(" ".join(said)):
            return f"the note quotes its title “{quoted}”"
    for name in sorted(_coined_names(note)):
        if _defines(name, title, abstract):
            return f"the note names it, {name}"
    mine = _pairs(note)
    shared = len(mine & _pairs(f"{title} {abstract}")) / len(mine) if mine else 0.0
    if shared >= PARAPHRASE_SHARE:
        return f"the note paraphrases its abstract, {shared:.0%} of its word pairs"
    return ""


def source_reasons(
    session: Session, pairs: Iterable[tuple[str, str, int, str]]
) -> dict[tuple[str, str], str]:
    """(claim_id, arxiv_id) -> why the paper is one of the claim's own sources, for the given
    (claim_id, arxiv_id, version, title) pairs that are sources."""
    pairs = list(pairs)
    if not pairs:
        return {}
    anchors = anchor_ids_by_claim(session)
    lines = lines_by_claim(session)
    notes_of_line: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for claim in active_claims(session):
        if claim.kind == "note":
            for line_id in lines.get(claim.id, []):
                notes_of_line[line_id].append((claim.id, claim.text))
    abstracts = abstracts_of(session, [(arxiv_id, version) for _, arxiv_id, version, _ in pairs])
    out: dict[tuple[str, str], str] = {}
    for claim_id, arxiv_id, version, title in pairs:
        if arxiv_id in anchors.get(claim_id, ()):
            out[(claim_id, arxiv_id)] = "an anchor paper of its line"
            continue
        abstract = abstracts.get((arxiv_id, version), "")
        notes = {nid: text for line_id in lines.get(claim_id, []) for nid, text in notes_of_line[line_id]}
        for note_id, text in sorted(notes.items(), key=lambda n: n[0] != claim_id):
            how = names_paper(text, title, abstract)
            if how:
                whose = "this note's paper" if note_id == claim_id else f"the paper of note {note_id}"
                out[(claim_id, arxiv_id)] = f"{whose}: {how}"
                break
    return out
