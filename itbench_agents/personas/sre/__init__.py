"""The SRE persona's own checks of its scenario library: ``validate`` and ``audit`` (README.md)."""
