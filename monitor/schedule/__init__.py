"""Operations: running the pipeline unattended and safely.

`pipeline` (the steps every command takes, and `run_once`: monitor run), `judging` (monitor judge),
`lock` (one run per database), `signals` (graceful stop), `daemon` (APScheduler jobs), `replay`
(history from a snapshot), `retest` (re-judging after changes), `show` (how these commands print).
See docs/operations.md.
"""
