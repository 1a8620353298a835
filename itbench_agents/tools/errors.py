"""The tools' errors: what a tool raises for the agent to see, and an unknown tool's name."""

from __future__ import annotations


class UnknownToolError(KeyError):
    """A tool name nothing registered (or a plug-in tool that did not load, with the reason)."""

    def __str__(self) -> str:
        return str(self.args[0])


class ToolError(Exception):
    """A failure the agent should see as an observation (bad query, refused command...)."""
