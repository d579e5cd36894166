"""`python -m loadtest.profile` (what `make profile` runs) on a bake whose read path was given a
deliberately costly function: py-spy's samples name that function first and the resources' own
code as the largest layer, the shares sum to 100 %, and the flame graph names the function."""

import re
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.profile_example import COSTLY, add_costly_function

from .baking import bake, run
from .serving import migrated_database

pytestmark = [pytest.mark.slow, pytest.mark.serial]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A default bake whose get_item spends some 10 ms in a function of its own: at 150 requests/s
    the server is busy all the time, whatever the host's speed."""
    project = bake(tmp_path_factory.mktemp("profile"))
    add_costly_function(project, 300_000)
    return project


@pytest.fixture(scope="module")
def database_url(project: Path, postgres_url: str) -> Iterator[str]:
    with migrated_database(project, postgres_url, f"profile_{secrets.token_hex(4)}") as url:
        yield url


@pytest.fixture(scope="module")
def report(project: Path, database_url: str) -> str:
    result = run(
        project, sys.executable, "-m", "loadtest.profile", "--scenarios", "items.by_id",
        "--rate", "150", "--seconds", "5",
        timeout=300, DATABASE_URL=database_url,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (path,) = (project / "loadtest" / "results").glob("profile-*.md")
    return path.read_text()


def _table(report: str, header: str) -> list[list[str]]:
    lines = report.splitlines()
    start = lines.index(header) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_costly_function_comes_first_by_own_time(report: str) -> None:
    functions = _table(report, "| function (own time) | layer | share |")
    assert COSTLY in functions[0][0], functions[:3]
    assert functions[0][1] == "the resources' own code"


def test_the_resources_own_code_is_the_largest_layer_and_the_shares_sum_to_100(
    report: str,
) -> None:
    layers = {row[0]: float(row[1].removesuffix(" %")) for row in _table(
        report, "| layer | share of samples (own time) |"
    )}  # fmt: skip
    assert max(layers, key=lambda layer: layers[layer]) == "the resources' own code", layers
    assert sum(layers.values()) == pytest.approx(100, abs=0.6)


def test_the_scenarios_flame_graph_names_the_function(project: Path, report: str) -> None:
    (svg,) = (project / "loadtest" / "results").glob("profile-*-items.by_id.svg")
    assert COSTLY in svg.read_text()
    assert re.search(r"client CPU [\d.]+ %", report)
    assert list((project / "loadtest" / "results").glob("profile-*-items.by_id.speedscope.json"))
