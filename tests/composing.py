"""A bake's compose.yaml read as `docker compose` reads it, where no Docker is: validated against
the Compose Specification's schema (check-jsonschema's copy), its `${...}` interpolated from a
user's shell, and each service's environment as the container gets it (the image's ENV under the
service's own), so that its command can be run outside a container on a real PostgreSQL."""

import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import yaml

from .baking import VENV_BIN

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}; $$ is a dollar sign.
_VARIABLE = re.compile(r"\$\$|\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


class ComposeError(ValueError):
    """What `docker compose` stops with: a required variable unset, with its message."""


def validate(project: Path) -> subprocess.CompletedProcess[str]:
    """compose.yaml against the Compose Specification's JSON schema."""
    return subprocess.run(
        [str(VENV_BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec",
         str(project / "compose.yaml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def _interpolate(text: str, shell: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        if match[0] == "$$":
            return "$"
        name, op, arg = match["name"], match["op"], match["arg"]
        found = shell.get(name)
        unset = found is None or (found == "" and op is not None and op.startswith(":"))
        if op in (":?", "?") and unset:
            raise ComposeError(f"required variable {name} is missing a value: {arg}")
        if op in (":-", "-") and unset:
            return arg
        return found or ""

    return _VARIABLE.sub(value, text)


def services(project: Path, shell: dict[str, str]) -> dict[str, Any]:
    """Every service of compose.yaml, interpolated from `shell` (merge keys resolved by YAML)."""
    text = _interpolate((project / "compose.yaml").read_text(), shell)
    loaded: dict[str, Any] = yaml.safe_load(text)
    found: dict[str, Any] = loaded["services"]
    return found


def image(project: Path) -> tuple[dict[str, str], list[str]]:
    """The ENV (PATH left out) and CMD of the Dockerfile's last stage, the image that ships."""
    text = (project / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]
    last = max(index for index, line in enumerate(lines) if line.upper().startswith("FROM "))
    env: dict[str, str] = {}
    command: list[str] = []
    for line in lines[last:]:
        instruction, _, rest = line.partition(" ")
        if instruction == "ENV":
            env |= dict(pair.partition("=")[::2] for pair in shlex.split(rest))
        elif instruction == "CMD":
            command = json.loads(rest)
    env.pop("PATH", None)
    return env, command


def environment(service: dict[str, Any], shell: dict[str, str]) -> dict[str, str]:
    """A service's environment in its container: a name without a value takes the shell's."""
    declared: dict[str, Any] = service.get("environment") or {}
    return {
        name: str(shell[name] if value is None else value)
        for name, value in declared.items()
        if value is not None or name in shell
    }
