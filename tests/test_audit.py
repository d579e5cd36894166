"""pip-audit on the exact versions a baked project locks (uv.lock): no known vulnerability."""

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .baking import bake, run
from .figures import Figures

pytestmark = pytest.mark.slow


def _vulnerability_service_answers(name: str, version: str) -> tuple[bool, str]:
    # pip-audit's default service is PyPI's per-release JSON, which lists known vulnerabilities.
    url = f"https://pypi.org/pypi/{name}/{version}/json"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return "vulnerabilities" in json.load(response), url
    except (urllib.error.URLError, OSError, ValueError) as error:
        return False, f"{url}: {error}"


def test_locked_dependencies_have_no_known_vulnerability(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    project = bake(tmp_path, lock_dependencies="yes")
    assert (project / "uv.lock").is_file(), "uv did not lock the baked project"
    requirements = tmp_path / "requirements.txt"
    exported = run(
        project, "uv", "export", "--frozen", "--no-hashes", "--no-emit-project", "--all-extras",
        "--format", "requirements-txt", "--output-file", str(requirements),
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    audit = run(
        project, str(Path(sys.executable).parent / "pip-audit"), "--requirement", str(requirements),
        "--disable-pip", "--no-deps", "--format", "json", "--progress-spinner", "off",
        timeout=300,
    )  # fmt: skip
    report = json.loads(audit.stdout or "{}")
    dependencies = report.get("dependencies", [])
    assert dependencies, audit.stderr[-3000:]
    unaudited = [d for d in dependencies if d.get("skip_reason")]
    vulnerable = {
        f"{d['name']}=={d['version']}": [v["id"] for v in d["vulns"]]
        for d in dependencies
        if d.get("vulns")
    }
    figures = Figures(tmp_path_factory.getbasetemp())
    figures.record(
        "pip_audit",
        locked=len(dependencies),
        unaudited=len(unaudited),
        vulnerable=sorted(vulnerable),
    )
    if unaudited:
        pins = dict(
            line.split("==", 1) for line in requirements.read_text().splitlines() if "==" in line
        )
        name = unaudited[0]["name"]
        answers, where = _vulnerability_service_answers(name, pins[name].split(";")[0].strip())
        if not answers:
            figures.record(
                "pip_audit", locked=len(dependencies), unaudited=len(unaudited), skipped=where
            )
            pytest.skip(
                f"the vulnerability service is unreachable from this machine ({where}); "
                f"pip-audit could not audit {len(unaudited)} of {len(dependencies)} locked "
                "dependencies"
            )
    assert unaudited == [], f"PyPI answers, yet these were not audited: {unaudited}"
    assert vulnerable == {}
