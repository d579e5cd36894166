"""`make profile-example`: the profiling guide's example, produced by the commands it shows.

A default bake's get_item is given a function that costs about a millisecond (the mistake), then
`make profile` runs on items.by_id; the function is taken out again (the fix) and the regression
gate compares the fix with the mistake, then `make profile` runs once more. Everything printed
goes, as printed, into the bake's docs/profiling-example.md.
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.baking import bake, git, run

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "{{cookiecutter.project_slug}}" / "docs" / "profiling-example.md"
ROUTES = Path("src/inventory_service/items/routes.py")
COSTLY = "_a_deliberately_costly_function"
READ = (
    "    async with database.connection() as connection:\n"
    "        record = await repository.get_item(connection, item_id=item_id)\n"
)


def add_costly_function(project: Path, iterations: int) -> None:
    """Make the bake's get_item call a function of its own that loops `iterations` times."""
    routes = project / ROUTES
    source = routes.read_text()
    costly = (
        f"\n\ndef {COSTLY}() -> int:\n"
        "    total = 0\n"
        f"    for number in range({iterations:_}):\n"
        "        total += number % 7\n"
        "    return total\n"
    )
    changed = source.replace("\n\n@router.post(", costly + "\n\n@router.post(", 1)
    changed = changed.replace(READ, f"    {COSTLY}()\n{READ}", 1)
    if changed.count(COSTLY) != 2:
        raise RuntimeError(f"the bake's get_item changed: {ROUTES} no longer reads as expected")
    routes.write_text(changed)


def _make(project: Path, *arguments: str) -> str:
    """`make ...` in the bake with the template's environment; what it printed, as printed."""
    result = run(project, "make", *arguments, f"BIN={Path(sys.executable).parent}", timeout=1800)
    # Paths of this run (the template's venv, the temporary bake) as a user's bake has them.
    printed = (result.stdout + result.stderr).replace(
        f"{Path(sys.executable).parent}/", ".venv/bin/"
    )
    printed = printed.replace(f"{project}/", "")
    if result.returncode not in (0, 1):
        raise RuntimeError(f"make {' '.join(arguments)} failed:\n{printed[-4000:]}")
    return printed.strip()


def _report(project: Path, printed: str) -> str:
    path = re.search(r"profile: (\S+\.md)", printed)
    if path is None:
        raise RuntimeError(f"make profile wrote no report:\n{printed[-4000:]}")
    text = (project / path.group(1)).read_text()
    # The flame graph and speedscope file stay in the bake's results: not links in the guide.
    return re.sub(r"\nFlame graph: .*\n", "\n", text.split("\n", 2)[2]).replace("## ", "### ")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        project = bake(Path(folder))
        git(project, "init", "-q")
        git(project, "add", "-A")
        git(project, "commit", "-qm", "baked")
        add_costly_function(project, 20_000)
        git(project, "commit", "-qam", "get_item calls a costly function")
        profile = ("profile", "SCENARIOS=items.by_id", "RATE=100", "SECONDS=15")
        before = _make(project, *profile)
        git(project, "revert", "--no-edit", "HEAD")
        gate = _make(project, "perf-gate", "BASE=HEAD~1", "SCENARIOS=items.by_id")
        after = _make(project, *profile)
        command = "make profile SCENARIOS=items.by_id RATE=100 SECONDS=15"
        EXAMPLE.write_text(
            "\n".join(
                [
                    "# An example of finding where the CPU goes",
                    "",
                    "Produced by the template's `make profile-example` on a default bake: its "
                    f"`get_item` given a function, `{COSTLY}`, that loops 20,000 times per request "
                    "(the mistake), profiled; the function taken out (the fix), proved by the "
                    "regression gate against the mistake, and profiled again. The machine, its "
                    "load and so every figure are those of the run that wrote this page.",
                    "",
                    "## The mistake, profiled",
                    "",
                    f"`{command}` printed:",
                    "",
                    "```",
                    before,
                    "```",
                    "",
                    _report(project, before),
                    "## The fix, proved by the gate",
                    "",
                    "`make perf-gate BASE=HEAD~1 SCENARIOS=items.by_id` printed:",
                    "",
                    "```",
                    gate,
                    "```",
                    "",
                    "## The fix, profiled",
                    "",
                    "```",
                    after,
                    "```",
                    "",
                    _report(project, after),
                ]
            ).rstrip()
            + "\n"
        )
    print(f"wrote {EXAMPLE}")


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, subprocess.CalledProcessError) as error:
        sys.exit(str(error))
