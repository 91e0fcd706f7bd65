"""Error handling: a failed write is logged and forgotten, so nothing tries it again."""
