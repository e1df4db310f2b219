"""Outside code: a held-out repair corpus built from pinned PyPI sdists (see README.md)."""
