from geometry.shapes import Rect


def coverage(canvas: Rect, boxes: list[Rect]) -> float:
    return round(sum(b.area for b in boxes) / canvas.area, 3)
