"""settings.py: secrets from files: each setting may come from a file named after its variable in SECRETS_DIR
(a Kubernetes Secret mounted as a volume); the environment wins over a file."""

from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from {{ cookiecutter.package_name }}.settings import Settings

from .conftest import BASE, serve


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


def test_the_api_key_scopes_come_from_the_file_with_their_digests(secrets_dir: Path) -> None:
    (secrets_dir / "API_KEY_HASHES").write_text(f"{'a' * 64}:read,{'b' * 64}:read,write\n")
    assert Settings(app_env="dev").api_keys == {"a" * 64: {"read"}, "b" * 64: {"read", "write"}}
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
    env = {**auth_env, "SECRETS_DIR": str(tmp_path), "ACCESS_LOG": "off"}
    with (
        serve(tmp_path / "server.log", **env) as base,
        httpx.Client(base_url=base, headers=auth_headers, timeout=5) as http,
    ):
        assert http.get("/readyz").status_code == 200
        assert http.get(BASE).status_code == 200


def test_origins_come_as_a_comma_separated_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    origins = ["https://shop.example", "https://admin.example"]
    monkeypatch.setenv("CORS_ALLOW_ORIGINS", ", ".join(origins))
    assert Settings(app_env="dev").cors_allow_origins == origins
