import pytest

from grading.weights import weighted_mean


def test_equal_weights():
    assert weighted_mean([50.0, 100.0], [1.0, 1.0]) == 75.0


def test_mismatch():
    with pytest.raises(ValueError):
        weighted_mean([1.0], [])
