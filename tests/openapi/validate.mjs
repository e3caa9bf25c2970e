// Validates an OpenAPI document (file argument) against the OpenAPI 3.1
// schema, and resolves every $ref; exits non-zero with the errors.
import { Validator } from "@seriousme/openapi-schema-validator";
import { readFileSync } from "node:fs";

const doc = JSON.parse(readFileSync(process.argv[2], "utf8"));
const validator = new Validator();
const res = await validator.validate(doc);
if (!res.valid) {
  console.error(JSON.stringify(res.errors, null, 2).slice(0, 4000));
  process.exit(1);
}
if (validator.version !== "3.1") {
  console.error("validated as OpenAPI " + validator.version + ", want 3.1");
  process.exit(1);
}
const resolved = validator.resolveRefs();
if (!resolved || !resolved.paths) {
  console.error("$refs do not resolve");
  process.exit(1);
}
console.log("valid OpenAPI " + validator.version + ": " + Object.keys(doc.paths).length + " paths");
