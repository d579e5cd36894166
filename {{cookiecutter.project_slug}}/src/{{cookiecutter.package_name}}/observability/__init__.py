"""Logging set-up, the metrics registry and log redaction."""
