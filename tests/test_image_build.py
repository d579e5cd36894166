"""The baked Dockerfile built and run for real, with buildah (no Docker engine needed).

The two base images cannot be pulled here, so local stand-ins are made under the tags the
Dockerfile pins: a Debian bookworm minbase from debootstrap with Debian's python3.11, `passwd` and
this machine's CA bundle (SSL_CERT_FILE points at it, as the machine's network requires) as
`python:3.11.16-slim-bookworm`, and a scratch image holding the `uv` binary of the uv wheel as
`ghcr.io/astral-sh/uv:0.9.26`. The stand-ins cannot have the pinned digests, so the one change
made to the Dockerfile is the `@sha256:...` of its FROM lines, taken off; the rest builds
unchanged. The stand-ins are kept in a buildah
store of the tests' own (~/.cache), so only the first run pays for debootstrap (about 80 s).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from .baking import VENV_BIN, load_dev_module
from .figures import Figures
from .serving import scratch_database, wait_until_answering

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs("buildah", "debootstrap"),
    pytest.mark.skipif(os.geteuid() != 0, reason="buildah's store and debootstrap need root"),
]
STORE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fastapi-1core" / "buildah"
BASE = "python:3.11.16-slim-bookworm"
UV = "ghcr.io/astral-sh/uv:0.9.26"
PINNED = re.compile(r"^(FROM \S+)@sha256:[0-9a-f]{64}", re.MULTILINE)
IMAGE = "inventory-service:test"
MIRROR = "http://deb.debian.org/debian"
# buildah on the tests' own store of images (see above).
BUILDAH = ["buildah", "--root", str(STORE / "root"), "--runroot", str(STORE / "run"),
           "--storage-driver", "vfs"]  # fmt: skip


def buildah(*args: str, timeout: float = 300) -> str:
    result = subprocess.run(
        [*BUILDAH, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise AssertionError(
            f"buildah {' '.join(args)}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return result.stdout.strip()


def _has_image(name: str) -> bool:
    inspect = [*BUILDAH, "inspect", "--type", "image", name]
    return subprocess.run(inspect, capture_output=True, check=False).returncode == 0


def _python_stand_in(work: Path) -> None:
    rootfs = work / "bookworm"
    debootstrap = subprocess.run(
        ["debootstrap", "--variant=minbase", "--include=python3.11,passwd", "bookworm",
         str(rootfs), MIRROR],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if debootstrap.returncode != 0:
        pytest.skip(f"debootstrap cannot build a bookworm root here: {debootstrap.stderr[-500:]}")
    for junk in (
        "var/cache/apt/archives",
        "var/lib/apt/lists",
        "usr/share/doc",
        "usr/share/man",
        "usr/share/locale",
    ):
        shutil.rmtree(rootfs / junk, ignore_errors=True)
    # The official image ships the standard library without bytecode (its Dockerfile deletes
    # every .pyc); Debian's packages compile it at install: removed, as there.
    for cache in (rootfs / "usr" / "lib" / "python3.11").rglob("__pycache__"):
        shutil.rmtree(cache)
    (rootfs / "etc" / "ssl" / "certs").mkdir(parents=True, exist_ok=True)
    shutil.copy2(
        "/etc/ssl/certs/ca-certificates.crt",
        rootfs / "etc" / "ssl" / "certs" / "ca-certificates.crt",
    )
    for name in ("python", "python3"):  # where the official image has them
        (rootfs / "usr" / "local" / "bin" / name).symlink_to("/usr/bin/python3.11")
    with tarfile.open(work / "rootfs.tar", "w") as archive:
        archive.add(rootfs, arcname=".")
    container = buildah("from", "scratch")
    buildah("add", container, str(work / "rootfs.tar"), "/")
    buildah("config", "--env", "PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--env", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "--cmd", "python3",
            container)  # fmt: skip
    buildah("commit", "--rm", container, BASE)


def _uv_stand_in(work: Path) -> None:
    (work / "uv").mkdir()
    shutil.copy2(VENV_BIN / "uv", work / "uv" / "uv")  # the binary of the uv wheel
    container = buildah("from", "scratch")
    buildah("copy", container, str(work / "uv" / "uv"), "/uv")
    buildah("commit", "--rm", container, UV)


@pytest.fixture(scope="module")
def image(
    default_project: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, float | str]]:
    work = tmp_path_factory.mktemp("image")
    started = time.monotonic()
    buildah("rm", "--all")  # working containers an interrupted run left in this store of our own
    if not _has_image(BASE):
        _python_stand_in(work)
    if _has_image(UV):
        buildah("rmi", UV)
    _uv_stand_in(work)
    stand_ins = time.monotonic() - started
    context = Path(
        shutil.copytree(default_project, work / "context", ignore=shutil.ignore_patterns("results"))
    )
    dockerfile = context / "Dockerfile"
    dockerfile.write_text(PINNED.sub(r"\1", dockerfile.read_text()))  # the stand-ins' names
    started = time.monotonic()
    buildah(
        "bud",
        "--isolation",
        "chroot",
        "--pull=never",
        "--layers=false",
        "-t",
        IMAGE,
        str(context),
        timeout=600,
    )
    built = time.monotonic() - started
    sizes = {
        line.split()[0]: line.split(maxsplit=1)[1]
        for line in buildah("images", "--format", "{{.Name}}:{{.Tag}} {{.Size}}").splitlines()
    }
    figures: dict[str, float | str] = {
        "build_seconds": round(built, 1),
        "stand_ins_seconds": round(stand_ins, 1),
        "image_size": sizes[f"localhost/{IMAGE}"],
        "base_size": sizes[f"docker.io/library/{BASE}"],
    }
    Figures(tmp_path_factory.getbasetemp()).record("image_build", **figures)
    print(f"image: {figures}")
    yield figures
    buildah("rmi", IMAGE)


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file of a container's root with its size and mtime, /tmp aside (an emptyDir in the
    pod)."""
    found = {}
    for folder, _, files in os.walk(root):
        relative = Path(folder).relative_to(root)
        if relative.parts[:1] in {("tmp",), ("proc",), ("dev",), ("sys",), ("run",)}:
            continue
        for name in files:
            stat = (Path(folder) / name).lstat()
            found[str(relative / name)] = (stat.st_size, stat.st_mtime_ns)
    return found


