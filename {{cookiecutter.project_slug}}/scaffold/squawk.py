"""`python -m scaffold lint-migrations`: squawk on the SQL each revision runs.

Each revision's SQL is what `alembic upgrade <down>:<revision> --sql` writes (offline mode:
migrations/env.py's timeouts, the revision's statements, alembic's own bookkeeping), one file per
revision named after it, so squawk sees exactly the statements a deploy runs and names the
revision it found a hazard in. Rules that do not apply to this project are switched off in
.squawk.toml, each with its reason. `--since REV`: only the revisions added since git revision
REV (CI, on a pull request). A merge revision runs no statement of its own and is not linted.

squawk is the `squawk-cli` wheel of the dev extra; a hundred lines of our own rather than the
`alembic-squawk` package, which writes the same files but is young and little used.
"""

import contextlib
import io
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import Script, ScriptDirectory

CONFIG = ".squawk.toml"


def _squawk() -> str:
    beside = Path(sys.executable).parent / "squawk"  # the venv's, whatever PATH says
    found = str(beside) if beside.is_file() else shutil.which("squawk")
    if found is None:
        raise SystemExit("squawk not found: `make install` installs it (squawk-cli, dev extra)")
    return found


def revision_sql(config: Config, script: Script) -> str:
    """The SQL `alembic upgrade <down>:<revision> --sql` writes for `script`."""
    down = script.down_revision
    assert not isinstance(down, tuple | list), "a merge revision runs no statement of its own"
    buffer = io.StringIO()
    config.output_buffer = buffer
    with contextlib.redirect_stdout(buffer):
        command.upgrade(config, f"{down or 'base'}:{script.revision}", sql=True)
    return buffer.getvalue()


def _added_since(root: Path, since: str) -> set[Path]:
    """The files git sees added under migrations/ since `since`."""
    names = subprocess.run(
        ["git", "diff", "--name-only", "--diff-filter=A", since, "--", "migrations"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {(root / name).resolve() for name in names}


def lint(root: Path, since: str | None = None) -> int:
    """squawk's exit status over every revision (or those added since `since`)."""
    config = Config(str(root / "alembic.ini"))
    scripts = [
        script
        for script in ScriptDirectory.from_config(config).walk_revisions()
        if not isinstance(script.down_revision, tuple | list)
    ]
    if since is not None:
        added = _added_since(root, since)
        scripts = [script for script in scripts if Path(script.path).resolve() in added]
    if not scripts:
        print("lint-migrations: no revision to lint")
        return 0
    with tempfile.TemporaryDirectory(prefix="revisions-") as folder:
        files = []
        for script in scripts:
            origin = Path(script.path).relative_to(root)
            path = Path(folder) / origin.with_suffix(".sql")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(revision_sql(config, script))
            files.append(str(path.relative_to(folder)))
        done = subprocess.run(
            [_squawk(), "--config", str(root / CONFIG), *sorted(files)], cwd=folder, check=False
        )
    if done.returncode == 0:
        print(f"lint-migrations: {len(files)} revisions pass squawk")
    return done.returncode
