"""ARCS jobs: Dramatiq actors (thin) and the repair pipeline they drive."""
