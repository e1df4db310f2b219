"""``arcs action``: ARCS as a step of the repository's own GitHub Actions workflow.

The Action repairs where the failure happened: in the job's workspace, with the toolchains,
services and dependencies the workflow already set up. It runs the same application entry point
as ``arcs fix`` (:func:`jobs.fix.fix`), then publishes with the token the workflow gave it.

- :mod:`bot.action.env`: the Actions environment and the step's inputs, read once into typed values;
- :mod:`bot.action.event`: what the triggering event asks for (pure);
- :mod:`bot.action.suggest`: GitHub suggestion blocks placed on the pull request's diff (pure);
- :mod:`bot.action.summary`: the job summary, the step outputs and the comment (pure);
- :mod:`bot.action.github`: a repository client on the given token;
- :mod:`bot.action.publish`: the three publishing modes (``pr``, ``suggest``, ``comment``);
- :mod:`bot.action.run`: the use case, from environment to exit code.
"""

from __future__ import annotations
