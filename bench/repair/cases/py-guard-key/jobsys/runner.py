from jobsys.policy import load_policy


def delays(raw: dict[str, object]) -> list[float]:
    policy = load_policy(raw)
    return [policy.backoff_s * 2**i for i in range(policy.retries)]
