"""Client defaults (seconds)."""

DEFAULT_TIMEOUT_S = 10.0
MAX_REDIRECTS = 5
USER_AGENT = "httpkit/1.4"
