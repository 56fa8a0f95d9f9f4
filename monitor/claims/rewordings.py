"""Accepted rewordings survive re-imports: where a file still says the old text, the store keeps the new.

A curator accepts a narrowed wording in the monitor (`monitor review reword accept`); the research
library's export may not change for weeks. Without this step the next import would read the old text,
revive the old claim and retire the accepted one. A file whose text differs from both is the library's
own edit and wins as usual.
"""

from __future__ import annotations

import dataclasses

from sqlalchemy.orm import Session

from monitor.claims.reconcile import Desired
from monitor.store.rewordings import accepted_wordings


def apply_accepted(session: Session, want: Desired) -> list[str]:
    """Swap each claim a curator reworded for its new wording in what the files ask for; returns old ids."""
    swapped: list[str] = []
    for old_id, row in accepted_wordings(session).items():
        parsed = want.claims.pop(old_id, None)
        if parsed is None:
            continue  # the file no longer says the old text
        new = dataclasses.replace(parsed, text=row.text)
        want.claims.setdefault(new.id, new)
        for (line_id, cid), place in list(want.links.items()):
            if cid == old_id:
                del want.links[(line_id, cid)]
                want.links.setdefault((line_id, new.id), place)
        swapped.append(old_id)
    return swapped
