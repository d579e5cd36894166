// `make api-diff BASE=<ref>` and CI's api-diff job: what changed from one openapi.json to another,
// classified by api-smart-diff's rules for OpenAPI; exit 1 naming each breaking change.
//
// node clients/api_diff.mjs BASE.json HEAD.json
import { readFileSync } from "node:fs";
import { apiCompare } from "api-smart-diff";

const METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);
const [basePath, headPath] = process.argv.slice(2);
const read = (path) => JSON.parse(readFileSync(path, "utf8"));
const { diffs } = apiCompare(read(basePath), read(headPath));

// What the operations reach, judged where it is used: under paths/ every schema an operation
// reads or answers is compared again, resolved, as a request or a response. Under components/
// api-smart-diff judges a schema without knowing which it is (a property added to a schema that
// is only ever answered shows as breaking there), so those entries are left out.
const changes = diffs.filter((diff) => diff.path[0] === "paths");

function where(path) {
  const [, route, method, ...rest] = path;
  const operation = METHODS.has(method) ? `${method.toUpperCase()} ${route}` : route;
  const inside = (METHODS.has(method) ? rest : [method, ...rest]).filter((part) => part !== undefined);
  return inside.length ? `${operation} ${inside.join(".")}` : operation;
}

const breaking = changes.filter((diff) => diff.type === "breaking");
for (const diff of changes) {
  const label = diff.type === "breaking" ? "BREAKING" : diff.type;
  console.log(`${label}: ${diff.action} ${where(diff.path)}${diff.description ? `: ${diff.description.trim()}` : ""}`);
}
if (breaking.length > 0) {
  console.log(`\n${breaking.length} breaking change(s) from ${basePath} to ${headPath}.`);
  process.exit(1);
}
console.log(`No breaking change from ${basePath} to ${headPath} (${changes.length} other change(s)).`);
