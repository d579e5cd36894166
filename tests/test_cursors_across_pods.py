"""Sorted list pages walked across two server processes of one bake on one database, nothing
configured (the chart's default: two replicas, no CURSOR_SECRET): every page answers, and a cursor
issued before both restart, with the key rotated in between, still reads."""

import sys
from pathlib import Path

import httpx
import pytest

from .baking import bake, run
from .serving import PACKAGE, Served, migrated_database, start_service

pytestmark = [pytest.mark.slow, pytest.mark.serial]

SORTED = "name:str(200):sort price_cents:money quantity:int(>=0)=0"
ROWS = 25
LIMIT = 4


@pytest.fixture(scope="module")
def sorted_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bake(tmp_path_factory.mktemp("sorted"), fields=SORTED)


def _pair(project: Path, url: str, logs: Path, round_: int) -> list[Served]:
    return [start_service(project, url, logs / f"pod-{pod}-{round_}.log") for pod in (0, 1)]


def _stop(pods: list[Served]) -> None:
    for pod in pods:
        pod.process.terminate()
        pod.process.wait(timeout=30)


def test_a_sorted_walk_alternating_between_two_processes_then_both_restarted_answers_every_page(
    sorted_project: Path, postgres_url: str, tmp_path: Path
) -> None:
    with migrated_database(sorted_project, postgres_url, "cursors_across_pods") as url:
        pods = _pair(sorted_project, url, tmp_path, 0)
        try:
            for number in range(ROWS):
                created = httpx.post(
                    f"{pods[0].url}/items",
                    json={"name": f"item-{number:03d}", "price_cents": number},
                    timeout=10,
                )
                assert created.status_code == 201, created.text
            names, cursor, pages, kept = [], None, 0, None
            while True:
                params = {"sort": "name", "limit": str(LIMIT)}
                if cursor is not None:
                    params["cursor"] = cursor
                page = httpx.get(f"{pods[pages % 2].url}/items", params=params, timeout=10)
                assert page.status_code == 200, (pages, page.text)
                body = page.json()
                names += [row["name"] for row in body["data"]]
                pages += 1
                cursor = body["next_cursor"]
                if pages == 2:
                    kept = cursor
                if cursor is None:
                    break
            assert names == sorted(f"item-{number:03d}" for number in range(ROWS))
            assert pages >= 3  # the walk crossed from one process to the other and back
        finally:
            _stop(pods)
        rotated = run(
            sorted_project, sys.executable, "-m", PACKAGE, "rotate-cursor-key", DATABASE_URL=url
        )
        assert rotated.returncode == 0, rotated.stderr
        pods = _pair(sorted_project, url, tmp_path, 1)
        try:
            for pod in pods:
                after = httpx.get(
                    f"{pod.url}/items",
                    params={"sort": "name", "limit": str(LIMIT), "cursor": kept},
                    timeout=10,
                )
                assert after.status_code == 200, after.text
                assert [row["name"] for row in after.json()["data"]] == names[2 * LIMIT : 3 * LIMIT]
        finally:
            _stop(pods)
