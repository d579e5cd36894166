"""Secrets from files: each setting may come from a file named after its variable in SECRETS_DIR
(a Kubernetes Secret mounted as a volume); the environment wins over a file."""

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from devdb import free_port
from pydantic import ValidationError

from {{ cookiecutter.package_name }}.settings import Settings


@pytest.fixture
def secrets_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("DATABASE_URL", "SECRETS_DIR", "APP_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SECRETS_DIR", str(tmp_path))
    return tmp_path


def test_the_database_url_comes_from_a_file_with_its_trailing_newline_dropped(
    secrets_dir: Path,
) -> None:
    (secrets_dir / "DATABASE_URL").write_text("postgresql://app:from-file@db:5432/app\n")
    assert Settings(app_env="dev").dsn == "postgresql://app:from-file@db:5432/app"


def test_the_environment_wins_over_a_file(
    secrets_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (secrets_dir / "DATABASE_URL").write_text("postgresql://app:from-file@db:5432/app")
    monkeypatch.setenv("DATABASE_URL", "postgresql://app:from-env@db:5432/app")
    assert Settings(app_env="dev").dsn == "postgresql://app:from-env@db:5432/app"
{%- if cookiecutter.auth == "api_key" %}


def test_the_api_key_digests_come_from_a_file(secrets_dir: Path) -> None:
    (secrets_dir / "API_KEY_HASHES").write_text(f"{'a' * 64},{'b' * 64}\n")
    assert Settings(app_env="dev").api_key_hashes == ["a" * 64, "b" * 64]
{%- elif cookiecutter.auth == "jwt" %}


def test_the_jwt_settings_come_from_files(secrets_dir: Path) -> None:
    (secrets_dir / "JWT_ISSUER").write_text("https://issuer.example\n")
    (secrets_dir / "JWT_AUDIENCE").write_text("inventory\n")
    settings = Settings(app_env="dev")
    assert (settings.jwt_issuer, settings.jwt_audience) == ("https://issuer.example", "inventory")
{%- endif %}


def test_a_secrets_folder_named_but_missing_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SECRETS_DIR", str(tmp_path / "missing"))
    with pytest.raises(ValidationError, match="secrets_dir"):
        Settings(app_env="dev")


def test_the_served_process_reads_its_database_url_from_a_file(
    database_url: str, auth_env: dict[str, str], auth_headers: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "DATABASE_URL").write_text(database_url + "\n")
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env |= {**auth_env, "SECRETS_DIR": str(tmp_path), "PORT": str(port), "ACCESS_LOG": "off"}
    process = subprocess.Popen(
        [sys.executable, "-m", "{{ cookiecutter.package_name }}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers=auth_headers, timeout=5
        ) as http:
            for _ in range(600):  # up to 30 s for start-up, polled: no event to wait on
                try:
                    ready = http.get("/readyz")
                    break
                except httpx.TransportError:
                    assert process.poll() is None, process.communicate()[1].decode()[-2000:]
                    time.sleep(0.05)
            assert ready.status_code == 200
            assert http.get("/{{ cookiecutter.resource_plural }}").status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=30)
