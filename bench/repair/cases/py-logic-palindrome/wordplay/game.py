from wordplay.checks import is_palindrome


def score(words: list[str]) -> int:
    return sum(len(w) for w in words if is_palindrome(w))
