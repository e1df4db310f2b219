"""Dependency updates (issue #27): recognise a bump, know what changed in the dependency, migrate."""
