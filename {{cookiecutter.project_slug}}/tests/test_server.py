"""The production entry point, served over real TCP."""

import os
import subprocess
import sys

import httpx


def test_served_process_creates_and_reads_over_tcp(served_url: str, auth_headers: dict[str, str]) -> None:
    with httpx.Client(base_url=served_url, headers=auth_headers) as http:
        created = http.post("/{{ cookiecutter.resource_plural }}", json={"name": "over tcp", "price_cents": 5})
        assert created.status_code == 201
        fetched = http.get(created.headers["location"])
    assert fetched.status_code == 200
    assert fetched.json() == created.json()
    assert "server" not in fetched.headers


def test_head_answers_the_headers_of_get_without_the_body(served_url: str, auth_headers: dict[str, str]) -> None:
    with httpx.Client(base_url=served_url, headers=auth_headers) as http:
        location = http.post("/{{ cookiecutter.resource_plural }}", json={"name": "head", "price_cents": 5}).headers["location"]
        got, head = http.get(location), http.head(location)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["etag"] == got.headers["etag"]
    assert head.headers["content-length"] == str(len(got.content))


def _start_with(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-m", "{{ cookiecutter.package_name }}"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_invalid_port_stops_the_process_with_one_line_naming_it() -> None:
    result = _start_with({"DATABASE_URL": "postgresql://u@127.0.0.1/db", "PORT": "eighty"})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "PORT" in lines[0]


def test_missing_database_url_outside_dev_stops_the_process() -> None:
    result = _start_with({"APP_ENV": "prod"})
    assert result.returncode == 2
    assert "DATABASE_URL" in result.stderr


def test_pool_min_above_max_stops_the_process() -> None:
    result = _start_with(
        {"DATABASE_URL": "postgresql://u@127.0.0.1/db", "POOL_MIN_SIZE": "9", "POOL_MAX_SIZE": "3"}
    )
    assert result.returncode == 2
    assert "POOL_MIN_SIZE" in result.stderr


def test_a_forwarded_allow_ips_entry_that_is_no_address_stops_the_process() -> None:
    result = _start_with({"DATABASE_URL": "postgresql://u@127.0.0.1/db", "FORWARDED_ALLOW_IPS": "10.0.0.0/8, proxy.example"})
    assert result.returncode == 2
    assert "FORWARDED_ALLOW_IPS" in result.stderr


def test_metrics_on_the_traffic_port_stops_the_process() -> None:
    result = _start_with({"DATABASE_URL": "postgresql://u@127.0.0.1/db", "PORT": "8000", "METRICS_PORT": "8000"})
    assert result.returncode == 2
    assert "METRICS_PORT" in result.stderr
