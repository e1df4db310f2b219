import unittest

from wordplay.checks import is_anagram, is_palindrome


class ChecksTest(unittest.TestCase):
    def test_simple(self):
        self.assertTrue(is_palindrome("level"))
        self.assertFalse(is_palindrome("levels"))

    def test_sentence(self):
        self.assertTrue(is_palindrome("A man, a plan, a canal: Panama"))
        self.assertTrue(is_palindrome("Never odd or even"))

    def test_anagram(self):
        self.assertTrue(is_anagram("Dormitory", "dirty room"))
