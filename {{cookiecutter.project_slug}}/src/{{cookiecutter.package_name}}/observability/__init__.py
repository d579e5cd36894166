"""Logging, metrics and request ids, as pure ASGI middleware."""
