"""Where the server's samples went: each sample's own frame (the innermost Python function) named
by the layer of the service it belongs to, and the functions with the most own time.

A py-spy speedscope file holds, per thread, the samples in the order they were taken (each a list
of frame indices, outermost first) at a fixed rate: the samples of a time window are a slice. The
event loop's own frame is innermost when the loop waits in epoll (or runs uvloop's C code, which
py-spy does not see without --native): that is the layer "the event loop waiting".
"""

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The layers, in the report's order; the service's own folders first.
RESOURCES = "the resources' own code"
KIT = "kit/"
SERVING = "serving/"
OBSERVABILITY = "observability/ (structlog, prometheus-client)"
SERVICE = "the service's other modules (db.py, ...)"
FRAMEWORK = "FastAPI and Starlette"
PYDANTIC = "pydantic"
SERVER = "uvicorn and httptools"
ASYNCPG = "asyncpg"
ORJSON = "orjson"
LOOP = "the event loop waiting"
OTHER = "other"
LAYERS = (
    RESOURCES,
    KIT,
    SERVING,
    OBSERVABILITY,
    SERVICE,
    FRAMEWORK,
    PYDANTIC,
    SERVER,
    ASYNCPG,
    ORJSON,
    LOOP,
    OTHER,
)
# Third-party packages by the layer that calls them on a request's way.
_PACKAGES = {
    "fastapi": FRAMEWORK,
    "starlette": FRAMEWORK,
    "pydantic": PYDANTIC,
    "pydantic_core": PYDANTIC,
    "uvicorn": SERVER,
    "httptools": SERVER,
    "asyncpg": ASYNCPG,
    "orjson": ORJSON,
    "structlog": OBSERVABILITY,
    "prometheus_client": OBSERVABILITY,
    "uvloop": LOOP,
}
# The loop's own frames: where it waits in epoll (or runs uvloop's C code). The rest of asyncio
# (tasks, locks, futures) is work done for a request, counted as "other".
_LOOP_FILES = ("asyncio/runners.py", "asyncio/base_events.py", "selectors.py")
_SERVICE_FOLDERS = {"kit": KIT, "serving": SERVING, "observability": OBSERVABILITY}


@dataclass(frozen=True)
class Frame:
    name: str
    file: str
    line: int | None

    @property
    def label(self) -> str:
        short = "/".join(self.file.split("/")[-2:])
        return f"{self.name} ({short}:{self.line})" if self.line else f"{self.name} ({short})"


@dataclass(frozen=True)
class Attribution:
    samples: int
    seconds: float
    layers: dict[str, float]  # percent of the samples, every layer of LAYERS
    # (function, layer, percent), most own time first; the loop waiting is not one of them
    functions: list[tuple[str, str, float]]
    stacks: Counter[tuple[str, ...]]  # folded stacks (outermost first) for the flame graph


def layer_of(file: str, package: str) -> str:
    """The layer a source file belongs to, for the service whose import package is `package`."""
    file = file.replace("\\", "/")
    if file.endswith(_LOOP_FILES):
        return LOOP
    parts = file.split("/")
    if package in parts:
        inside = parts[parts.index(package) + 1 :]
        if len(inside) == 1:
            return SERVICE
        return _SERVICE_FOLDERS.get(inside[0], RESOURCES)
    for part in reversed(parts[:-1]):
        if part in _PACKAGES:
            return _PACKAGES[part]
    stem = parts[-1].removesuffix(".py")
    return _PACKAGES.get(stem, OTHER)


def thread_samples(speedscope: dict[str, Any], thread_id: int) -> tuple[list[list[int]], float]:
    """The samples of one thread (the server's main thread has the process's id) and the seconds
    one sample stands for."""
    wanted = f"Thread {thread_id} "
    for profile in speedscope["profiles"]:
        if profile["name"].startswith(wanted) or profile["name"] == wanted.strip():
            weights = profile["weights"]
            interval = float(weights[0]) if weights else 0.0
            return profile["samples"], interval
    names = [profile["name"] for profile in speedscope["profiles"]]
    raise ValueError(f"no samples of thread {thread_id} in the profile (threads: {names})")


def attribute(
    speedscope: dict[str, Any],
    thread_id: int,
    package: str,
    *,
    start_s: float = 0.0,
    end_s: float | None = None,
    top: int = 15,
) -> Attribution:
    """Share of the samples by layer, and the `top` functions by own time, over the window
    [start_s, end_s) of the recording (seconds from its first sample)."""
    frames = [
        Frame(frame["name"], frame.get("file") or "", frame.get("line"))
        for frame in speedscope["shared"]["frames"]
    ]
    samples, interval = thread_samples(speedscope, thread_id)
    if interval > 0:
        first = int(start_s / interval)
        last = len(samples) if end_s is None else int(end_s / interval)
        samples = samples[first:last]
    samples = [sample for sample in samples if sample]  # a thread between two frames
    if not samples:
        raise ValueError("the profile has no sample in the measured window")
    own = Counter(frames[sample[-1]] for sample in samples)
    layers = Counter(layer_of(frame.file, package) for frame in own.elements())
    total = len(samples)
    stacks = Counter(tuple(frames[index].label for index in sample) for sample in samples)
    return Attribution(
        samples=total,
        seconds=round(total * interval, 2),
        layers={layer: 100 * layers[layer] / total for layer in LAYERS},
        # The loop's waiting frame is no function doing work: its share is the layer's row.
        functions=[
            (frame.label, layer, 100 * count / total)
            for frame, count in own.most_common()
            if (layer := layer_of(frame.file, package)) != LOOP
        ][:top],
        stacks=stacks,
    )


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def trimmed(
    speedscope: dict[str, Any], thread_id: int, start_s: float, end_s: float
) -> dict[str, Any]:
    """The recording with only the server's main thread over the measured window (the file a
    user opens in speedscope)."""
    profiles = []
    for profile in speedscope["profiles"]:
        if not profile["name"].startswith(f"Thread {thread_id} "):
            continue
        interval = float(profile["weights"][0]) if profile["weights"] else 0.0
        first, last = (int(start_s / interval), int(end_s / interval)) if interval else (0, None)
        samples = profile["samples"][first:last]
        profiles.append(
            {
                **profile,
                "samples": samples,
                "weights": profile["weights"][first:last],
                "startValue": 0.0,
                "endValue": round(len(samples) * interval, 6),
            }
        )
    return {**speedscope, "profiles": profiles, "activeProfileIndex": 0}
