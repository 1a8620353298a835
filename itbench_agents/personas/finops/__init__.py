"""The FinOps persona: cost anomaly detection on billing data (ITBench-Lite's format), and cost
incidents on the twin with OpenCost beside the app (``twin/addons/opencost``): their price list
(``pricing.py``), cost alerts (``alerts.py``) and proximity metrics (``proximity.py``)."""
