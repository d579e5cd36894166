// The service's scenarios for k6, generic: everything comes from the JSON config that
// `python -m loadtest k6` generates. The requests of each scenario (method, path, body, expected
// status, route name) and their weights from the scenario table, loadtest/plan/scenarios.py; arrival
// rates and thresholds from loadtest/budget.toml; the ids to use, seeded by Python beforehand.
// Run it with `make k6`, or in a cluster with k6-operator (`make k6-cluster`), where the config
// sits next to this script. The headers every request carries (credentials) come from the
// environment, LOADTEST_HEADERS (one `Name: value` per line), never from the config: `make k6`
// sets it from its own, a cluster's runners from a Secret (loadtest/plan/headers.py).
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';

const config = JSON.parse(open(__ENV.K6_CONFIG || './k6-config.json'));

// A check that fails (a 2xx other than the one expected included) counts against the same error
// budget as a failed request: each scenario's http_req_failed threshold, `rate<=E`, gets a checks
// threshold `rate>=1-E` beside it.
function withChecksThresholds(options) {
  const thresholds = Object.assign({}, options.thresholds);
  for (const [metric, rules] of Object.entries(options.thresholds || {})) {
    const scenario = metric.match(/^http_req_failed\{scenario:([\w-]+)\}$/);
    if (scenario === null) continue;
    thresholds[`checks{scenario:${scenario[1]}}`] = rules.map((rule) => `rate>=${1 - Number(rule.split('<=')[1])}`);
  }
  return Object.assign({}, options, { thresholds });
}

export const options = Object.assign({ discardResponseBodies: true }, withChecksThresholds(config.options));

const sent = {};
for (const line of (__ENV.LOADTEST_HEADERS || '').split('\n')) {
  const colon = line.indexOf(':');
  if (colon > 0) sent[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
}

// `{id}` an id of the operation's resource, `{n}` below random_below, `{u}` a unique field's
// value: unique_range[0] <= u < unique_range[1] (12 digits, exact in a double).
const [uniqueLow, uniqueHigh] = config.unique_range;
const values = {
  id: (operation) => {
    const ids = config.ids[operation.resource];
    return ids[Math.floor(Math.random() * ids.length)];
  },
  n: () => Math.floor(Math.random() * config.random_below),
  u: () => uniqueLow + Math.floor(Math.random() * (uniqueHigh - uniqueLow)),
};

// A template as the table splits it: literal text at even places, placeholder names at odd ones.
function render(parts, operation) {
  return parts.map((part, index) => (index % 2 === 0 ? part : String(values[part](operation)))).join('');
}

function pick(mix) {
  const total = mix.reduce((sum, item) => sum + item.weight, 0);
  let left = Math.random() * total;
  for (const item of mix) {
    left -= item.weight;
    if (left < 0) return config.operations[item.operation];
  }
  return config.operations[mix[mix.length - 1].operation];
}

// Every scenario runs this: one request of the running scenario's mix. One metric series per
// route, not one per URL: every request is tagged with its route's name.
export default function () {
  const operation = pick(config.mixes[exec.scenario.name]);
  const params = { tags: { name: operation.route }, headers: sent };
  let body = null;
  if (operation.body !== null) {
    body = render(operation.body, operation);
    params.headers = Object.assign({ 'Content-Type': 'application/json' }, sent);
  }
  // The operation's own headers, rendered per request: a create's fresh Idempotency-Key.
  for (const [name, template] of operation.headers || []) {
    params.headers = Object.assign({}, params.headers, { [name]: render(template, operation) });
  }
  const response = http.request(operation.method, config.base_url + render(operation.path, operation), body, params);
  check(response, { [`status ${operation.status}`]: (r) => r.status === operation.status });
}
