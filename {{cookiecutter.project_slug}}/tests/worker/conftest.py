"""Every worker a test starts gets the service's auth settings: a worker refuses to start without
them, as its pod would without the chart's (auth=jwt and auth=api_key bakes)."""

import pytest


@pytest.fixture(autouse=True)
def _auth_in_the_environment(auth_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in auth_env.items():
        monkeypatch.setenv(name, value)
