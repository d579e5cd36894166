"""Where the settings come from: arguments, then the environment, then a file per setting in
SECRETS_DIR; and the one line a process prints when some of them are bad."""

import os
from pathlib import Path

from pydantic import ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SecretsSettingsSource

# A file per setting, named after its variable (DATABASE_URL, ...): a Kubernetes Secret mounted as
# a volume. The environment wins over a file; a missing folder is no error.
SECRETS_DIR = "/run/secrets"


class EnvironmentThenSecretFiles(BaseSettings):
    """A base with no fields of its own: the order in which a Settings class reads its sources."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        folder = Path(os.environ.get("SECRETS_DIR", SECRETS_DIR))
        files = (
            (SecretsSettingsSource(settings_cls, secrets_dir=folder),) if folder.is_dir() else ()
        )
        return init_settings, env_settings, *files


def describe_error(error: ValidationError) -> str:
    """One line naming each bad variable, for a process that must refuse to start."""
    parts = []
    for item in error.errors():
        variable = "_".join(str(part) for part in item["loc"]).upper() or "SETTINGS"
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{variable}: {message}" if item["loc"] else message)
    return "invalid configuration: " + "; ".join(parts)
