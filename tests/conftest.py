"""Session fixtures of the template's tests: the default bake, one real PostgreSQL server shared
by the baked suites, and for the fault tests a PostgreSQL of their own that they may stop."""

import os
import secrets
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

from .baking import bake, load_dev_module
from .faults import Postgres
from .figures import Figures
from .needs import NeedsPlugin
from .readme_way import install_cookiecutter
from .serving import Served, migrated_database, start_service


@pytest.hookimpl(trylast=True)  # after pytest's own, which makes its temporary root
def pytest_configure(config: pytest.Config) -> None:
    # @pytest.mark.needs("wrk"): skips without the tool, and fails a test that runs one undeclared.
    config.pluginmanager.register(NeedsPlugin(), "needs")
    # Under `make test` the tests inherit make's variables: a bake's make would then see itself as
    # a sub-make (announcing "Entering directory" in the output the tests read) and take the outer
    # make's flags. The bakes' commands run as a user types them, with none of them.
    for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        os.environ.pop(name, None)
    # The property test's seed, drawn here, once: xdist's workers start after this and inherit
    # it, where each would otherwise draw its own, and a printed seed would not replay its shard.
    os.environ.setdefault("SPECS_SEED", str(secrets.randbelow(2**32)))
    # The bakes' `make lint` share one mypy cache per process: their kit/, serving/ and tests are
    # alike, so a bake after the first is checked in seconds, not 25 (mypy checks again what
    # differs, by hash); one per process, as two mypy runs must not write one cache at once.
    # (xdist's workers inherit the controller's environment: each makes its own.)
    cache = tempfile.mkdtemp(prefix="template-tests-mypy-")
    os.environ["MYPY_CACHE_DIR"] = cache
    config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    # Every pytest session sets its temporary root (/tmp/pytest-of-<user>) back to 0700 as it
    # starts. This run's bakes keep their PostgreSQL there (in their .venv), which the server's
    # unprivileged user must reach, and each bake's suite is a session of its own: one started
    # while another bake's initdb ran, which then could not load its libraries (CI). This run's
    # root first, then the sessions it starts keep to another one.
    factory: pytest.TempPathFactory | None = getattr(config, "_tmp_path_factory", None)
    if factory is not None:  # pytest's own, a private name: without it, one root as before
        factory.getbasetemp()
    os.environ.setdefault(
        "PYTEST_DEBUG_TEMPROOT", tempfile.mkdtemp(prefix="template-tests-nested-")
    )


# The files whose tests bake and run whole suites, longest first (from `make test`'s --durations).
# `make test` hands its processes whole work units (a file, or a property example: `work_unit`)
# in this order (--no-loadscope-reorder; xdist would otherwise put the units with the most tests
# first, these last, and one process would run the last two long ones alone while the others had
# finished). Each is followed by a file of many short tests (the most first): a process takes a
# unit more while its own has two tests or fewer left to run, which would otherwise be the next
# long one.
LONGEST_FIRST = (
    "test_generated_suites.py",
    "test_upgrade.py",
    "test_generated_specs.py",
    "test_generated_suites_jwt.py",
    "test_pip_install.py",
    "test_guide_schema.py",
    "test_lowest_versions.py",
    "test_generated_specs_found.py",
    "test_generation.py",
    "test_bench_instructions.py",
    "test_guides.py",
)
# The files whose every test is a work unit of its own: the property test's examples, each a
# whole suite, run side by side on as many processes (in one file, they would run one after the
# other on one process, the run's longest stretch).
EACH_TEST_ALONE = ("test_generated_specs.py",)


def work_unit(nodeid: str) -> str:
    """What `make test` hands one process whole: the test's file, so that the file's bakes are
    made once, or the test itself in EACH_TEST_ALONE."""
    path = nodeid.split("::", 1)[0]
    return nodeid if Path(path).name in EACH_TEST_ALONE else path


