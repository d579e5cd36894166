"""`make bench-jobs` (jobs=postgres): what a job costs.

Two measurements on the machine it runs on, printed side by side:

1. The create route with and without its job: the server alone on core 0 (pinned when there are
   two cores or more), first with WEBHOOK_URL empty (no job), then with it set (the `created`
   event enqueued in the write's transaction); the same number of creates at the same
   concurrency each time. Per request: the server's CPU (its process's user + system time over
   the run, divided by the requests), the wall time (the run's duration divided by the requests),
   and the client's CPU (this process's), so a client that is the bottleneck shows.
2. Jobs per second on one core: the worker alone on core 0 drains the backlog the creates with
   their job left, delivering every event to a local HTTP receiver; jobs per second of wall time
   from its first delivery to the last, and the worker's CPU per job.

`make bench-jobs-in-pod` (loadtest/jobs/in_pod.py) asks the next question: what a worker costs
the API's p99 when it shares the API's one core, against no worker there.
"""
