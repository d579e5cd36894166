"""wrk driven by the scenario table: the Lua script of a mix, written from loadtest/plan/scenarios.py,
and wrk's figures read back. The engine's cross-check runs it, and so does the template's bench.
The headers every request carries (loadtest/drive/credentials.py) reach the script in its environment,
never on wrk's command line nor in the Lua file."""

import json
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..plan import ENVIRONMENT, RANDOM_BELOW, Mix, Operation, environment, parts

# Ids at random in the seeded range (contiguous), or in order from its start for an operation
# that uses each id once (each wrk thread counts on its own: run those with one thread); the
# headers of LOADTEST_HEADERS (`Name: value` lines) on every request, a request with a body in the
# same table as its Content-Type (wrk.format ignores -H headers once given a table), an
# operation's own headers (a fresh Idempotency-Key) added to a copy; each thread seeded apart
# (one seed would repeat a thread's unique values and keys in the next); one JSON line at the end.
_PRELUDE = """math.randomseed(os.time())
local threads = 0
setup = function(thread) threads = threads + 1; thread:set("thread_number", threads) end
init = function() math.randomseed(os.time() * 1000 + (thread_number or 0)) end
local function with(base, own)
  local all = {}
  for name, value in pairs(base) do all[name] = value end
  for name, value in pairs(own) do all[name] = value end
  return all
end
local low, high, next_id = %(low)d, %(high)d, %(low)d
local values = {
  id = function() return math.random(low, high) end,
  n = function() return math.random(0, %(below)d) end,
  -- 12 digits (operations.py UNIQUE_RANGE) from two draws: Lua 5.1's math.random is 32-bit
  u = function() return string.format("%%d%%06d", math.random(100000, 999999), math.random(0, 999999)) end,
  next = function() next_id = next_id + 1; return next_id - 1 end,
}
local plain, json = {}, {["Content-Type"] = "application/json"}
for line in (os.getenv("%(headers)s") or ""):gmatch("[^\\n]+") do
  local name, value = line:match("^%%s*([^:]-)%%s*:%%s*(.-)%%s*$")
  if name and name ~= "" then plain[name], json[name] = value, value end
end
"""
_REPORT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, '
    .. '"non_2xx": %d, "socket_errors": %d}\\n', summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout))
end
"""


def _value(name: str, consumes_id: bool) -> str:
    return "next" if consumes_id and name == "id" else name


def _text(template: str, consumes_id: bool) -> str:
    """A Lua expression for a template: literal text joined with the values of its placeholders."""
    pieces = [
        json.dumps(part, ensure_ascii=False)
        if index % 2 == 0
        else f"values.{_value(part, consumes_id)}()"
        for index, part in enumerate(parts(template))
        if part
    ]
    return " .. ".join(pieces) or '""'


def _headers(operation: Operation, table: str) -> str:
    if not operation.headers:
        return table
    own = ", ".join(
        f"[{json.dumps(name)}] = {_text(template, False)}" for name, template in operation.headers
    )
    return f"with({table}, " + "{" + own + "})"  # no doubled brace: cookiecutter renders this


def _request(operation: Operation) -> str:
    path = _text(operation.path, operation.consumes_id)
    if operation.body is None:
        return f'wrk.format("{operation.method}", {path}, {_headers(operation, "plain")})'
    body = _text(operation.body, operation.consumes_id)
    return f'wrk.format("{operation.method}", {path}, {_headers(operation, "json")}, {body})'


def script(mix: Mix, *, low: int, high: int, delay_ms: int | None = None) -> str:
    """The Lua of `mix` (weighted), its ids in [low, high] (the seeded ids of the mix's one
    resource); `delay_ms` of think time per request."""
    values = {"low": low, "high": high, "below": RANDOM_BELOW - 1, "headers": ENVIRONMENT}
    lines = [_PRELUDE % values]
    if len(mix) == 1:
        lines.append(f"request = function() return {_request(mix[0][0])} end")
    else:
        lines.append(f"local total = {sum(weight for _, weight in mix)}")
        lines.append("request = function()\n  local pick = math.random(total)")
        reached = 0
        for operation, weight in mix:
            reached += weight
            lines.append(f"  if pick <= {reached} then return {_request(operation)} end")
        lines.append("end")
    if delay_ms is not None:
        lines.append(f"delay = function() return {delay_ms} end")
    return "\n".join(lines) + "\n" + _REPORT


def available() -> bool:
    return shutil.which("wrk") is not None


def run(
    url: str,
    lua: str,
    *,
    connections: int,
    seconds: int,
    threads: int = 1,
    headers: Mapping[str, str] | None = None,
    request_timeout_s: int | None = None,
) -> dict[str, float]:
    """One wrk run of a script from `script()`, every request carrying `headers`: requests, RPS,
    p50 and p99, errors (non-2xx/3xx answers and socket errors, a request unanswered after
    `request_timeout_s` among them: wrk's own 2 s when not given)."""
    command = ["wrk", f"-t{max(1, min(threads, connections))}", f"-c{connections}", f"-d{seconds}s"]
    if request_timeout_s is not None:
        command.append(f"--timeout={request_timeout_s}s")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mix.lua"
        path.write_text(lua)
        result = subprocess.run(
            [*command, "-s", str(path), url],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
            check=True,
            env=environment(headers or {}),
        )
    line = next(line for line in result.stdout.splitlines() if line.startswith("WRK_JSON "))
    raw = json.loads(line.removeprefix("WRK_JSON "))
    return {
        "requests": raw["requests"],
        "rps": raw["requests"] / (raw["duration_us"] / 1e6),
        "p50_ms": raw["p50_us"] / 1000,
        "p99_ms": raw["p99_us"] / 1000,
        "errors": raw["non_2xx"] + raw["socket_errors"],
    }
