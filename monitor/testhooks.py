"""TEST-ONLY pause points, so crash tests can SIGKILL a run at a known place.

When the environment has MONITOR_TEST_PAUSE_AT=<point> (for example `judge:after_first_batch` or
`report:before`; `*` matches any characters, as in `write:digest-*.md`), the process reaching that
point writes a line "PAUSED <point asked for> <pid> at <point reached>" to the file named by
MONITOR_TEST_PAUSE_FILE (or stderr) and sleeps until killed, or until a file named like the marker
plus ".resume" appears (then it goes on). Without the variable this is a no-op; users never set it.
"""

from __future__ import annotations

import fnmatch
import os
import sys
import time

_fired: set[str] = set()


def pause_at(point: str) -> None:
    """Stop here forever if a test asked for `point` (each point pauses once per process)."""
    wanted = os.environ.get("MONITOR_TEST_PAUSE_AT")
    if not wanted or point in _fired or not fnmatch.fnmatchcase(point, wanted):
        return
    _fired.add(point)
    marker = os.environ.get("MONITOR_TEST_PAUSE_FILE")
    if marker:
        with open(marker, "a", encoding="utf-8") as fh:
            fh.write(f"PAUSED {wanted} {os.getpid()} at {point}\n")
    else:
        print(f"PAUSED {wanted} {os.getpid()} at {point}", file=sys.stderr, flush=True)
    resume = f"{marker}.resume" if marker else None
    deadline = time.monotonic() + float(os.environ.get("MONITOR_TEST_PAUSE_SECONDS", "600"))
    while time.monotonic() < deadline and not (resume and os.path.exists(resume)):
        time.sleep(0.1)
