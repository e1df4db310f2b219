"""Change-aware CI repair benches (issue #14)."""
