// Checks the synthesized agentplane stacks: cdk-nag's AwsSolutions pack
// over every cdk.out/*.template.json (imported with CfnInclude), then
// asl-validator over every cdk.out/asl/*.asl.json (written by aslexport).
// Exits 1 when a finding is not acknowledged (acknowledgements.js) or a
// state machine definition is invalid.
//
// Usage: node nag.js [cdk.out]
'use strict';

const fs = require('fs');
const path = require('path');
const { App, Stack, Validations } = require('aws-cdk-lib');
const { CfnInclude } = require('aws-cdk-lib/cloudformation-include');
const { AwsSolutionsChecks } = require('cdk-nag');
const aslValidator = require('asl-validator');
const acknowledgements = require('./acknowledgements');

const dir = path.resolve(process.argv[2] || path.join(__dirname, '..', '..', 'cdk.out'));

// findings lists "ruleId" + logical id pairs of a pack report.
function findings(report) {
  const out = [];
  for (const v of report.violations) {
    for (const r of v.violatingResources) {
      out.push({ id: v.ruleName, logicalId: r.resourceLogicalId || r.constructPath.split('/').pop(), path: r.constructPath, description: v.description });
    }
  }
  return out;
}

// Every acknowledgement must say why, in a sentence.
acknowledgements.forEach((a, i) => {
  if (!(a.finding instanceof RegExp) || !(a.resource instanceof RegExp) || typeof a.reason !== 'string' || a.reason.trim().length < 20) {
    throw new Error(`acknowledgement ${i} needs a finding pattern, a resource pattern and a reason`);
  }
});

function nag() {
  const templates = fs.readdirSync(dir).filter((f) => f.endsWith('.template.json')).sort();
  if (templates.length === 0) {
    throw new Error(`no templates in ${dir}: run scripts/synth.sh first`);
  }
  const used = new Map(); // acknowledgement index -> findings it covered
  let failures = 0;
  const app = new App();
  for (const file of templates) {
    const name = file.replace(/\.template\.json$/, '');
    const stack = new Stack(app, name);
    const include = new CfnInclude(stack, 'Template', { templateFile: path.join(dir, file) });
    const all = findings(new AwsSolutionsChecks(app).validateScope(stack));
    let acked = 0;
    for (const f of all) {
      const i = acknowledgements.findIndex((a) => a.finding.test(f.id) && a.resource.test(f.logicalId));
      if (i < 0) {
        continue;
      }
      used.set(i, (used.get(i) || 0) + 1);
      Validations.of(include.getResource(f.logicalId)).acknowledge({ id: f.id, reason: acknowledgements[i].reason });
      acked++;
    }
    // Run again: what is left is what no acknowledgement covers.
    const left = findings(new AwsSolutionsChecks(app).validateScope(stack));
    console.log(`cdk-nag ${name}: ${all.length} findings, ${acked} acknowledged, ${left.length} open`);
    for (const f of left) {
      console.log(`  OPEN ${f.id} on ${f.logicalId}: ${f.description.split('\n')[0]}`);
    }
    failures += left.length;
  }
  console.log('acknowledged findings (both stacks), with their reasons:');
  acknowledgements.forEach((a, i) => {
    if (!used.has(i)) {
      console.log(`  note: acknowledgement ${a.finding} on ${a.resource} matched nothing; remove it if the finding is gone`);
      return;
    }
    console.log(`  ${used.get(i)} x ${a.finding.source}: ${a.reason}`);
  });
  return failures;
}

function asl() {
  const aslDir = path.join(dir, 'asl');
  const files = fs.existsSync(aslDir) ? fs.readdirSync(aslDir).filter((f) => f.endsWith('.asl.json')).sort() : [];
  if (files.length === 0) {
    throw new Error(`no ASL files in ${aslDir}: run scripts/synth.sh (it exports them)`);
  }
  let failures = 0;
  for (const file of files) {
    const definition = JSON.parse(fs.readFileSync(path.join(aslDir, file), 'utf8'));
    const { isValid, errorsText } = aslValidator(definition);
    const states = Object.keys(definition.States || {}).length;
    if (isValid) {
      console.log(`asl-validator ${file}: valid (${states} states)`);
    } else {
      console.log(`asl-validator ${file}: INVALID\n  ${errorsText('\n  ')}`);
      failures++;
    }
  }
  return failures;
}

try {
  const failures = nag() + asl();
  if (failures > 0) {
    console.error(`infra checks: ${failures} problem(s)`);
    process.exit(1);
  }
  console.log('infra checks: ok');
} catch (err) {
  console.error(`infra checks: ${err.message}`);
  process.exit(2);
}
