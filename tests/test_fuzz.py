"""Property-based fuzzing of the baked service's OpenAPI schema with schemathesis, over TCP against
the real server process on a real PostgreSQL: no 5xx, and every response as the schema says."""

import os
import re
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .baking import run
from .figures import Figures
from .serving import Served, migrated_database, start_service

pytestmark = pytest.mark.slow

# Fixed by default so that a failure replays; FUZZ_SEED=<n> explores elsewhere.
SEED = os.environ.get("FUZZ_SEED", "20250101")
EXAMPLES = os.environ.get("FUZZ_EXAMPLES", "40")
# Every check, positive_data_acceptance included: a request the document allows must be accepted,
# so the document states exactly what the service takes (ETag patterns, canonical numbers, text
# rules, at least one field in a PATCH). Every phase: examples, coverage, fuzzing, stateful.
CHECKS = ("--checks", "all", "--phases", "examples,coverage,fuzzing,stateful")
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def fuzzed(
    default_project: Path, postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    with migrated_database(default_project, postgres_url, f"fuzz_{secrets.token_hex(4)}") as url:
        served = start_service(
            default_project,
            url,
            tmp_path_factory.mktemp("fuzz") / "service.log",
            LOG_LEVEL="warning",
            DOCS_IN_PROD="true",
        )
        yield served
        served.process.terminate()
        served.process.wait(timeout=30)


def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    fuzzed: Served, default_project: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    command = [
        str(Path(sys.executable).parent / "schemathesis"),
        "--config-file", str(HERE / "schemathesis.toml"),
        "run", f"{fuzzed.url}/openapi.json", *CHECKS,
        "--max-examples", EXAMPLES, "--seed", SEED, "--request-timeout", "10", "--no-shrink",
        "--report", "junit", "--report-dir", str(tmp_path),
    ]  # fmt: skip
    hooks = {
        "SCHEMATHESIS_HOOKS": "tests.fuzz_hooks",
        "PYTHONPATH": f"{default_project / 'src'}{os.pathsep}{HERE.parent}",
    }
    result = run(tmp_path, *command, timeout=240, **hooks)  # schemathesis keeps a cache in its cwd
    output = result.stdout + result.stderr
    generated = re.search(r"(\d+) generated", output)
    Figures(tmp_path_factory.getbasetemp()).record(
        "schema_fuzzing",
        seed=int(SEED),
        max_examples_per_operation=int(EXAMPLES),
        test_cases=int(generated.group(1)) if generated else 0,
        passed=result.returncode == 0,
        server_errors_in_log=fuzzed.output().count("unhandled_error"),
    )
    assert result.returncode == 0, output[-6000:]
    assert generated, output[-2000:]
    assert int(generated.group(1)) > 100, output[-2000:]
    assert fuzzed.process.poll() is None
    assert "unhandled_error" not in fuzzed.output()
