"""Word games."""


def is_palindrome(text: str) -> bool:
    """True when text reads the same backwards, ignoring case, spaces and punctuation."""
    return text == text[::-1]


def is_anagram(a: str, b: str) -> bool:
    return sorted(a.replace(" ", "").lower()) == sorted(b.replace(" ", "").lower())
