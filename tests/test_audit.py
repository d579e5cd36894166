"""pip-audit on the exact versions a baked project locks (uv.lock): no known vulnerability.

pip-audit asks PyPI's vulnerability data about every locked release; a release PyPI cannot audit
is asked again of OSV, the other service pip-audit offers (its own advice when one cannot answer).
The audit skips, with pip-audit's message, only when pip-audit reports that the service it needs
cannot be reached; every other answer is judged.
"""

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .baking import bake, run
from .figures import Figures

PIP_AUDIT = str(Path(sys.executable).parent / "pip-audit")
# How pip-audit says it could not reach a service: its own ConnectionError ("Could not connect to
# ...'s vulnerability feed", "... is not redirecting properly"), or the requests error it lets
# through when the service's name does not resolve.
_UNREACHABLE = re.compile(
    r"Could not connect|not redirecting properly|ConnectionError|ConnectTimeout"
)


def unreachable(audit: subprocess.CompletedProcess[str]) -> str | None:
    """pip-audit's message when it stopped because its vulnerability service could not be reached;
    None when it gave a report (vulnerabilities found or not, after retries or not) or failed for
    another reason."""
    if audit.stdout.strip():
        return None
    lines = [line.strip() for line in audit.stderr.splitlines()]
    return next((line for line in reversed(lines) if _UNREACHABLE.search(line)), None)


def _audit(
    project: Path, requirements: Path, service: str, figures: Figures, why: str = ""
) -> list[Any]:
    """pip-audit's answer for each pinned requirement, asking `service`; a skip, with `why`
    before pip-audit's message, when pip-audit cannot reach it."""
    audit = run(
        project, PIP_AUDIT, "--requirement", str(requirements), "--vulnerability-service", service,
        "--disable-pip", "--no-deps", "--format", "json", "--progress-spinner", "off",
        timeout=300,
    )  # fmt: skip
    message = unreachable(audit)
    if message is not None:
        skipped = f"pip-audit could not reach its {service} vulnerability service"
        figures.record("pip_audit", skipped=skipped)  # its message stays in the skip reason
        pytest.skip(f"{why}{skipped}: {message}")
    dependencies: list[Any] = json.loads(audit.stdout or "{}").get("dependencies", [])
    assert dependencies, audit.stderr[-3000:]
    return dependencies


def _pins(requirements: Path, names: set[str]) -> str:
    """The lines of an exported requirements file that pin one of `names` (pip-audit names each
    dependency as the file spells it)."""
    return "".join(
        f"{line}\n"
        for line in requirements.read_text().splitlines()
        if line.split("==", 1)[0].strip() in names
    )


@pytest.mark.slow
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
    figures = Figures(tmp_path_factory.getbasetemp())
    dependencies = _audit(project, requirements, "pypi", figures)
    left = {d["name"]: d["skip_reason"] for d in dependencies if d.get("skip_reason")}
    if left:
        again = tmp_path / "not-audited-by-pypi.txt"
        again.write_text(_pins(requirements, set(left)))
        first = next(iter(left.values()))
        why = f"PyPI could not audit {len(left)} of {len(dependencies)} ({first}); "
        answers = {d["name"]: d for d in _audit(project, again, "osv", figures, why)}
        dependencies = [answers.get(d["name"], d) for d in dependencies]
    unaudited = [d for d in dependencies if d.get("skip_reason")]
    vulnerable = {
        f"{d['name']}=={d['version']}": [v["id"] for v in d["vulns"]]
        for d in dependencies
        if d.get("vulns")
    }
    figures.record(
        "pip_audit",
        locked=len(dependencies),
        unaudited=len(unaudited),
        vulnerable=sorted(vulnerable),
    )
    assert unaudited == [], "neither PyPI nor OSV could audit these"
    assert vulnerable == {}


def _pip_audit_answer(
    returncode: int, stdout: str, stderr: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess([PIP_AUDIT], returncode, stdout, stderr)


def test_an_audit_whose_service_cannot_be_reached_is_skipped_with_pip_audits_message() -> None:
    refused = _pip_audit_answer(
        1,
        "",
        "ERROR:pip_audit._cli:Could not connect to PyPI's vulnerability feed\n"
        "ERROR:pip_audit._cli:Tip: your network may be blocking this service. "
        "Try another service with `-s SERVICE`\n",
    )
    assert unreachable(refused) == (
        "ERROR:pip_audit._cli:Could not connect to PyPI's vulnerability feed"
    )
    unresolved = _pip_audit_answer(
        1,
        "",
        "Traceback (most recent call last):\n  ...\nrequests.exceptions.ConnectionError: "
        "HTTPSConnectionPool(...): Max retries exceeded (Caused by NameResolutionError(...))\n",
    )
    assert unreachable(unresolved) is not None
    assert "NameResolutionError" in (unreachable(unresolved) or "")


def test_an_audit_that_answered_or_failed_otherwise_is_judged_not_skipped() -> None:
    report = json.dumps({"dependencies": [{"name": "a", "version": "1", "vulns": [{"id": "X"}]}]})
    retried = (
        "WARNING:urllib3.connectionpool:Retrying (Retry(total=2)) after connection broken by "
        "'ConnectTimeoutError(...)': /pypi/a/1/json\nFound 1 known vulnerability in 1 package\n"
    )
    assert unreachable(_pip_audit_answer(1, report, retried)) is None
    assert unreachable(_pip_audit_answer(0, report, "")) is None
    assert unreachable(_pip_audit_answer(1, "", "ERROR: invalid requirement: 'a=1'")) is None
