from stock.levels import restock


def restock_report(levels: dict[str, int], threshold: int = 5) -> str:
    skus = restock(levels, threshold)
    return "nothing to reorder" if not skus else "reorder: " + ", ".join(skus)
