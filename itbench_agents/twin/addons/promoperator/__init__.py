"""The Prometheus Operator's PrometheusRule objects in the twin (``addon.py``)."""
