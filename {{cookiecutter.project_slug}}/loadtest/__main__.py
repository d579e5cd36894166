"""`python -m loadtest [run|capacity|k6|probe] ...`: the knee test and its companions.

run       seed, sweep and knee, SLO capacity search, report, budget verdict (exit 1 on a miss)
capacity  pod sizing from the latest results; --write-helm-values writes the Helm override
k6        the k6 script against --url (ids seeded through its API) with thresholds from
          budget.toml (exit non-zero on a miss)
probe     one closed-loop step against any path of --url, printed as JSON
search    the SLO capacity search against any path of --url, printed as JSON
runs      several runs side by side: SLO capacity spread, p99 at the serving rate, host speed
"""

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from . import project, run
from .drive import Engine, Step, k6, service
from .plan import (
    ENVIRONMENT,
    HeadersError,
    Mix,
    fixed,
    given,
    load,
    resources_in,
    send_idempotency_keys,
    to_run,
)
from .report import runs
from .search import Limits, Plan, capacity_from, describe_capacity, search, write_helm_values


def _header_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--header",
        action="append",
        metavar="'NAME: VALUE'",
        help=f"sent on every request, repeatable, after those of {ENVIRONMENT} (one per line); "
        f"a secret belongs in {ENVIRONMENT}, which `ps` does not show",
    )


