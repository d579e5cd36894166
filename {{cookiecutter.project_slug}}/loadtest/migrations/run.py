"""Each phase of `make migrate-under-load`: one open-loop step at the scenario's rate, the
migration started a second into it, and the verdict on what the clients saw meanwhile.

A phase holds when no request failed, its p99 stayed within the budget's plus the migration's
lock_timeout (a query queued behind a waiting ALTER waits that long at most), and the migration
succeeded within the step; the blocked phase must also have given up at least once while the
lock was held, and succeeded once it was released.
"""

import contextlib
import os
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from ..drive import Engine, Step
from ..drive.engine import START_DELAY_S
from ..plan import Mix
from .phases import Holder, Migrations, Phase, go, lock_timeout_ms

LEAD_S = 0.5  # the migration starts this long into the measured window


@dataclass(frozen=True)
class Outcome:
    phase: str
    blocked: bool
    step: Step
    lock_timeout_ms: float
    limit_ms: float  # p99 allowed: the budget's + lock_timeout
    migrate_seconds: float | None  # None: no migration, or one that outlasted the step
    migrate_code: int | None
    attempts: int  # the migrate command's runs of `upgrade heads`
    gave_up_while_held: bool
    report: str  # what the migrate command wrote on stderr

    @property
    def held(self) -> bool:
        served = self.step.requests > 0 and self.step.errors == 0
        within = self.step.p99_ms <= self.limit_ms
        if self.migrate_code is None:
            return served and within
        finished = self.migrate_code == 0 and self.migrate_seconds is not None  # within the step
        blocked_ok = self.gave_up_while_held if self.blocked else True
        return served and within and finished and blocked_ok

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "held": self.held}


def run_phase(
    phase: Phase,
    *,
    engine: Engine,
    mix: Mix,
    rate: float,
    seconds: float,
    hold_seconds: float,
    migrations: Migrations,
    database_url: str,
    table: str,
    max_p99_ms: float,
) -> Outcome:
    env = {**os.environ, "DATABASE_URL": database_url}
    if not phase.statements and not phase.concurrently:
        step = engine.run(mix, rate=rate, duration=seconds)
        return Outcome(phase.title, False, step, 0.0, max_p99_ms, None, None, 0, False, "")
    lock_ms = lock_timeout_ms(migrations.add(phase, env))
    duration = seconds + (hold_seconds if phase.blocked else 0.0)
    holder: list[Holder] = []
    migrating: dict[str, Any] = {}

    if phase.blocked:
        holder.append(Holder(database_url, table))
    process = migrations.migrate(env)

    def migrate() -> None:
        started = time.monotonic()
        if holder:
            # At the latest a second before the window ends: a migration without a lock_timeout
            # waits for it all that while, and the clients with it.
            threading.Timer(duration - LEAD_S - 1.0, holder[0].release).start()
        go(process)
        assert process.stderr is not None
        lines = []
        for line in process.stderr:  # until the command exits
            lines.append(line)
            if holder and len(lines) == 1:
                # It gave up on its own while the lock was held: the lock goes a while later.
                threading.Timer(hold_seconds, holder[0].release).start()
        migrating["code"] = process.wait()
        migrating["seconds"] = time.monotonic() - started
        migrating["ended"] = time.monotonic()
        migrating["report"] = "".join(lines)

    thread = threading.Timer(START_DELAY_S + LEAD_S, migrate)
    window_ended = time.monotonic() + START_DELAY_S + duration  # run() opens it after the delay
    thread.start()
    step = engine.run(mix, rate=rate, duration=duration)
    thread.join()
    if holder and not holder[0].released.is_set():
        with contextlib.suppress(psycopg.Error):
            holder[0].release()
    report = str(migrating.get("report", ""))
    # The first attempt's report named the holder: it gave up while the lock was held.
    gave_up = phase.blocked and "long-report" in report.partition("\n")[0]
    within = migrating.get("ended", float("inf")) <= window_ended
    return Outcome(
        phase.title,
        phase.blocked,
        step,
        lock_ms,
        max_p99_ms + lock_ms,
        round(migrating["seconds"], 2) if within else None,
        migrating.get("code"),
        1 + report.count("Attempt "),
        gave_up,
        report.strip(),
    )
