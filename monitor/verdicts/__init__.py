"""verdicts stage."""
