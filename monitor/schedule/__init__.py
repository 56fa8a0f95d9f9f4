"""Operations: running the pipeline unattended and safely.

`pipeline.run_once` (monitor run), `lock` (one run per database), `signals` (graceful stop),
`daemon` (APScheduler jobs), `replay` (history from a snapshot), `retest` (re-judging after changes),
`show` (how these commands print). See docs/operations.md.
"""
