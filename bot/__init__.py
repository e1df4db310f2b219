"""ARCS bot: webhooks, commands, GitHub side effects, dashboard and the `arcs` CLI."""
