import unittest

from shop.receipt import receipt


class ReceiptTest(unittest.TestCase):
    def test_receipt_total(self):
        text = receipt([("tea", 2, 3.0), ("mug", 1, 7.5)])
        self.assertEqual(text.splitlines()[-1], "TOTAL: EUR 13.50")