class _ByWorkUnit(LoadFileScheduling):  # type: ignore[misc]  # xdist ships no type information
    """xdist's --dist loadfile, its units as `work_unit` says."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)


@pytest.hookimpl(optionalhook=True)  # xdist's hook: `-p no:xdist` leaves it unknown
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LoadFileScheduling | None:
    return _ByWorkUnit(config, log) if config.getvalue("dist") == "loadfile" else None


@pytest.hookimpl(trylast=True)  # after `-m` has deselected: the tests that will run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Counter(work_unit(item.nodeid) for item in items)  # in the order collected

    def file_of(unit: str) -> str:
        return Path(unit.split("::", 1)[0]).name

    long = [unit for name in LONGEST_FIRST for unit in tests if file_of(unit) == name]
    short = sorted((u for u in tests if file_of(u) not in LONGEST_FIRST), key=lambda u: -tests[u])
    order: list[str] = []
    for unit in long:
        order += [unit, *short[:1]]
        short = short[1:]
    rank = {unit: index for index, unit in enumerate(order + short)}
    items.sort(key=lambda item: rank[work_unit(item.nodeid)])  # stable: each unit's order kept


# The seeds of the tests that draw random examples (record_property("SPECS_SEED", ...)), printed
# at the end of the run, passed or not, so that any run can be replayed; with -n the reports,
# their properties with them, reach this process from the workers.
_seeds: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        for name, value in report.user_properties:
            if name.endswith("_SEED"):
                _seeds.append(f"{report.nodeid}: {name}={value} ({report.outcome})")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _seeds:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def default_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bake(tmp_path_factory.mktemp("default"))


@pytest.fixture(scope="session")
def postgres_url(default_project: Path) -> Iterator[str]:
    """A throwaway PostgreSQL (the baked service's own helper) shared by every baked suite;
    each suite creates and drops a database of its own on it.

    Its data lives outside pytest's temporary root, which any pytest session starting meanwhile
    resets to 0700: the server's own user could then no longer reach it to stop it.
    """
    devdb = load_dev_module(default_project, "devdb")
    folder = Path(tempfile.mkdtemp(prefix="template-pg-"))
    try:
        with devdb.ThrowawayPostgres(folder / "data") as server:
            yield server.url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def readme_cookiecutter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cookiecutter alone in a venv of its own, installed by pip, as the README's first line."""
    return install_cookiecutter(tmp_path_factory.mktemp("readme-cookiecutter"))


@pytest.fixture(scope="session")
def chart(default_project: Path) -> Path:
    """The default bake's Helm chart."""
    return default_project / "deploy" / "helm" / default_project.name


@pytest.fixture(scope="session")
def api_key_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bake(tmp_path_factory.mktemp("api-key"), auth="api_key")


@pytest.fixture(scope="session")
def jwt_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bake(tmp_path_factory.mktemp("jwt"), auth="jwt")


@pytest.fixture(scope="session")
def jobs_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bake(tmp_path_factory.mktemp("jobs"), jobs="postgres")


@pytest.fixture(scope="session")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Figures:
    """Where the reliability tests record what they measured (figures.py)."""
    return Figures(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def stoppable_postgres(default_project: Path) -> Iterator[Postgres]:
    """A PostgreSQL the fault tests may stop: never the shared one of the other suites.

    Its data lives outside pytest's temporary root, as for `postgres_url`: a restart needs the
    server's own user to reach it.
    """
    devdb = load_dev_module(default_project, "devdb")
    folder = Path(tempfile.mkdtemp(prefix="faults-pg-"))
    server = devdb.ThrowawayPostgres(folder / "data")
    server.start()
    try:
        with migrated_database(default_project, server.url, "faults") as url:
            yield Postgres(server, url)
    finally:
        server.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def serve(
    default_project: Path, stoppable_postgres: Postgres, tmp_path: Path
) -> Iterator[Callable[..., Served]]:
    """Start the default bake's server on `stoppable_postgres` with settings from keyword
    arguments; every server started is stopped afterwards."""
    started: list[Served] = []

    def start(**env: str) -> Served:
        log = tmp_path / f"service-{len(started)}.log"
        served = start_service(default_project, stoppable_postgres.url, log, **env)
        started.append(served)
        return served

    yield start
    for served in started:
        if served.process.poll() is None:
            served.process.terminate()
            served.process.wait(timeout=30)
