"""Commands that span layers: they sit on top so that they may import every layer below."""
