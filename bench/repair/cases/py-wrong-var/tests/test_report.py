from grading.report import final_grade


def test_final_grade():
    assert final_grade({"homework": 60.0, "midterm": 60.0, "final": 90.0}) == 75.0
