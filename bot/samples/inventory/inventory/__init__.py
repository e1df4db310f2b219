"""A tiny stock-keeping library (the ARCS demo repository)."""

from inventory.models import Item, Reservation
from inventory.stock import OutOfStock, Stock

__all__ = ["Item", "OutOfStock", "Reservation", "Stock"]
