#!/bin/bash
# LocalStack ready hook: creates what one agentplane region needs, with the
# shapes of the CDK stack (infra/stacks/region.go):
#   - the single DynamoDB table: pk/sk strings, on demand, the secondary
#     indexes gsi1..gsi5 on gsiNpk/gsiNsk (projection ALL; shared/kernel/store),
#     TTL on the attribute `ttl`, point-in-time recovery;
#   - the blob bucket (encrypted, public access blocked);
#   - the KMS key for secrets, alias/agentplane-secrets;
#   - one queue per group that consumes topics, agentplane-<group>, with its
#     dead-letter queue agentplane-<group>-dlq (5 receives) and the visibility
#     timeout of the stack (six times the group's function timeout), read
#     from the layout `make synth` writes (cdk.out/agentplane.layout.json,
#     mounted at /opt/agentplane/cdk.out); without it no queue is created.
# Idempotent: what exists is left as it is. LocalStack runs every
# executable *.sh of /etc/localstack/init/ready.d once it is ready;
# awslocal is the AWS CLI pointed at it.
set -euo pipefail

TABLE=${AGENTPLANE_TABLE:-agentplane}
BUCKET=${AGENTPLANE_BUCKET:-agentplane-blobs}
LAYOUT=${AGENTPLANE_LAYOUT:-/opt/agentplane/cdk.out/agentplane.layout.json}
PREFIX=agentplane-
KEY_ALIAS=alias/agentplane-secrets
# The secondary indexes, as shared/kernel/store.IndexNames lists them (an infra
# test keeps this line in step with it).
INDEXES="gsi1 gsi2 gsi3 gsi4 gsi5"
# Receives before a message moves to its dead-letter queue (the stack's
# stacks.MaxReceives; an infra test keeps this line in step with it).
MAX_RECEIVES=5

log() { echo "agentplane-init: $*"; }

# --- DynamoDB -------------------------------------------------------------
if awslocal dynamodb describe-table --table-name "$TABLE" >/dev/null 2>&1; then
  log "table $TABLE exists"
else
  attrs='[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"}'
  gsis='['
  sep=''
  for ix in $INDEXES; do
    attrs+=",{\"AttributeName\":\"${ix}pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"${ix}sk\",\"AttributeType\":\"S\"}"
    gsis+="$sep{\"IndexName\":\"$ix\",\"KeySchema\":[{\"AttributeName\":\"${ix}pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"${ix}sk\",\"KeyType\":\"RANGE\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}"
    sep=','
  done
  attrs+=']'
  gsis+=']'
  awslocal dynamodb create-table \
    --table-name "$TABLE" \
    --billing-mode PAY_PER_REQUEST \
    --attribute-definitions "$attrs" \
    --key-schema '[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]' \
    --global-secondary-indexes "$gsis" >/dev/null
  awslocal dynamodb wait table-exists --table-name "$TABLE"
  log "table $TABLE created with $INDEXES"
fi
if out=$(awslocal dynamodb update-time-to-live --table-name "$TABLE" \
  --time-to-live-specification 'Enabled=true,AttributeName=ttl' 2>&1); then
  log "TTL on attribute ttl enabled"
elif grep -qi 'already enabled' <<<"$out"; then
  log "TTL on attribute ttl already enabled"
else
  log "WARNING: TTL not enabled: $out"
fi
# Point-in-time recovery has no effect on an emulator; set for parity.
awslocal dynamodb update-continuous-backups --table-name "$TABLE" \
  --point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null 2>&1 ||
  log "point-in-time recovery not supported here; skipped"

# --- S3 -------------------------------------------------------------------
if awslocal s3api head-bucket --bucket "$BUCKET" >/dev/null 2>&1; then
  log "bucket $BUCKET exists"
else
  if [[ ${AWS_DEFAULT_REGION:-us-east-1} == us-east-1 ]]; then
    awslocal s3api create-bucket --bucket "$BUCKET" >/dev/null
  else
    awslocal s3api create-bucket --bucket "$BUCKET" \
      --create-bucket-configuration "LocationConstraint=$AWS_DEFAULT_REGION" >/dev/null
  fi
  log "bucket $BUCKET created"
fi
awslocal s3api put-bucket-encryption --bucket "$BUCKET" \
  --server-side-encryption-configuration '{"Rules":[{"ApplyServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]}' >/dev/null
awslocal s3api put-public-access-block --bucket "$BUCKET" \
  --public-access-block-configuration 'BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true' >/dev/null

# --- SQS ------------------------------------------------------------------
# One queue per consuming group: "<group> <visibility seconds>" lines from
# the layout. create-queue returns the existing queue when the attributes
# match.
queues=""
if [[ -f $LAYOUT ]]; then
  queues=$(python3 - "$LAYOUT" <<'PY'
import json, sys
layout = json.load(open(sys.argv[1]))
for g in layout["groups"]:
    if g["consumes"]:
        print(g["name"], g["visibilitySeconds"])
PY
)
else
  log "WARNING: no $LAYOUT: run scripts/synth.sh (make synth) for the groups' queues"
fi
queue_urls=""
while read -r group visibility; do
  [[ -n $group ]] || continue
  dlq_url=$(awslocal sqs create-queue --queue-name "$PREFIX$group-dlq" \
    --attributes MessageRetentionPeriod=1209600 --query QueueUrl --output text)
  dlq_arn=$(awslocal sqs get-queue-attributes --queue-url "$dlq_url" \
    --attribute-names QueueArn --query Attributes.QueueArn --output text)
  redrive="{\"deadLetterTargetArn\":\"$dlq_arn\",\"maxReceiveCount\":\"$MAX_RECEIVES\"}"
  attrs=$(printf '{"VisibilityTimeout":"%s","MessageRetentionPeriod":"345600","RedrivePolicy":%s}' \
    "$visibility" "$(printf '%s' "$redrive" | sed 's/"/\\"/g; s/^/"/; s/$/"/')")
  queue_url=$(awslocal sqs create-queue --queue-name "$PREFIX$group" --attributes "$attrs" \
    --query QueueUrl --output text)
  queue_urls+=" $group=$queue_url"
  log "queue of $group: $queue_url (visibility ${visibility}s; dead letters: $dlq_url)"
done <<<"$queues"

# --- KMS ------------------------------------------------------------------
if key_id=$(awslocal kms describe-key --key-id "$KEY_ALIAS" --query KeyMetadata.KeyId --output text 2>/dev/null); then
  log "key $KEY_ALIAS exists ($key_id)"
else
  key_id=$(awslocal kms create-key --description "agentplane: envelope key for deployment secrets" \
    --query KeyMetadata.KeyId --output text)
  awslocal kms create-alias --alias-name "$KEY_ALIAS" --target-key-id "$key_id"
  awslocal kms enable-key-rotation --key-id "$key_id" >/dev/null 2>&1 || true
  log "key $KEY_ALIAS created ($key_id)"
fi

log "ready: AGENTPLANE_TABLE=$TABLE AGENTPLANE_BUCKET=$BUCKET AGENTPLANE_KMS_KEY_ID=$KEY_ALIAS queues:${queue_urls:- none}"
