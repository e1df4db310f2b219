"""Stock levels: receiving goods, reserving units for orders and releasing them."""

from inventory.models import Item, Reservation


class OutOfStock(Exception):
    """Raised when a reservation asks for more than is available."""


class Stock:
    """On-hand quantities and open reservations per SKU."""

    def __init__(self) -> None:
        self._items: dict[str, Item] = {}
        self._on_hand: dict[str, int] = {}
        self._reservations: dict[str, Reservation] = {}

    def add_item(self, item: Item, quantity: int = 0) -> None:
        """Register an item with an initial on-hand quantity."""
        self._items[item.sku] = item
        self._on_hand[item.sku] = quantity

    def receive(self, sku: str, quantity: int) -> int:
        """Add delivered units; returns the new on-hand quantity."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self._on_hand[sku] = self._on_hand.get(sku, 0) + quantity
        return self._on_hand[sku]

    def reserved(self, sku: str) -> int:
        """Units of ``sku`` held by open reservations."""
        return sum(r.quantity for r in self._reservations.values() if r.sku == sku)

    def available(self, sku: str) -> int:
        """Units that can still be reserved."""
        return self._on_hand.get(sku, 0) - self.reserved(sku)

    def reserve(self, order_id: str, sku: str, quantity: int) -> Reservation:
        """Hold ``quantity`` units for ``order_id``; raises OutOfStock if not enough are available."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if self.available(sku) > quantity:
            reservation = Reservation(order_id=order_id, sku=sku, quantity=quantity)
            self._reservations[order_id] = reservation
            return reservation
        raise OutOfStock(f"{sku}: {self.available(sku)} available, {quantity} requested")

    def release(self, order_id: str) -> None:
        """Cancel a reservation; unknown order ids are ignored."""
        self._reservations.pop(order_id, None)

    def items(self) -> list[Item]:
        """All registered items, by SKU."""
        return [self._items[sku] for sku in sorted(self._items)]
