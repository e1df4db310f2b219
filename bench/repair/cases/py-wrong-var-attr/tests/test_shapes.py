import unittest

from geometry.shapes import Rect


class RectTest(unittest.TestCase):
    def test_square(self):
        self.assertEqual(Rect(0, 0, 3, 3).area, 9)

    def test_area(self):
        self.assertEqual(Rect(0, 0, 2, 5).area, 10)

    def test_perimeter(self):
        self.assertEqual(Rect(0, 0, 2, 5).perimeter, 14)
