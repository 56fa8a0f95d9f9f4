"""`monitor serve`: the claim board, a local web app over the store (docs/web.md)."""
