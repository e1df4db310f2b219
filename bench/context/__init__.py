"""Context bench: does the proposer see the lines a fix must change (issue #15)."""
