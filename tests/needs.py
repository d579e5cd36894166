"""`@pytest.mark.needs("wrk")`: a test that drives a native tool (tests/native_tools.py) says so.

Where the tool is not on PATH the test skips with one line naming it and the command that
installs it, and the run ends with one line listing what was skipped for want of which tool. So a
fresh machine with only Python, make and PyPI runs the rest of the suite green.

A declaration nobody checks drifts, so every run checks it: each tool found on PATH is put behind
a wrapper (first on PATH) that notes its name in a log before it execs the real one, and a test
during which a tool it did not declare ran, in its fixtures or in any process it started, fails
at its teardown naming the tool. A module- or session-scoped fixture that runs a tool is charged
to the first test that requests it; such a fixture belongs to tests that all declare the tool.
"""

import os
import shlex
import shutil
import tempfile
from collections import Counter
from collections.abc import Generator
from pathlib import Path

import pytest

from . import native_tools

MARKER = "needs(*tools): the test drives these native tools (tests/native_tools.py); skips without"


def declared(item: pytest.Item) -> set[str]:
    return {name for marker in item.iter_markers("needs") for name in marker.args}


class NeedsPlugin:
    def __init__(self) -> None:
        self._absent: dict[str, list[str]] = {}  # node id -> the declared tools not on PATH
        self._skipped: dict[str, list[str]] = {}
        self._folder = Path(tempfile.mkdtemp(prefix="native-tools-"))
        self._log = self._folder / "ran.log"
        self._offset = 0
        self._path = os.environ.get("PATH", os.defpath)

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", MARKER)
        self._wrap_tools_on_path()

    def pytest_unconfigure(self) -> None:
        os.environ["PATH"] = self._path
        shutil.rmtree(self._folder, ignore_errors=True)

    def _wrap_tools_on_path(self) -> None:
        """A wrapper per executable of each tool found, readable and writable by the other users
        a test runs a tool as (PgBouncer refuses root)."""
        wrappers = self._folder / "bin"
        wrappers.mkdir()
        self._log.touch()
        for folder, mode in ((self._folder, 0o755), (wrappers, 0o755), (self._log, 0o666)):
            folder.chmod(mode)
        for tool in native_tools.TOOLS.values():
            if not native_tools.is_available(tool.name, self._path):
                continue
            for command in tool.commands:
                real = shutil.which(command, path=self._path)
                wrapper = wrappers / command
                wrapper.write_text(
                    "#!/bin/sh\n"
                    f"echo {tool.name} >> {shlex.quote(str(self._log))}\n"
                    f'exec {shlex.quote(str(real))} "$@"\n'
                )
                wrapper.chmod(0o755)
        os.environ["PATH"] = f"{wrappers}{os.pathsep}{self._path}"

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            names = declared(item)
            unknown = names - native_tools.TOOLS.keys()
            if unknown:
                raise pytest.UsageError(
                    f"{item.nodeid}: needs{tuple(sorted(unknown))} names no tool of "
                    f"tests/native_tools.py ({', '.join(native_tools.TOOLS)})"
                )
            absent = sorted(name for name in names if not native_tools.is_available(name))
            if absent:
                command = native_tools.install_command(native_tools.TOOLS[n] for n in absent)
                self._absent[item.nodeid] = absent
                reason = f"needs {', '.join(absent)} on PATH (as root: {command}; make test does)"
                item.add_marker(pytest.mark.skip(reason=reason))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._offset = self._log.stat().st_size

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "teardown":
            with self._log.open("rb") as log:
                log.seek(self._offset)
                ran = set(log.read().decode().split())
            undeclared = sorted(ran - declared(item))
            if undeclared and not report.failed:
                tools = ", ".join(repr(name) for name in undeclared)
                report.outcome = "failed"
                report.longrepr = (
                    f"{item.nodeid} ran {tools} without declaring it: mark it "
                    f"@pytest.mark.needs({tools}), so that a machine without it skips the test"
                )
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and report.nodeid in self._absent:
            self._skipped[report.nodeid] = self._absent[report.nodeid]

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(
        self, terminalreporter: pytest.TerminalReporter
    ) -> Generator[None, None, None]:
        """The last line before the counts: after the short summary, which ends its wrapper."""
        yield
        if not self._skipped:
            return
        counts = Counter(name for names in self._skipped.values() for name in names)
        listed = ", ".join(
            f"{name} ({count} test{'s' if count > 1 else ''})"
            for name, count in sorted(counts.items())
        )
        command = native_tools.install_command(native_tools.TOOLS[name] for name in counts)
        terminalreporter.write_line(
            f"skipped for want of native tools: {listed}; as root: {command} (make test does)"
        )
