#!/bin/bash
# LocalStack ready hook, opt-in (AGENTPLANE_LOCALSTACK_FUNCTIONS=1): deploys
# one Lambda function per route group from dist/ (mounted at
# /opt/agentplane/dist), the way the CDK stack wires them, from the layout
# `make synth` writes (cdk.out/agentplane.layout.json, mounted at
# /opt/agentplane/cdk.out):
#   - agentplane-<group>, with the group's timeout and the configuration of
#     the stack: AGENTPLANE_TOPICS with exactly the topics it publishes (each
#     to its consuming group's queue), the bucket only when it uses blobs,
#     the KMS key only when it handles secrets, the state machines only when
#     it starts workflows; a group with its own host (the tool server) gets
#     no data at all, only AGENTPLANE_MCP_ENDPOINT;
#   - for each group that consumes topics, an event source mapping from its
#     own queue (made by 10-agentplane.sh), batch 10, partial batch failures;
#   - for each group that sweeps, an EventBridge rule every minute onto its
#     function, without retries;
#   - each workflow's state machine from the exported ASL (cdk.out/asl),
#     its tasks invoking the function of the group that runs its steps.
# Runs after 10-agentplane.sh.
#
# Differences from the stack, on purpose: a CodeBuild step runs as a Lambda
# task of its runner's function (LocalStack's free image has no CodeBuild);
# API Gateway is not created (call the functions with `awslocal lambda
# invoke`, or use `sam local start-api`, see README.md); IAM is not
# enforced, so the per-function policies are not exercised here; there is no
# VPC, NAT, load balancer, web ACL or CloudFront; the region is one (no
# peer link, no forwarding of usage to another region).
set -euo pipefail
[[ ${AGENTPLANE_LOCALSTACK_FUNCTIONS:-0} == 1 ]] || exit 0

