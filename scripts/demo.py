"""`make demo`: bake the default service, install it, serve it on a throwaway PostgreSQL, use it.

The service keeps serving on http://127.0.0.1:8000 (docs at /docs) until Ctrl-C; pass --exit to
stop after the tour.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
from cookiecutter.main import cookiecutter

from tests.serving import wait_until_answering

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo"


def _show(response: httpx.Response) -> None:
    request = response.request
    query = f"?{request.url.query.decode()}" if request.url.query else ""
    content_type = response.headers.get("content-type", "")
    print(f"\n$ {request.method} {request.url.path}{query}")
    print(f"  {response.status_code} {response.reason_phrase}  {content_type}")
    if response.content:
        print("  " + json.dumps(response.json(), indent=2).replace("\n", "\n  "))


def tour(base: str) -> None:
    with httpx.Client(base_url=base) as http:
        created = http.post(
            "/items", json={"name": "Desk lamp", "price_cents": 4200, "quantity": 3}
        )
        _show(created)
        location = created.headers["location"]
        _show(http.get(location))
        _show(
            http.patch(
                location, json={"quantity": 2}, headers={"If-Match": created.headers["etag"]}
            )
        )
        _show(
            http.patch(
                location, json={"quantity": 9}, headers={"If-Match": created.headers["etag"]}
            )
        )
        _show(http.get("/items", params={"limit": 2}))
        _show(http.post("/items", json={"name": "", "price_cents": -1, "colour": "red"}))
        _show(http.delete(location))
        _show(http.get("/readyz"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exit", action="store_true", help="stop after the tour")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    shutil.rmtree(DEMO, ignore_errors=True)
    project = Path(cookiecutter(str(ROOT), no_input=True, output_dir=str(DEMO)))
    print(f"baked {project.relative_to(ROOT)}; installing its environment ...", flush=True)
    subprocess.run(["make", "install"], cwd=project, check=True)
    # A session of its own, so that stopping the demo stops make, uvicorn and PostgreSQL together.
    server = subprocess.Popen(
        ["make", "dev", f"PORT={args.port}"], cwd=project, start_new_session=True
    )
    base = f"http://127.0.0.1:{args.port}"
    try:
        wait_until_answering(server, f"{base}/healthz", what="make dev", seconds=120)
        tour(base)
        print(f"\nServing {base} (API docs: {base}/docs). Ctrl-C to stop.", flush=True)
        if not args.exit:
            server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
