"""An example itbench-agents plug-in: the ``replica-restorer`` agent, the ``runbook`` tool and the
scenario ``sre/hotel-search-scaled-to-zero-v1``, found through entry points (see pyproject.toml)."""
