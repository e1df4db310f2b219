"""Axis-aligned rectangles."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float

    @property
    def area(self) -> float:
        return self.width * self.width

    @property
    def perimeter(self) -> float:
        return 2 * (self.width + self.height)
