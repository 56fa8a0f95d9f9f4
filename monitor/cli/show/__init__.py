"""What the commands print, one module per kind of result: `claims` (imports, lines, claims, anchors),
`verdicts` (the verdict table, one claim in full), `digest` (what `monitor report` wrote), `runs` (run,
runs, retest, replay). The stages return typed results; only the command line turns them into text.
"""
