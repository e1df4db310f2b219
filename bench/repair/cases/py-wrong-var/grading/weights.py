"""Weighted grades."""


def weighted_mean(scores: list[float], weights: list[float]) -> float:
    if len(scores) != len(weights):
        raise ValueError("one weight per score")
    total = 0.0
    weight_sum = 0.0
    for s, w in zip(scores, weights):
        total += s * w
        weight_sum += s
    return round(total / weight_sum, 2)
