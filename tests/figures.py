"""Measured figures of the reliability tests, gathered in one JSON file per run.

The file goes to the pytest temporary folder, and also to $RELIABILITY_FIGURES when that variable
names a path (docs/reliability-figures.json is written that way, by the command in
docs/reliability.md), so the figures in the docs come from a real run.
"""

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy


class Figures:
    def __init__(self, folder: Path) -> None:
        self.paths = [folder / "reliability-figures.json"]
        if os.environ.get("RELIABILITY_FIGURES"):
            self.paths.append(Path(os.environ["RELIABILITY_FIGURES"]))

    def record(self, scenario: str, **numbers: Any) -> None:
        for path in self.paths:
            data = json.loads(path.read_text()) if path.is_file() else {}
            data["_run"] = {
                "command": " ".join(["pytest", *sys.argv[1:]]) if sys.argv else "pytest",
                "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                f"Python {platform.python_version()}",
            }
            data[scenario] = numbers
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (numpy's inverted CDF); 0 for no values."""
    if not values:
        return 0.0
    return float(numpy.percentile(values, share * 100, method="inverted_cdf"))
