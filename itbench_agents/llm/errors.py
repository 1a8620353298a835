"""The model layer's configuration error (its own module: the model settings and the scripted model
both raise it, and neither imports the other for it)."""

from __future__ import annotations


class ModelConfigError(ValueError):
    """A model string, key or server that cannot work: reported once, before the run starts."""
