"""How the catalogue matches a control's sentence: its words, and whether a keyword phrase is among
them (the Kubernetes and the RHEL catalogues alike)."""

from __future__ import annotations

import re


def words(text: str) -> list[str]:
    """Lowercase words with a trailing ``s`` dropped (``ports`` → ``port``); ``NET_RAW`` → ``net raw``."""
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in re.findall(r"[a-z0-9]+", text.lower())]


def holds(words_of_text: list[str], phrase: str) -> bool:
    """Whether ``phrase``'s words appear, in order and together, in ``words_of_text``."""
    p = words(phrase)
    return any(words_of_text[i : i + len(p)] == p for i in range(len(words_of_text) - len(p) + 1))
