"""The review stage: what needs a curator, their decisions, and the terminal walk."""
