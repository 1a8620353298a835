"""The FinOps persona: cost anomaly detection on billing data (ITBench-Lite's format) today; cost
incidents on the twin with OpenCost (``twin/addons/opencost``) next."""
