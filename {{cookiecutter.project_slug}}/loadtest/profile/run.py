"""`make profile`: each scenario driven open loop at a fixed rate while py-spy samples the server;
per scenario a flame graph, a speedscope file and the layers' shares, in loadtest/results/.

py-spy starts the server as its own child (`py-spy record -- taskset -c 0 python -m <package>`):
a process may trace its own children under ordinary Linux settings (Yama's ptrace_scope 1), where
attaching to a running server would need CAP_SYS_PTRACE. py-spy itself runs on the client's
cores. The recording covers the server's whole life; only the measured window is kept.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .. import project
from ..drive import Engine, credentials, service
from ..drive.engine import START_DELAY_S
from ..plan import SCENARIOS, Budget, HeadersError, given, resource_of, to_run
from ..report import say
from . import flamegraph
from .layers import attribute, load, trimmed
from .report import Profiled, document

# Without a load-test result to take a serving rate from: a rate any service on one core serves.
MODEST_RATE = 200.0
WARMUP_SECONDS = 3.0
SAMPLES_PER_SECOND = 200
TRACING_REFUSED = (
    "py-spy may not trace the server here (ptrace refused: a container without the SYS_PTRACE "
    "capability, or kernel.yama.ptrace_scope above 1): run `make profile` where the server is your "
    "own child process, e.g. on your machine or in a container started with --cap-add SYS_PTRACE."
)


@dataclass(frozen=True)
class Options:
    scenarios: list[str] | None
    rate: float | None
    seconds: float
    results: Path
    header: list[str] | None


def serving_rates(results_folder: Path) -> tuple[dict[str, float], str | None]:
    """The serving rate of each scenario in the latest load-test results, and that file's name."""
    found = sorted(results_folder.glob("*.json"))
    for path in reversed(found):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            results = json.loads(path.read_text())
            rates: dict[str, float] = {}
            for name, scenario in results["scenarios"].items():
                rate = scenario.get("serving_rps")
                if rate is None and scenario.get("search", {}).get("slo_rps"):
                    rate = scenario["search"]["slo_rps"] * scenario["budget"]["serving_fraction"]
                if rate:
                    rates[name] = float(rate)
            return rates, path.name
    return {}, None


def _py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def _recording(py_spy: str, output: Path) -> list[str]:
    return [
        py_spy,
        "record",
        "--format",
        "speedscope",
        "--idle",  # the loop waiting in epoll counts: it is a layer of the report
        "--function",  # one row per function, not per line
        # Sampled without pausing the server: paused 200 times a second, its imports took 33 s
        # instead of 10 on a busy host (py-spy's sample count); a rare torn stack is the price.
        "--nonblocking",
        "--rate",
        str(SAMPLES_PER_SECOND),
        "--output",
        str(output),
        "--",
    ]


def profile_scenario(
    name: str,
    rate: float,
    options: Options,
    budget: Budget,
    database_url: str,
    py_spy: str,
    stamp: str,
) -> Profiled:
    recording = options.results / f"profile-{stamp}-{name}.raw.json"
    headers = given(options.header)
    with contextlib.ExitStack() as stack:
        headers, settings = stack.enter_context(credentials.for_started_service(headers))
        launched = time.monotonic()
        target = stack.enter_context(
            service.started(
                database_url,
                max_concurrency=max(budget.sweep.concurrency),
                pin=service.can_pin(),
                settings=settings,
                wrapper=_recording(py_spy, recording),
            )
        )
        if target.pid is None:
            raise RuntimeError("the server's process was not found under py-spy")
        resource = resource_of(name)
        ids = service.seed_ids(
            database_url, target.url, budget.sweep.seed_rows, headers, [resource]
        )
        client_cores = service.cores()
        engine = stack.enter_context(
            Engine(
                target.url,
                ids=ids,
                processes=max(2, len(client_cores)),
                server_pid=target.pid,
                server_core=service.SERVER_CORE if target.pinned.startswith("core") else None,
                headers=headers,
            )
        )
        mix = SCENARIOS[name]
        engine.run(mix, rate=rate, duration=WARMUP_SECONDS)
        # The engine waits START_DELAY_S for its processes before it measures.
        start = time.monotonic() - launched + START_DELAY_S
        step = engine.run(mix, rate=rate, duration=options.seconds)
        # The measured window itself: after it the engine waits for the answers still due.
        end = start + options.seconds
        server_pid = target.pid
    # The server has exited; py-spy wrote its recording as it did.
    if not recording.exists():
        raise RuntimeError(TRACING_REFUSED)
    speedscope = load(recording)
    # The window in the recording's time: py-spy began sampling as it started the server.
    attribution = attribute(speedscope, server_pid, project.PACKAGE, start_s=start, end_s=end)
    svg = options.results / f"profile-{stamp}-{name}.svg"
    svg.write_text(flamegraph.render(attribution.stacks, f"{name} at {rate:,.0f} requests/s"))
    kept = options.results / f"profile-{stamp}-{name}.speedscope.json"
    kept.write_text(json.dumps(trimmed(speedscope, server_pid, start, end)))
    recording.unlink()
    return Profiled(
        scenario=name,
        rate=rate,
        rps=step.rps,
        p99_ms=step.p99_ms,
        server_cpu=step.server_cpu,
        client_cpu=step.client_cpu,
        attribution=attribution,
        flamegraph=svg.name,
        speedscope=kept.name,
    )


def ptrace_refused(py_spy: str) -> bool:
    """Whether py-spy cannot sample a child of its own here (tried on a one-line Python)."""
    probe = subprocess.run(
        [
            *_recording(py_spy, Path(os.devnull)),
            sys.executable,
            "-c",
            "import time; time.sleep(0.3)",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.returncode != 0 and "ermission" in (probe.stderr + probe.stdout)


def main(options: Options, budget: Budget) -> int:
    database_url = os.environ.get("DATABASE_URL")
    if not database_url:
        say("DATABASE_URL is not set: run `make profile` (it starts a throwaway PostgreSQL)")
        return 2
    py_spy = _py_spy()
    if py_spy is None:
        say("py-spy is not installed: `make install` installs it (the loadtest extra)")
        return 2
    if ptrace_refused(py_spy):
        say(TRACING_REFUSED)
        return 2
    names = to_run(options.scenarios, budget)
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown or not names:
        say(f"unknown scenario(s) {unknown}: choose from {list(SCENARIOS)}")
        return 2
    rates, source = serving_rates(options.results)
    options.results.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    sections = []
    for name in names:
        rate = options.rate or rates.get(name)
        origin = (
            "RATE"
            if options.rate
            else f"its serving rate in {source}"
            if name in rates
            else f"no load-test result names it: a modest {MODEST_RATE:,.0f}/s (RATE= to choose)"
        )
        rate = rate or MODEST_RATE
        say(f"{name}: {rate:,.0f} requests/s for {options.seconds:g} s ({origin}), py-spy sampling")
        try:
            profiled = profile_scenario(name, rate, options, budget, database_url, py_spy, stamp)
        except HeadersError as error:
            say(str(error))
            return 2
        top = profiled.attribution.functions[0] if profiled.attribution.functions else None
        say(
            f"  largest layer: {max(profiled.attribution.layers.items(), key=lambda item: item[1])[0]}; "
            f"top function: {top[0] if top else '-'}"
        )
        sections.append(profiled)
    path = options.results / f"profile-{stamp}.md"
    path.write_text(document(sections, "make profile"))
    say(f"\nprofile: {path}")
    return 0
