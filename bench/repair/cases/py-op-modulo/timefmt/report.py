from timefmt.durations import format_duration


def lap_table(laps: list[int]) -> list[str]:
    return [f"lap {i + 1}: {format_duration(t)}" for i, t in enumerate(laps)]