def _keys_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--idempotency-keys",
        action="store_true",
        help="send a fresh Idempotency-Key with every create (the keyed path's price)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=Path, default=project.BUDGET, help="budget file (TOML)")
    parser.add_argument("--results", type=Path, default=project.RESULTS, help="results folder")
    parser.add_argument(
        "--helm-values",
        type=Path,
        default=project.HELM_VALUES,
        help="Helm values override to write",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    knee = commands.add_parser("run", help="the knee test")
    knee.add_argument("--url", help="test a running service instead of starting one")
    knee.add_argument(
        "--scenarios",
        type=lambda text: text.split(","),
        help="comma-separated `<plural>.<operation>` (e.g. items.mixed), default all",
    )
    knee.add_argument("--concurrency", help="comma-separated sweep steps, e.g. 4,16,64")
    knee.add_argument("--step-seconds", type=float)
    knee.add_argument("--warmup-seconds", type=float)
    knee.add_argument("--search-seconds", type=float, help="each trial of the rate search")
    knee.add_argument("--repeats", type=int, help="repeats of the rate search's final step")
    knee.add_argument("--seed-rows", type=int)
    knee.add_argument(
        "--processes", type=int, help="client processes (default: one per client core, at least 2)"
    )
    knee.add_argument("--no-pin", action="store_true", help="do not pin the server to core 0")
    knee.add_argument("--no-wrk", action="store_true", help="skip the cross-check with wrk")
    knee.add_argument(
        "--write-helm-values", action="store_true", help="also write the Helm values override"
    )
    _header_option(knee)
    _keys_option(knee)

    capacity = commands.add_parser("capacity", help="pod sizing from the latest results")
    capacity.add_argument(
        "--from", dest="source", type=Path, help="results JSON (default: the latest)"
    )
    capacity.add_argument("--write-helm-values", action="store_true")

    k6_run = commands.add_parser("k6", help="the k6 script with thresholds from the budget")
    k6_run.add_argument("--url", required=True)
    k6_run.add_argument("--scenarios", type=lambda text: text.split(","))
    k6_run.add_argument("--seconds", type=float, default=20.0, help="steady part of each scenario")
    k6_run.add_argument("--rate-scale", type=float, default=1.0, help="multiply every arrival rate")
    _header_option(k6_run)
    _keys_option(k6_run)

    probe = commands.add_parser("probe", help="one closed-loop step against a path")
    probe.add_argument("--url", required=True)
    probe.add_argument("--path", default="/healthz")
    probe.add_argument("--concurrency", type=int, default=64)
    probe.add_argument("--seconds", type=float, default=5.0)
    probe.add_argument("--processes", type=int, default=2)
    _header_option(probe)

    rate = commands.add_parser("search", help="the SLO capacity search against a path")
    rate.add_argument("--url", required=True)
    rate.add_argument("--path", default="/healthz")
    rate.add_argument("--start-rps", type=float, required=True)
    rate.add_argument("--max-p99-ms", type=float, default=50.0)
    rate.add_argument("--max-error-rate", type=float, default=0.0)
    rate.add_argument("--seconds", type=float, default=5.0, help="each trial")
    rate.add_argument("--connections", type=int, default=32)
    rate.add_argument("--repeats", type=int, default=3)
    rate.add_argument("--processes", type=int, default=2)
    _header_option(rate)

    side_by_side = commands.add_parser("runs", help="several runs side by side")
    side_by_side.add_argument(
        "files", nargs="*", type=Path, help="results JSON (default: the latest --count)"
    )
    side_by_side.add_argument("--count", type=int, default=3)
    return parser


def _results_files(folder: Path) -> list[Path]:
    """The knee test's results JSON files of the folder, oldest first (k6's are apart)."""
    return [path for path in sorted(folder.glob("*.json")) if not path.name.startswith("k6-")]


def _runs(args: argparse.Namespace) -> int:
    paths = args.files or _results_files(Path(args.results))[-args.count :]
    if not paths:
        print(f"no results in {args.results}: run `make loadtest` first", file=sys.stderr)
        return 2
    print(runs.describe(paths))
    return 0


def _capacity(args: argparse.Namespace) -> int:
    budget = load(args.budget)
    candidates = _results_files(Path(args.results))
    source = args.source or (candidates[-1] if candidates else None)
    if source is None:
        print(f"no results in {args.results}: run `make loadtest` first", file=sys.stderr)
        return 2
    sizing = capacity_from(json.loads(Path(source).read_text()), budget)
    if sizing is None:
        print(f"{source} has no usable knee (client-bound or failed runs)", file=sys.stderr)
        return 1
    print(describe_capacity(sizing))
    if args.write_helm_values:
        print(
            f"wrote {write_helm_values(sizing, f'loadtest/results/{Path(source).name}', args.helm_values)}"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "idempotency_keys", False):
        send_idempotency_keys()
    if args.command == "run":
        return run.main(args, run.with_overrides(load(args.budget), args))
    if args.command == "capacity":
        return _capacity(args)
    if args.command == "runs":
        return _runs(args)
    try:
        headers = given(args.header)
        if args.command == "k6":
            return _k6(args, headers)
    except HeadersError as error:
        print(error, file=sys.stderr)
        return 2
    target = service.running(args.url)
    mix = fixed(args.path)
    with Engine(
        target.url, ids={}, processes=args.processes, server_pid=target.pid, headers=headers
    ) as engine:
        if args.command == "search":
            return _search(engine, mix, args)
        step = engine.run(mix, concurrency=args.concurrency, duration=args.seconds)
    print(json.dumps(asdict(step)))
    return 0


def _k6(args: argparse.Namespace, headers: dict[str, str]) -> int:
    budget = load(args.budget)
    names = to_run(args.scenarios, budget)
    settings = k6.config(
        budget,
        url=args.url,
        ids=service.seed_over_http(args.url.rstrip("/"), k6.IDS, headers, resources_in(names)),
        names=names,
        seconds=args.seconds,
        rate_scale=args.rate_scale,
    )
    return k6.run(settings, Path(args.results), headers)


def _search(engine: Engine, mix: Mix, args: argparse.Namespace) -> int:
    def trial(rate: float) -> Step:
        return engine.run(mix, rate=rate, duration=args.seconds, connections=args.connections)

    limits = Limits(args.max_p99_ms, args.max_error_rate)
    found = search(trial, args.start_rps, limits, Plan(repeats=args.repeats))
    print(json.dumps({
        "slo_rps": found.slo_rps, "spread": found.spread(),
        "trials": [asdict(step) for step in found.trials], "repeats": [asdict(step) for step in found.repeats],
    }))  # fmt: skip
    return 0 if found.slo_rps is not None else 1


if __name__ == "__main__":
    sys.exit(main())
