"""claims stage."""
