"""One side of the regression gate (loadtest/gate/compare.py), run as its own process with that side's
src/ first on the path: it seeds that side's database from that side's declarations and prints,
as one JSON object, the wrk script of each scenario of that side's scenario table. So each side
is sent the requests its own load test would send, built by the head's client code."""

import argparse
import json

from ..drive import service, wrk
from ..plan import SCENARIOS, resource_of, resources_in


def scripts(database_url: str, rows: int, chosen: list[str] | None) -> dict[str, str]:
    """The wrk script of every scenario (or of those `chosen` this side has), over seeded ids."""
    names = [name for name in SCENARIOS if not chosen or name in chosen]
    ids = service.seed(database_url, rows, resources_in(names))
    return {
        name: wrk.script(
            SCENARIOS[name], low=min(ids[resource_of(name)]), high=max(ids[resource_of(name)])
        )
        for name in names
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--scenarios", type=lambda text: text.split(","))
    args = parser.parse_args()
    print(json.dumps(scripts(args.database_url, args.rows, args.scenarios)))


if __name__ == "__main__":
    main()
