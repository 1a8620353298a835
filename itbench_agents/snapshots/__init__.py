"""Snapshots: episodes' observable state recorded in ITBench-Lite's layout, served read-only, and
agents' diagnoses scored on them (``README.md``)."""
