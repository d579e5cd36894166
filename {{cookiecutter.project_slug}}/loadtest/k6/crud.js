// The service's scenarios for k6. Everything that varies (base URL, resource path, arrival rates,
// thresholds) comes from the JSON config that `python -m loadtest k6` generates from
// loadtest/budget.toml, so the budget has one source of truth. Run it with `make k6`, or in a
// cluster with k6-operator (`make k6-cluster`), where the config sits next to this script.
import http from 'k6/http';
import { check } from 'k6';

const config = JSON.parse(open(__ENV.K6_CONFIG || './k6-config.json'));
const base = config.base_url + config.prefix;
const json = { headers: { 'Content-Type': 'application/json' } };
// One metric series per route, not one per URL: every request is tagged with its route's name.
const names = {
  list: `GET ${config.prefix}`,
  byId: `GET ${config.prefix}/{id}`,
  page: `GET ${config.prefix}?limit&after`,
  create: `POST ${config.prefix}`,
  patch: `PATCH ${config.prefix}/{id}`,
};

// A check that fails (a 2xx other than the one expected included) counts against the same error
// budget as a failed request: each scenario's http_req_failed threshold, `rate<=E`, gets a checks
// threshold `rate>=1-E` beside it.
function withChecksThresholds(options) {
  const thresholds = Object.assign({}, options.thresholds);
  for (const [metric, rules] of Object.entries(options.thresholds || {})) {
    const scenario = metric.match(/^http_req_failed\{scenario:(\w+)\}$/);
    if (scenario === null) continue;
    thresholds[`checks{scenario:${scenario[1]}}`] = rules.map((rule) => `rate>=${1 - Number(rule.split('<=')[1])}`);
  }
  return Object.assign({}, options, { thresholds });
}

export const options = Object.assign({ discardResponseBodies: true }, withChecksThresholds(config.options));

// The ids the API lists (keyset pages), read once before the load starts.
export function setup() {
  const ids = [];
  let after = 0;
  while (ids.length < 5000) {
    const params = { responseType: 'text', tags: { name: names.list } };
    const page = http.get(`${base}?limit=500&after=${after}`, params).json();
    for (const row of page.data) ids.push(row.id);
    if (page.next_after === null) break;
    after = page.next_after;
  }
  while (ids.length < 100) {
    const body = JSON.stringify({ name: 'seeded by k6', price_cents: 100 });
    const params = Object.assign({ responseType: 'text', tags: { name: names.create } }, json);
    ids.push(http.post(base, body, params).json().id);
  }
  return { ids };
}

function pick(ids) {
  return ids[Math.floor(Math.random() * ids.length)];
}

export function by_id(data) {
  const response = http.get(`${base}/${pick(data.ids)}`, { tags: { name: names.byId } });
  check(response, { 'status 200': (r) => r.status === 200 });
}

export function page(data) {
  const response = http.get(`${base}?limit=20&after=${pick(data.ids)}`, { tags: { name: names.page } });
  check(response, { 'status 200': (r) => r.status === 200 });
}

export function create() {
  const body = JSON.stringify({ name: `k6 ${Math.random()}`, price_cents: 100 });
  const response = http.post(base, body, Object.assign({ tags: { name: names.create } }, json));
  check(response, { 'status 201': (r) => r.status === 201 });
}

export function patch(data) {
  const body = JSON.stringify({ quantity: Math.floor(Math.random() * 1000) });
  const params = Object.assign({ tags: { name: names.patch } }, json);
  check(http.patch(`${base}/${pick(data.ids)}`, body, params), { 'status 200': (r) => r.status === 200 });
}

export function mixed(data) {
  if (Math.random() < 0.8) by_id(data);
  else patch(data);
}
