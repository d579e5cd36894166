"""The worker of jobs=postgres: `python -m {{ cookiecutter.package_name }} worker` runs the jobs the
writes enqueue (kit/events.py) until SIGTERM; docs/jobs.md says how it is run and sized."""
