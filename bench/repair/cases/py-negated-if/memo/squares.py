from memo.cache import Memo

square = Memo(lambda n: n * n)
