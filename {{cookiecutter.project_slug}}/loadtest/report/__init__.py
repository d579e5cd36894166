"""Reporting: the console table a run prints as it goes, and what it leaves behind (results JSON,
the Markdown report, the PNG chart)."""

from .markdown import write
from .table import COLUMNS, cells, header, row, say

__all__ = ["COLUMNS", "cells", "header", "row", "say", "write"]
