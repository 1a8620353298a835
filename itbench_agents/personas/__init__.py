"""Personas: each package owns its scenario schema, goal text, output contract, scorers and tables."""