def test_image_builds_unchanged_and_serves_as_uid_10001_from_an_unwritten_root(
    default_project: Path, image: dict[str, float | str], postgres_url: str
) -> None:
    config = json.loads(buildah("inspect", "--type", "image", IMAGE))["OCIv1"]["config"]
    assert config["User"] == "10001:10001"
    container = buildah("from", "--pull=never", IMAGE)
    root = Path(buildah("mount", container))
    before = _snapshot(root)
    port = load_dev_module(default_project, "devdb").free_port()
    tmp = tempfile.mkdtemp(prefix="image-tmp-")
    os.chmod(tmp, 0o1777)
    try:
        with scratch_database(postgres_url, "image_build") as url:
            run = ["run", "--isolation", "chroot", "--env", f"DATABASE_URL={url}",
                   "--env", f"PORT={port}", "--mount", f"type=bind,source={tmp},destination=/tmp",
                   container, "--"]  # fmt: skip
            buildah(*run, "python", "-m", "inventory_service", "migrate")  # the migration Job's
            served = _serve_and_drain(run, config["Cmd"], port)
        after = _snapshot(root)
    finally:
        buildah("umount", container)
        buildah("rm", container)
        shutil.rmtree(tmp, ignore_errors=True)
    assert served["uid"] == 10001
    assert served["round_trip"] == [201, 200, 204, 404]
    # uvicorn drains, closes the pool, then re-raises SIGTERM: buildah run reports that as status 1.
    output = str(served["output"])
    assert "Application shutdown complete" in output, output[-3000:]
    assert "pool_closed" in output, output[-3000:]
    assert served["returncode"] == 1, output[-3000:]
    changed = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    assert changed == set(), sorted(changed)[:20]  # the service wrote nothing outside /tmp


def _serve_and_drain(run: list[str], command: list[str], port: int) -> dict[str, object]:
    process = subprocess.Popen(
        [*BUILDAH, *run, *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_answering(process, f"{url}/readyz", what="the image")
        except RuntimeError:
            raise AssertionError(
                f"the image did not become ready: {process.communicate()[0][-3000:]}"
            ) from None
        created = httpx.post(f"{url}/items", json={"name": "crate", "price_cents": 1200}, timeout=5)
        item = f"{url}/items/{created.json()['id']}"
        statuses = [created.status_code, httpx.get(item, timeout=5).status_code]
        statuses += [
            httpx.delete(item, timeout=5).status_code,
            httpx.get(item, timeout=5).status_code,
        ]
        # buildah's chroot helper has the command in its arguments too: the server is the python.
        (server,) = [child for child in psutil.Process(process.pid).children(recursive=True)
                     if child.cmdline()[-2:] == command[-2:]
                     and Path(child.exe()).name.startswith("python")]  # fmt: skip
        uid = server.uids().real
        server.send_signal(signal.SIGTERM)  # what the kubelet sends (the image's STOPSIGNAL)
        output, _ = process.communicate(timeout=60)
        return {
            "uid": uid,
            "round_trip": statuses,
            "returncode": process.returncode,
            "output": output,
        }
    finally:
        if process.poll() is None:  # the chroot helper and the server outlive a killed buildah
            for child in psutil.Process(process.pid).children(recursive=True):
                child.kill()
            process.kill()
            process.communicate()


def test_image_size_and_build_time_are_reported(image: dict[str, float | str]) -> None:
    assert float(image["build_seconds"]) < 300
    assert str(image["image_size"]).endswith("MB")
    assert sys.platform == "linux"


def test_the_standard_library_is_compiled_into_the_image(image: dict[str, float | str]) -> None:
    """The root filesystem is read-only in the pod: bytecode missing from the image would be
    compiled again at every start."""
    script = (
        "import importlib.util, json, os, sysconfig\n"
        "names = ['json/__init__', 'asyncio/base_events', 'email/message', 'http/client']\n"
        "stdlib = sysconfig.get_path('stdlib')\n"
        "sources = [os.path.join(stdlib, name + '.py') for name in names]\n"
        "print(json.dumps([os.path.exists(importlib.util.cache_from_source(s)) for s in sources]))"
    )
    container = buildah("from", "--pull=never", IMAGE)
    try:
        cached = json.loads(
            buildah("run", "--isolation", "chroot", container, "--", "python", "-c", script)
        )
    finally:
        buildah("rm", container)
    assert cached == [True] * 4
