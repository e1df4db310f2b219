from importer.csvfile import parse_csv


def load_products(text: str) -> dict[str, float]:
    return {name: float(price) for name, price in parse_csv(text)}
