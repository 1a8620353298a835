"""OpenCost as an addon of the twin: a cost model over the twin's history, OpenCost's API and metrics."""
