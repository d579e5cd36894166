"""The worker's settings: what pgqueuer or the heartbeat would refuse later is refused at start."""

import pytest
from pydantic import ValidationError

from {{ cookiecutter.package_name }}.settings import Settings

DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"  # none is reached


def test_fewer_jobs_in_flight_than_two_batches_is_refused() -> None:
    """pgqueuer raises when the worker starts with a cap below two batches; the settings name
    both variables first, as they are read."""
    with pytest.raises(ValidationError, match="JOBS_MAX_IN_FLIGHT must be at least twice"):
        Settings(database_url=DATABASE_URL, jobs_batch_size=10, jobs_max_in_flight=19)
    settings = Settings(database_url=DATABASE_URL, jobs_batch_size=10, jobs_max_in_flight=20)
    assert settings.jobs_max_in_flight == 20


def test_a_heartbeat_timeout_within_the_longest_job_is_refused() -> None:
    """A job still running past the heartbeat timeout would be taken by a second worker."""
    with pytest.raises(ValidationError, match="JOBS_HEARTBEAT_TIMEOUT_SECONDS must exceed"):
        Settings(
            database_url=DATABASE_URL,
            webhook_timeout_seconds=10,
            jobs_heartbeat_timeout_seconds=10,
        )
