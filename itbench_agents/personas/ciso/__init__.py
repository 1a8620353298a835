"""The CISO persona: compliance scenarios (Kyverno today), their schema, environment and posture scorer."""
