"""A bake's typed clients and its gate on breaking API changes (issue 34).

One bake, made once for the module (the slow parts, npm install and the generators, run once):
`make client` on the bake as it comes and again after `make resource`; `make client-check` walks
both resources through the served service with the Python client (mypy --strict on the walks)
and type-checks the TypeScript walks; the generated CI's api-diff job, its steps run here as CI
runs them, on a pull request's history: an added optional field passes, a renamed one fails.
"""

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml

from .baking import GIT, VENV_BIN, bake, git, tool_env

# A resource with a filter and a sort order: its walk lists filtered and sorted, by cursor.
ORDER = (
    "NAME=order",
    "FIELDS=sku:str(32):unique:filter status:enum(open|paid|shipped)=open:filter"
    " total:money:sort note:text?",
)
NO_NODE = "node not found: the TypeScript SDK is neither generated nor type-checked here"


def _make(project: Path, *args: str, venv: Path = VENV_BIN.parent, **env: str) -> str:
    done = subprocess.run(
        ["make", *args, f"VENV={venv}"],
        cwd=project,
        env=tool_env(project, **env),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"make {args}:\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
    return done.stdout


def _venv_over_the_template(folder: Path) -> Path:
    """A venv that sees the template venv's packages (a .pth file), so that `make client-check`
    installs the generated client into it and not into the template's own venv."""
    subprocess.run(
        [str(VENV_BIN / "uv"), "venv", "-q", "--python", sys.executable, str(folder)], check=True
    )
    (site,) = (folder / "lib").glob("python*/site-packages")
    (site / "template.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # auth=jwt: the document declares the bearer scheme, so the client's calls take an
    # authenticated client, which the walks build from their credentials (an auth=none bake's
    # walks use the plain client, without any).
    project = bake(tmp_path_factory.mktemp("clients"), auth="jwt")
    git(project, "init", "-q", "-b", "main")
    return project


def test_a_bake_and_a_resource_added_generate_both_clients_which_walk_the_service(
    project: Path, postgres_url: str, tmp_path: Path
) -> None:
    node = shutil.which("node") is not None and shutil.which("npm") is not None
    _make(project, "client")
    python_client = project / "clients" / "python" / "inventory_service_client"
    sdk = project / "clients" / "typescript" / "sdk.gen.ts"
    assert (python_client / "api" / "items" / "create_item.py").is_file()
    assert (project / "clients" / "python" / "pyproject.toml").is_file()
    if node:
        assert "export const createItem" in sdk.read_text()

    _make(project, "resource", *ORDER)
    _make(project, "client")
    assert (python_client / "api" / "orders" / "list_orders.py").is_file()
    if node:
        assert "export const listOrders" in sdk.read_text()

    venv = _venv_over_the_template(tmp_path / "venv")
    output = _make(project, "client-check", venv=venv, DATABASE_URL=postgres_url)
    # Both walks ran (none skipped for want of the client), and mypy --strict held them to it.
    assert "2 passed" in output, output[-3000:]
    assert "skipped" not in output, output[-3000:]
    assert "Success: no issues found" in output, output[-3000:]
    if not node:
        pytest.skip(NO_NODE)
    assert "not type-checked" not in output


def _workflow(project: Path) -> dict[str, Any]:
    workflow: dict[str, Any] = yaml.safe_load(
        (project / ".github" / "workflows" / "ci.yml").read_text()
    )
    return workflow


def test_ci_builds_both_clients_on_every_change_and_keeps_them_as_artifacts(
    project: Path,
) -> None:
    job = _workflow(project)["jobs"]["clients"]
    assert "if" not in job
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert runs == ["make install UV_SYNC_FLAGS=--locked", "make client", "make client-check"]
    (upload,) = [step for step in job["steps"] if "upload-artifact" in step.get("uses", "")]
    assert upload["with"]["path"].split() == ["clients/python/", "clients/typescript/"]
    assert job["services"]["postgres"]["image"].startswith("postgres:")


def _api_diff_job(project: Path, base: str) -> subprocess.CompletedProcess[str]:
    """The generated CI's api-diff job, its `run` steps in order, as on a pull request to `base`."""
    job = _workflow(project)["jobs"]["api-diff"]
    assert job["if"] == "github.event_name == 'pull_request'"
    runs = [step["run"] for step in job["steps"] if "run" in step]
    script = "set -e\n" + "\n".join(run.replace("${{ github.base_ref }}", base) for run in runs)
    return subprocess.run(
        ["bash", "-c", script],
        cwd=project,
        env=tool_env(project, VENV=str(VENV_BIN.parent)),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _commit_with_document(pull_request: Path, message: str) -> None:
    _make(pull_request, "openapi")
    git(pull_request, "commit", "-qam", message)


def test_the_api_diff_job_passes_an_added_optional_field_and_fails_naming_a_renamed_one(
    project: Path, tmp_path: Path
) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node not found: the api-diff job's differ (npm) cannot run here")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "the service")
    pull_request = tmp_path / "pull-request"
    subprocess.run([*GIT, "clone", "-q", str(project), str(pull_request)], check=True)
    git(pull_request, "checkout", "-q", "-b", "change")
    schemas = pull_request / "src" / "inventory_service" / "items" / "schemas.py"
    declared = "    quantity: Annotated[int, Int(ge=0)] = 0\n"
    assert declared in schemas.read_text()

    schemas.write_text(
        schemas.read_text().replace(
            declared, declared + "    colour: Annotated[str | None, Str(max_length=20)] = None\n"
        )
    )
    _commit_with_document(pull_request, "items: an optional colour")
    added = _api_diff_job(pull_request, "main")
    assert added.returncode == 0, added.stdout + added.stderr
    assert "No breaking change" in added.stdout
    assert "colour" in added.stdout

    schemas.write_text(schemas.read_text().replace("    name: Annotated[", "    title: Annotated["))
    _commit_with_document(pull_request, "items: name renamed title")
    renamed = _api_diff_job(pull_request, "main")
    assert renamed.returncode != 0
    breaking = [line for line in renamed.stdout.splitlines() if line.startswith("BREAKING")]
    # Each change named: the field the answers lose, the field the requests must now send.
    assert any("POST /items" in line and "`name`" in line for line in breaking), renamed.stdout
    assert any("GET /items/{item_id}" in line and "name" in line for line in breaking)
    assert any("POST /items" in line and "`title`" in line for line in breaking)
