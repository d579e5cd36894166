"""`python -m loadtest.profile [--scenarios ...] [--rate N] [--seconds S]` (what `make profile` runs)."""

import argparse
import sys
from pathlib import Path

from .. import project
from ..plan import ENVIRONMENT, load
from .run import Options, main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtest.profile", description=__doc__)
    parser.add_argument("--budget", type=Path, default=project.BUDGET, help="budget file (TOML)")
    parser.add_argument("--results", type=Path, default=project.RESULTS, help="results folder")
    parser.add_argument(
        "--scenarios",
        type=lambda value: [name for name in value.split(",") if name],
        help="comma-separated scenarios (default: every one the budget judges)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        help="requests/s of every scenario (default: its serving rate in the latest results)",
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds sampled a scenario")
    parser.add_argument(
        "--header",
        action="append",
        metavar="'NAME: VALUE'",
        help=f"sent on every request, repeatable, after those of {ENVIRONMENT}",
    )
    return parser


if __name__ == "__main__":
    args = _parser().parse_args()
    options = Options(args.scenarios, args.rate, args.seconds, args.results, args.header)
    sys.exit(main(options, load(args.budget)))
