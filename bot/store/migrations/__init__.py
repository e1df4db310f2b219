"""Alembic migrations of the ARCS store (a package so that it ships in the wheel)."""
