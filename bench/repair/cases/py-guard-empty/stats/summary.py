"""Descriptive statistics for the dashboard."""


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def summarize(values: list[float]) -> dict[str, float]:
    return {
        "count": float(len(values)),
        "mean": round(mean(values), 3),
        "max": max(values, default=0.0),
    }
