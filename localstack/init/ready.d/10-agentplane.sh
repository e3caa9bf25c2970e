#!/bin/bash
# LocalStack ready hook: creates what one agentplane region needs, with the
# shapes of the CDK stack (infra/stacks/region.go):
#   - the single DynamoDB table: pk/sk strings, on demand, the secondary
#     indexes gsi1..gsi5 on gsiNpk/gsiNsk (projection ALL; shared/kernel/store),
#     TTL on the attribute `ttl`, point-in-time recovery;
#   - the blob bucket (encrypted, public access blocked);
#   - the build queue with its dead-letter queue (5 receives);
#   - the KMS key for secrets, alias/agentplane-secrets.
# Idempotent: what exists is left as it is. LocalStack runs every
# executable *.sh of /etc/localstack/init/ready.d once it is ready;
# awslocal is the AWS CLI pointed at it.
set -euo pipefail

TABLE=${AGENTPLANE_TABLE:-agentplane}
BUCKET=${AGENTPLANE_BUCKET:-agentplane-blobs}
QUEUE=${AGENTPLANE_QUEUE:-agentplane-builds}
DLQ=${QUEUE}-dlq
KEY_ALIAS=alias/agentplane-secrets
# The secondary indexes, as shared/kernel/store.IndexNames lists them (an infra
# test keeps this line in step with it).
INDEXES="gsi1 gsi2 gsi3 gsi4 gsi5"
# Receives before a build message moves to the dead-letter queue, and the
# queue's visibility timeout (six times the build-worker's 120 s).
MAX_RECEIVES=5
VISIBILITY=720

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
# create-queue returns the existing queue when the attributes match.
dlq_url=$(awslocal sqs create-queue --queue-name "$DLQ" \
  --attributes MessageRetentionPeriod=1209600 --query QueueUrl --output text)
dlq_arn=$(awslocal sqs get-queue-attributes --queue-url "$dlq_url" \
  --attribute-names QueueArn --query Attributes.QueueArn --output text)
redrive="{\"deadLetterTargetArn\":\"$dlq_arn\",\"maxReceiveCount\":\"$MAX_RECEIVES\"}"
attrs=$(printf '{"VisibilityTimeout":"%s","MessageRetentionPeriod":"345600","RedrivePolicy":%s}' \
  "$VISIBILITY" "$(printf '%s' "$redrive" | sed 's/"/\\"/g; s/^/"/; s/$/"/')")
queue_url=$(awslocal sqs create-queue --queue-name "$QUEUE" --attributes "$attrs" \
  --query QueueUrl --output text)
log "queue $queue_url (dead letters: $dlq_url)"

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

log "ready: AGENTPLANE_TABLE=$TABLE AGENTPLANE_BUCKET=$BUCKET AGENTPLANE_QUEUE_URL=$queue_url AGENTPLANE_KMS_KEY_ID=$KEY_ALIAS"
