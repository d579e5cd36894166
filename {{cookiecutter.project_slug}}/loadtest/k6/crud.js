// The service's scenarios for k6. Everything that varies (base URL, resource path, arrival rates,
// thresholds) comes from the JSON config that `python -m loadtest k6` generates from
// loadtest/budget.toml, so the budget has one source of truth. Run it with `make k6`.
import http from 'k6/http';
import { check } from 'k6';

const config = JSON.parse(open(__ENV.K6_CONFIG));
const base = config.base_url + config.prefix;
const json = { headers: { 'Content-Type': 'application/json' } };

export const options = Object.assign({ discardResponseBodies: true }, config.options);

// The ids the API lists (keyset pages), read once before the load starts.
export function setup() {
  const ids = [];
  let after = 0;
  while (ids.length < 5000) {
    const page = http.get(`${base}?limit=500&after=${after}`, { responseType: 'text' }).json();
    for (const row of page.data) ids.push(row.id);
    if (page.next_after === null) break;
    after = page.next_after;
  }
  while (ids.length < 100) {
    const body = JSON.stringify({ name: 'seeded by k6', price_cents: 100 });
    ids.push(http.post(base, body, Object.assign({ responseType: 'text' }, json)).json().id);
  }
  return { ids };
}

function pick(ids) {
  return ids[Math.floor(Math.random() * ids.length)];
}

export function by_id(data) {
  check(http.get(`${base}/${pick(data.ids)}`), { 'status 200': (r) => r.status === 200 });
}

export function page(data) {
  check(http.get(`${base}?limit=20&after=${pick(data.ids)}`), { 'status 200': (r) => r.status === 200 });
}

export function create() {
  const body = JSON.stringify({ name: `k6 ${Math.random()}`, price_cents: 100 });
  check(http.post(base, body, json), { 'status 201': (r) => r.status === 201 });
}

export function patch(data) {
  const body = JSON.stringify({ quantity: Math.floor(Math.random() * 1000) });
  check(http.patch(`${base}/${pick(data.ids)}`, body, json), { 'status 200': (r) => r.status === 200 });
}

export function mixed(data) {
  if (Math.random() < 0.8) by_id(data);
  else patch(data);
}