DIST=${AGENTPLANE_DIST:-/opt/agentplane/dist}
ASL_DIR=${AGENTPLANE_ASL_DIR:-/opt/agentplane/cdk.out/asl}
LAYOUT=${AGENTPLANE_LAYOUT:-/opt/agentplane/cdk.out/agentplane.layout.json}
REGION=${AWS_DEFAULT_REGION:-us-east-1}
ACCOUNT=000000000000
TABLE=${AGENTPLANE_TABLE:-agentplane}
BUCKET=${AGENTPLANE_BUCKET:-agentplane-blobs}
ARCH=${AGENTPLANE_LAMBDA_ARCH:-arm64}
PREFIX=agentplane-
ROLE_ARN=arn:aws:iam::$ACCOUNT:role/${PREFIX}lambda
# The functions reach LocalStack by its container name on the compose network.
ENDPOINT=${AGENTPLANE_LOCALSTACK_ENDPOINT:-http://agentplane-localstack:4566}
# The platform API the tool server calls when a caller names none. The
# hosted tool server refuses loopback and private addresses, so it must be
# a public https URL (the stack's default is its region's API host).
MCP_ENDPOINT=${AGENTPLANE_MCP_ENDPOINT:-https://api.us.example.com}

log() { echo "agentplane-functions: $*"; }

if [[ ! -f $LAYOUT ]]; then
  log "no $LAYOUT: run scripts/synth.sh (make synth) first"
  exit 1
fi

# LocalStack does not enforce IAM; the roles only have to exist.
for role in lambda states events; do
  awslocal iam get-role --role-name "$PREFIX$role" >/dev/null 2>&1 ||
    awslocal iam create-role --role-name "$PREFIX$role" \
      --assume-role-policy-document "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"Service\":\"$role.amazonaws.com\"},\"Action\":\"sts:AssumeRole\"}]}" >/dev/null
done

# One line per group: name, timeout, whether it consumes and sweeps, and
# its environment as JSON (JSON, not the CLI's shorthand: some values are
# JSON themselves).
plan=$(python3 - "$LAYOUT" "$REGION" "$ACCOUNT" "$TABLE" "$BUCKET" "$ENDPOINT" "$PREFIX" "$MCP_ENDPOINT" <<'PY'
import json, sys
path, region, account, table, bucket, endpoint, prefix, mcp_endpoint = sys.argv[1:9]
layout = json.load(open(path))
queue = lambda group: "%s/%s/%s%s" % (endpoint, account, prefix, group)
machine = lambda wf: "arn:aws:states:%s:%s:stateMachine:%s%s" % (region, account, prefix, wf)
for g in layout["groups"]:
    if not g["store"]:
        # A group with its own host (the tool server) is a client of the
        # platform API: no table, bucket, queue or key, as in the stack.
        env = {
            "AGENTPLANE_MODE": "aws", "AGENTPLANE_REGION_NAME": "us", "AGENTPLANE_LOG_LEVEL": "debug",
            "AGENTPLANE_MCP_ENDPOINT": mcp_endpoint,
        }
        print(g["name"], g["timeoutSeconds"], int(bool(g["consumes"])), int(g["sweeps"]),
              json.dumps({"Variables": env}, separators=(",", ":")))
        continue
    env = {
        "AGENTPLANE_MODE": "aws", "AGENTPLANE_REGION_NAME": "us",
        "AGENTPLANE_TABLE": table,
        "AGENTPLANE_BASE_URL": "http://localhost:4566", "AGENTPLANE_LOG_LEVEL": "debug",
        "AGENTPLANE_S3_PATH_STYLE": "true", "AWS_ENDPOINT_URL": endpoint,
    }
    if g["blobs"]:
        env["AGENTPLANE_BUCKET"] = bucket
    if g["topics"]:
        env["AGENTPLANE_TOPICS"] = json.dumps({t: queue(c) for t, c in sorted(g["topics"].items())})
    if g["secrets"]:
        env["AGENTPLANE_KMS_KEY_ID"] = "alias/agentplane-secrets"
    if g["startsWorkflows"]:
        env["AGENTPLANE_STATE_MACHINES"] = json.dumps({w: machine(w) for w in g["startsWorkflows"]})
    print(g["name"], g["timeoutSeconds"], int(bool(g["consumes"])), int(g["sweeps"]),
          json.dumps({"Variables": env}, separators=(",", ":")))
PY
)

while read -r group timeout consumes sweeps env_json; do
  [[ -n $group ]] || continue
  name=$PREFIX$group
  zip=$DIST/$group.zip
  if [[ ! -f $zip ]]; then
    log "no $zip: run scripts/build-lambdas.sh (make build) first"
    exit 1
  fi
  if awslocal lambda get-function --function-name "$name" >/dev/null 2>&1; then
    awslocal lambda update-function-code --function-name "$name" --zip-file "fileb://$zip" >/dev/null
    awslocal lambda wait function-updated-v2 --function-name "$name" 2>/dev/null || true
    awslocal lambda update-function-configuration --function-name "$name" --timeout "$timeout" \
      --environment "$env_json" >/dev/null
    log "updated $name"
  else
    awslocal lambda create-function --function-name "$name" \
      --runtime provided.al2023 --architectures "$ARCH" --handler bootstrap \
      --role "$ROLE_ARN" --zip-file "fileb://$zip" --timeout "$timeout" --memory-size 512 \
      --environment "$env_json" >/dev/null
    log "created $name ($ARCH, ${timeout}s)"
  fi
  awslocal lambda wait function-active-v2 --function-name "$name"

  # Its own queue, with partial batch failures as in the stack.
  if [[ $consumes == 1 ]]; then
    queue_arn=arn:aws:sqs:$REGION:$ACCOUNT:$PREFIX$group
    existing=$(awslocal lambda list-event-source-mappings --function-name "$name" \
      --event-source-arn "$queue_arn" --query 'EventSourceMappings[0].UUID' --output text)
    if [[ -z $existing || $existing == None ]]; then
      awslocal lambda create-event-source-mapping --function-name "$name" \
        --event-source-arn "$queue_arn" --batch-size 10 \
        --function-response-types ReportBatchItemFailures >/dev/null
      log "$name consumes $PREFIX$group"
    fi
  fi

  # Its sweep: every minute, no retries, events older than a minute dropped.
  if [[ $sweeps == 1 ]]; then
    rule=${PREFIX}sweep-$group
    rule_arn=$(awslocal events put-rule --name "$rule" --schedule-expression 'rate(1 minute)' \
      --query RuleArn --output text)
    awslocal lambda add-permission --function-name "$name" --statement-id "$rule" \
      --action lambda:InvokeFunction --principal events.amazonaws.com --source-arn "$rule_arn" >/dev/null 2>&1 || true
    awslocal events put-targets --rule "$rule" --targets \
      "[{\"Id\":\"sweep\",\"Arn\":\"arn:aws:lambda:$REGION:$ACCOUNT:function:$name\",\"RetryPolicy\":{\"MaximumRetryAttempts\":0,\"MaximumEventAgeInSeconds\":60}}]" >/dev/null
    log "$rule runs $name every minute"
  fi
done <<<"$plan"

# The state machines: the exported ASL of the synthesized stack (any
# region's: they differ only in ARNs), with the runner's function ARN
# swapped in and CodeBuild tasks replaced by the same step as a Lambda task.
runners=$(python3 -c 'import json,sys; [print(w["name"], w["group"]) for w in json.load(open(sys.argv[1]))["workflows"]]' "$LAYOUT")
while read -r workflow group; do
  [[ -n $workflow ]] || continue
  asl=$(ls "$ASL_DIR"/*."$workflow".asl.json 2>/dev/null | head -n 1 || true)
  if [[ -z $asl ]]; then
    log "no $ASL_DIR/*.$workflow.asl.json: run scripts/synth.sh (make synth) for the state machine"
    continue
  fi
  machine=$PREFIX$workflow
  machine_arn=arn:aws:states:$REGION:$ACCOUNT:stateMachine:$machine
  fn_arn=arn:aws:lambda:$REGION:$ACCOUNT:function:$PREFIX$group
  definition=$(python3 - "$asl" "$fn_arn" "$workflow" <<'PY'
import json, sys
path, fn_arn, workflow = sys.argv[1:4]
d = json.load(open(path))
for name, st in d["States"].items():
    if st.get("Type") != "Task":
        continue
    if st["Resource"].startswith("arn:aws:states:::codebuild:"):
        # The payload of the Lambda steps (compose.StepPayload).
        st["Resource"] = "arn:aws:states:::lambda:invoke"
        st["Parameters"] = {"FunctionName": fn_arn,
                            "Payload": {"workflow": workflow, "step": name, "state.$": "$"}}
        st.pop("ResultSelector", None)
        st["OutputPath"] = "$.Payload"
        # In CodeBuild the binary retried transient errors itself; as a
        # Lambda task the state does (one more try, 5 s later).
        st["Retry"] = [{"ErrorEquals": ["Transient"], "IntervalSeconds": 5, "MaxAttempts": 1, "BackoffRate": 2}]
    elif "FunctionName" in st.get("Parameters", {}):
        st["Parameters"]["FunctionName"] = fn_arn
print(json.dumps(d))
PY
)
  if awslocal stepfunctions describe-state-machine --state-machine-arn "$machine_arn" >/dev/null 2>&1; then
    awslocal stepfunctions update-state-machine --state-machine-arn "$machine_arn" --definition "$definition" >/dev/null
    log "updated state machine $machine from $(basename "$asl") (steps in $PREFIX$group)"
  else
    awslocal stepfunctions create-state-machine --name "$machine" --definition "$definition" \
      --role-arn "arn:aws:iam::$ACCOUNT:role/${PREFIX}states" >/dev/null
    log "created state machine $machine from $(basename "$asl") (steps in $PREFIX$group)"
  fi
done <<<"$runners"
