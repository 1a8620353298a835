"""This package's folder holds the plug-in's scenarios, laid out like the library (``sre/*.yaml``)."""
