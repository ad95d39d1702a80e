// Validates Kubernetes objects against the API's schemas, offline: reads a JSON array of objects
// on stdin (manifests_test.py turns the YAML into it), prints one JSON line per object:
// {"kind", "name", "schema", "ok", "errors"}. The schemas are kubernetes-models' (the Kubernetes
// OpenAPI document it was generated from) and @kubernetes-models/prometheus-operator's (the
// operator's CRDs) in node_modules: `npm ci --prefix tests/deploy/schemas` once (scripts/setup.sh).
// Exit 0 when every object was checked (valid or not: the caller judges), 2 on bad input.
import { readFileSync } from "node:fs";

// apiVersion and kind -> the module of its model.
function modulePath(apiVersion, kind) {
  if (apiVersion.startsWith("monitoring.coreos.com/")) return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

async function check(obj) {
  const out = { kind: obj.kind, name: obj.metadata?.name ?? null, schema: modulePath(obj.apiVersion, obj.kind) };
  let Model;
  try {
    Model = (await import(out.schema))[obj.kind];
  } catch (e) {
    return { ...out, ok: false, errors: [`no schema for ${obj.apiVersion} ${obj.kind}: ${e.message}`] };
  }
  try {
    new Model(obj).validate();
    return { ...out, ok: true, errors: [] };
  } catch (e) {
    return { ...out, ok: false, errors: String(e.message).split(", ") };
  }
}

let objects;
try {
  objects = JSON.parse(readFileSync(0, "utf8"));
  if (!Array.isArray(objects)) throw new Error("not an array");
} catch (e) {
  console.error(`validate.mjs: stdin must be a JSON array of Kubernetes objects (${e.message})`);
  process.exit(2);
}
for (const obj of objects) console.log(JSON.stringify(await check(obj)));
