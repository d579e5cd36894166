"""The pod's memory from the server's measured peak RSS, the same for requests and limits.

    memory = peak RSS x headroom + LIMIT_CONCURRENCY x MAX_BODY_BYTES, rounded up to 64 MiB,
             and never below the chart's floor

The peak is the highest over every step of every scenario of the run (the same server served
them all, as a pod serves every route). The headroom (budget.toml [capacity] memory_headroom)
covers what a run of minutes on seeded rows does not reach: rows wider than the seeded ones in the
same pages, a pool larger than the run's, each connection with its statement cache, and the
allocator's arenas, which fragment over days and are seldom returned to the system. Bodies are
added whole, not scaled: the run sends small ones, and every open socket may hold one at the size
limit, since a body is read whole before its request takes a MAX_IN_FLIGHT slot
(serving/middleware/admission.py). Both settings at the service's defaults, which the chart keeps.
"""

import math
from dataclasses import dataclass

from {{ cookiecutter.package_name }}.settings import Settings

# The chart refuses less (deploy/helm/<chart>/templates/_helpers.tpl): below it the interpreter
# and the imported code leave too little for any load.
FLOOR_MIB = 256
ROUND_MIB = 64
_BYTES_PER_MIB = 1 << 20


@dataclass(frozen=True)
class Memory:
    peak_rss_mib: float
    headroom: float
    sockets: int  # LIMIT_CONCURRENCY
    body_bytes: int  # MAX_BODY_BYTES
    mib: int  # what the pod requests and is limited to

    @property
    def bodies_mib(self) -> float:
        return self.sockets * self.body_bytes / _BYTES_PER_MIB

    def describe(self) -> str:
        return (
            f"{self.mib}Mi (peak RSS {self.peak_rss_mib:,.1f} MiB x {self.headroom:g}"
            f" + {self.sockets:,} sockets x {self.body_bytes / 1024:g} KiB bodies"
            f" = {self.peak_rss_mib * self.headroom + self.bodies_mib:,.1f} MiB, rounded up to"
            f" {ROUND_MIB} MiB, at least {FLOOR_MIB} MiB)"
        )


def size_memory(
    peak_rss_mib: float,
    *,
    headroom: float,
    sockets: int = Settings.model_fields["limit_concurrency"].default,
    body_bytes: int = Settings.model_fields["max_body_bytes"].default,
) -> Memory:
    bodies_mib = sockets * body_bytes / _BYTES_PER_MIB
    rounded = math.ceil((peak_rss_mib * headroom + bodies_mib) / ROUND_MIB) * ROUND_MIB
    return Memory(peak_rss_mib, headroom, sockets, body_bytes, max(FLOOR_MIB, rounded))
