"""stockroom: inventory and order service."""

__version__ = "0.4.2"
