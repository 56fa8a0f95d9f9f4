"""relevance stage."""
