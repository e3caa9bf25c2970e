#!/bin/bash
# LocalStack ready hook, opt-in (AGENTPLANE_LOCALSTACK_FUNCTIONS=1): deploys
# the Lambda functions from dist/ (mounted at /opt/agentplane/dist), the
# build queue's consumer mapping and the build state machine from the
# exported ASL (cdk.out/asl, mounted at /opt/agentplane/cdk.out), the way
# the CDK stack wires them. Runs after 10-agentplane.sh.
#
# Differences from the stack, on purpose: the Build step runs as a Lambda
# task of build-step instead of a CodeBuild build (LocalStack's free image
# has no CodeBuild); API Gateway is not created (call the functions with
# `awslocal lambda invoke`, or use `sam local start-api`, see README.md).
set -euo pipefail
[[ ${AGENTPLANE_LOCALSTACK_FUNCTIONS:-0} == 1 ]] || exit 0

DIST=/opt/agentplane/dist
ASL_DIR=/opt/agentplane/cdk.out/asl
REGION=${AWS_DEFAULT_REGION:-us-east-1}
ACCOUNT=000000000000
TABLE=${AGENTPLANE_TABLE:-agentplane}
BUCKET=${AGENTPLANE_BUCKET:-agentplane-blobs}
QUEUE=${AGENTPLANE_QUEUE:-agentplane-builds}
ARCH=${AGENTPLANE_LAMBDA_ARCH:-arm64}
PREFIX=agentplane-
MACHINE=${PREFIX}build
ROLE_ARN=arn:aws:iam::$ACCOUNT:role/${PREFIX}lambda

log() { echo "agentplane-functions: $*"; }

shopt -s nullglob
zips=("$DIST"/*.zip)
if [[ ${#zips[@]} -eq 0 ]]; then
  log "no zips in $DIST: run scripts/build-lambdas.sh (make build) first"
  exit 1
fi

queue_url=$(awslocal sqs get-queue-url --queue-name "$QUEUE" --query QueueUrl --output text)
machine_arn=arn:aws:states:$REGION:$ACCOUNT:stateMachine:$MACHINE

# LocalStack does not enforce IAM; the role only has to exist.
awslocal iam get-role --role-name "${PREFIX}lambda" >/dev/null 2>&1 ||
  awslocal iam create-role --role-name "${PREFIX}lambda" \
    --assume-role-policy-document '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}' >/dev/null

# The functions reach LocalStack by its container name on the compose
# network. JSON, not the CLI's shorthand: AGENTPLANE_STATE_MACHINES is JSON.
env_json=$(python3 - "$TABLE" "$BUCKET" "$queue_url" "$machine_arn" <<'PY'
import json, sys
table, bucket, queue_url, machine = sys.argv[1:5]
print(json.dumps({"Variables": {
    "AGENTPLANE_MODE": "aws", "AGENTPLANE_REGION_NAME": "us",
    "AGENTPLANE_TABLE": table, "AGENTPLANE_BUCKET": bucket,
    "AGENTPLANE_QUEUE_URL": queue_url, "AGENTPLANE_KMS_KEY_ID": "alias/agentplane-secrets",
    "AGENTPLANE_S3_PATH_STYLE": "true",
    "AGENTPLANE_STATE_MACHINES": json.dumps({"build": machine}),
    "AGENTPLANE_BASE_URL": "http://localhost:4566", "AGENTPLANE_LOG_LEVEL": "debug",
    "AWS_ENDPOINT_URL": "http://agentplane-localstack:4566",
}}))
PY
)

for zip in "${zips[@]}"; do
  fn=$(basename "$zip" .zip)
  name=$PREFIX$fn
  timeout=29
  case $fn in
    build-worker) timeout=120 ;;
    build-step) timeout=900 ;;
    sweeper) timeout=300 ;;
  esac
  if awslocal lambda get-function --function-name "$name" >/dev/null 2>&1; then
    awslocal lambda update-function-code --function-name "$name" --zip-file "fileb://$zip" >/dev/null
    awslocal lambda wait function-updated-v2 --function-name "$name" 2>/dev/null || true
    awslocal lambda update-function-configuration --function-name "$name" --environment "$env_json" >/dev/null
    log "updated $name"
  else
    awslocal lambda create-function --function-name "$name" \
      --runtime provided.al2023 --architectures "$ARCH" --handler bootstrap \
      --role "$ROLE_ARN" --zip-file "fileb://$zip" --timeout "$timeout" --memory-size 512 \
      --environment "$env_json" >/dev/null
    log "created $name ($ARCH)"
  fi
done
awslocal lambda wait function-active-v2 --function-name "${PREFIX}build-step"

# The build queue's consumer, with partial batch failures as in the stack.
if [[ -z $(awslocal lambda list-event-source-mappings --function-name "${PREFIX}build-worker" --query 'EventSourceMappings[0].UUID' --output text | grep -v None) ]]; then
  awslocal lambda create-event-source-mapping --function-name "${PREFIX}build-worker" \
    --event-source-arn "arn:aws:sqs:$REGION:$ACCOUNT:$QUEUE" --batch-size 10 \
    --function-response-types ReportBatchItemFailures >/dev/null
  log "build-worker consumes $QUEUE"
fi

# The state machine: the exported ASL of the synthesized stack, with the
# build-step function's ARN swapped in and the CodeBuild task replaced by
# the same step as a Lambda task.
asl=$(ls "$ASL_DIR"/*.build.asl.json 2>/dev/null | head -n 1 || true)
if [[ -z $asl ]]; then
  log "no $ASL_DIR/*.build.asl.json: run scripts/synth.sh (make synth) for the state machine"
  exit 0
fi
step_arn=arn:aws:lambda:$REGION:$ACCOUNT:function:${PREFIX}build-step
definition=$(python3 - "$asl" "$step_arn" <<'PY'
import json, re, sys
path, step_arn = sys.argv[1], sys.argv[2]
d = json.load(open(path))
for name, st in d["States"].items():
    if st.get("Type") != "Task":
        continue
    if st["Resource"].startswith("arn:aws:states:::codebuild:"):
        # Same payload as the Lambda steps (shared/kernel/workflow/sfnstart).
        st["Resource"] = "arn:aws:states:::lambda:invoke"
        st["Parameters"] = {"FunctionName": step_arn,
                            "Payload": {"workflow": "build", "step": name, "state.$": "$"}}
        st.pop("ResultSelector", None)
        st["OutputPath"] = "$.Payload"
        # In CodeBuild the binary retried transient errors itself; as a
        # Lambda task the state does (the Build step: 2 attempts, 5 s).
        st["Retry"] = [{"ErrorEquals": ["Transient"], "IntervalSeconds": 5, "MaxAttempts": 1, "BackoffRate": 2}]
    elif "FunctionName" in st.get("Parameters", {}):
        st["Parameters"]["FunctionName"] = step_arn
print(json.dumps(d))
PY
)
if awslocal stepfunctions describe-state-machine --state-machine-arn "$machine_arn" >/dev/null 2>&1; then
  awslocal stepfunctions update-state-machine --state-machine-arn "$machine_arn" --definition "$definition" >/dev/null
  log "updated state machine $MACHINE from $(basename "$asl")"
else
  awslocal stepfunctions create-state-machine --name "$MACHINE" --definition "$definition" \
    --role-arn "arn:aws:iam::$ACCOUNT:role/${PREFIX}states" >/dev/null
  log "created state machine $MACHINE from $(basename "$asl")"
fi
