package compose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/ratelimits"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/awsenv"
	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/sqsqueue"
	"github.com/agentplane/agentplane/shared/kernel/queue/storequeue"
	"github.com/agentplane/agentplane/shared/kernel/secrets"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/store/dynamostore"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// Platform is what every module is built from: the adapters of the mode the
// process runs in, and the identity service that authenticates requests.
type Platform struct {
	Config   Config
	Log      *slog.Logger
	Store    store.Store
	Blobs    blobs.Bucket
	Queue    *Publisher
	Identity *identity.Service
	// AWS is the SDK configuration (AWS mode only).
	AWS *aws.Config
	// Region is this process's hosted region and its link to the other
	// region (nil in self-hosted installations, to which the hosted
	// regions do not apply).
	Region *regions.Region
	// Limits counts every request against the interface's rate-limit
	// table (disabled unless configured).
	Limits *ratelimits.Service
	// Workflows starts workflow executions. Locally it is the in-process
	// runner (ready once every module's definitions are known); in AWS a
	// group that starts workflows opens Step Functions itself
	// (OpenStepFunctions), so other functions do not link that client.
	Workflows workflow.Starter
	// Changes tells the caches of this process's modules which records
	// their writers changed (in-process invalidation).
	Changes *Changes

	local   *localQueue
	starter *lazyStarter
	closers []func() error
}

// NewLogger returns the JSON logger at cfg.LogLevel.
func NewLogger(cfg Config) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// Open opens the adapters of cfg.Mode.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Platform, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = NewLogger(cfg)
	}
	p := &Platform{Config: cfg, Log: log, Changes: &Changes{}}
	var err error
	switch cfg.Mode {
	case ModeLocal:
		err = p.openLocal()
	case ModeAWS:
		err = p.openAWS(ctx)
	default:
		err = fmt.Errorf("compose: unknown mode %q", cfg.Mode)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	p.Identity = identity.New(p.Store)
	p.Identity.SetKeyCacheTTL(cfg.CacheFor())
	if err := p.openRegion(); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.openLimits(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Platform) openLocal() error {
	if err := os.MkdirAll(p.Config.DataDir, 0o700); err != nil {
		return err
	}
	// Zero is boltstore's default size, negative off: as in Config.
	cache := int64(p.Config.StoreCacheMB) << 20
	st, err := boltstore.OpenWith(filepath.Join(p.Config.DataDir, "agentplane.db"), boltstore.Options{CacheBytes: cache})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	p.Store = st
	p.closers = append(p.closers, st.Close)
	// Partial uploads go to a private folder inside the data folder (same
	// file system, so they rename into place), never to the system's.
	bucket, err := blobs.NewDir(filepath.Join(p.Config.DataDir, "blobs"), filepath.Join(p.Config.DataDir, "tmp", "blobs"))
	if err != nil {
		return fmt.Errorf("open blobs: %w", err)
	}
	p.Blobs = bucket
	p.closers = append(p.closers, bucket.Close)
	// The local queue lives in the store: a message is on disk before
	// Enqueue returns, and survives a crash or restart.
	q, err := storequeue.New(p.Store, "local", queue.Options{Logger: p.Log, RetryDelay: time.Second})
	if err != nil {
		return fmt.Errorf("open queue: %w", err)
	}
	p.local = &localQueue{q: q}
	p.Queue = &Publisher{send: func(ctx context.Context, _ string, body []byte) error { return p.local.q.Send(ctx, body) }}
	p.starter = &lazyStarter{}
	p.Workflows = p.starter
	return nil
}

func (p *Platform) openAWS(ctx context.Context) error {
	awsCfg, err := awsenv.Load(os.Getenv)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	p.AWS = &awsCfg
	p.Store = dynamostore.New(dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if e := awsenv.Endpoint(os.Getenv, "DYNAMODB"); e != "" {
			o.BaseEndpoint = &e
		}
	}), p.Config.Table)
	p.closers = append(p.closers, p.Store.Close)
	// Functions whose group uses no blobs get no bucket (and no grant).
	if p.Config.Bucket != "" {
		bucket, err := blobs.OpenS3(awsCfg, p.Config.Bucket, blobs.S3Options{Endpoint: awsenv.Endpoint(os.Getenv, "S3"), PathStyle: p.Config.S3PathStyle})
		if err != nil {
			return fmt.Errorf("open bucket: %w", err)
		}
		p.Blobs = bucket
		p.closers = append(p.closers, bucket.Close)
	}
	queues := map[string]*sqsqueue.Queue{}
	if len(p.Config.Topics) > 0 {
		client := sqsqueue.NewClient(awsCfg, awsenv.Endpoint(os.Getenv, "SQS"))
		for topic, url := range p.Config.Topics {
			queues[topic] = sqsqueue.New(client, url, queue.Options{Logger: p.Log})
		}
	}
	p.Queue = &Publisher{send: func(ctx context.Context, topic string, body []byte) error {
		q, ok := queues[topic]
		if !ok {
			return fmt.Errorf("compose: no queue for topic %s (AGENTPLANE_TOPICS)", topic)
		}
		return q.Send(ctx, body)
	}}
	p.Workflows = unavailableStarter{}
	return nil
}

// openRegion sets up the hosted region: identity creates organizations in
// it and answers credentials of the other region's organizations with that
// region's address. Self-hosted installations are region-unaware.
func (p *Platform) openRegion() error {
	p.Identity.SetOperatorTokenHash(p.Config.OperatorTokenHash)
	if p.Config.SelfHosted {
		return nil
	}
	r, err := regions.New(p.Config.Regions, regions.Options{Logger: p.Log})
	if err != nil {
		return err
	}
	p.Region = r
	p.Identity.SetRegion(r)
	return nil
}

// QueueIn returns a publisher that sends every topic to one SQS queue of
// another AWS region (the billing home's billing queue, from a region that
// is not it). AWS mode only.
func (p *Platform) QueueIn(awsRegion, url string) (*Publisher, error) {
	if p.AWS == nil {
		return nil, errors.New("compose: a queue of another AWS region needs aws mode")
	}
	if awsRegion == "" || url == "" {
		return nil, errors.New("compose: a queue of another AWS region needs its URL and region")
	}
	cfg := p.AWS.Copy()
	cfg.Region = awsRegion
	q := sqsqueue.New(sqsqueue.NewClient(cfg, ""), url, queue.Options{Logger: p.Log})
	return &Publisher{send: func(ctx context.Context, _ string, body []byte) error { return q.Send(ctx, body) }}, nil
}

// openLimits builds the rate limiter: exact in memory locally (one
// process), DynamoDB conditional counters shared by every function in AWS.
func (p *Platform) openLimits() error {
	var lim ratelimits.Limiter
	if p.Config.RateLimits.Enabled {
		if p.Config.Mode == ModeAWS {
			sl, err := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: p.Store})
			if err != nil {
				return err
			}
			lim = sl
		} else {
			lim = ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{})
		}
	}
	svc, err := ratelimits.New(ratelimits.Options{Config: p.Config.RateLimits, Limiter: lim, Logger: p.Log})
	if err != nil {
		return err
	}
	p.Limits = svc
	return nil
}

// Close releases the adapters.
func (p *Platform) Close() error {
	var errs []error
	for i := len(p.closers) - 1; i >= 0; i-- {
		errs = append(errs, p.closers[i]())
	}
	p.closers = nil
	return errors.Join(errs...)
}

// Keeper returns the secret keeper: a key file in the data directory
// locally, KMS envelope encryption in AWS. Only groups that seal or open
// secrets call it.
func (p *Platform) Keeper(ctx context.Context) (secrets.Keeper, error) {
	if p.Config.Mode == ModeLocal {
		return secrets.OpenLocal(filepath.Join(p.Config.DataDir, "keys"))
	}
	if p.Config.KMSKeyID == "" {
		return unavailableKeeper{}, nil
	}
	return secrets.NewKMS(kms.NewFromConfig(*p.AWS, func(o *kms.Options) {
		if e := awsenv.Endpoint(os.Getenv, "KMS"); e != "" {
			o.BaseEndpoint = &e
		}
	}), p.Config.KMSKeyID)
}

// unavailableKeeper refuses to handle secret values when AWS mode has no
// KMS key configured: deployments without secrets still work, and secrets
// are never stored unencrypted.
type unavailableKeeper struct{}

var errNoKMSKey = errors.New("secrets: AGENTPLANE_KMS_KEY_ID is not set, so secrets cannot be encrypted")

func (unavailableKeeper) Seal(context.Context, []byte, string) (string, error) {
	return "", errNoKMSKey
}
func (unavailableKeeper) Open(context.Context, string, string) ([]byte, error) {
	return nil, errNoKMSKey
}

// unavailableStarter is the AWS default: a group that starts workflows
// replaces it with Step Functions.
type unavailableStarter struct{}

func (unavailableStarter) Start(context.Context, string, string, workflow.State) error {
	return errors.New("compose: this function does not start workflows")
}

// Envelope is the queue message format: the topic routes it to a consumer.
type Envelope struct {
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
}

// Publisher sends topic messages: to the one in-process queue locally, to
// the consuming group's SQS queue in AWS (AGENTPLANE_TOPICS maps topics to
// queue URLs).
type Publisher struct {
	send func(ctx context.Context, topic string, body []byte) error
}

// Enqueue sends payload on topic (at least once to its consumer).
func (q *Publisher) Enqueue(ctx context.Context, topic string, payload any) error {
	p, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("compose: encode %s message: %w", topic, err)
	}
	body, err := json.Marshal(Envelope{Topic: topic, Payload: p})
	if err != nil {
		return err
	}
	return q.send(ctx, topic, body)
}

// localQueue is the local process's one queue for every topic.
type localQueue struct{ q *storequeue.Queue }

// lazyStarter lets modules hold a Starter before the local runner exists
// (the runner needs every module's definitions).
type lazyStarter struct {
	mu sync.RWMutex
	s  workflow.Starter
}

func (l *lazyStarter) Start(ctx context.Context, wf, id string, in workflow.State) error {
	l.mu.RLock()
	s := l.s
	l.mu.RUnlock()
	if s == nil {
		return errors.New("compose: workflows are not ready")
	}
	return s.Start(ctx, wf, id, in)
}

func (l *lazyStarter) set(s workflow.Starter) {
	l.mu.Lock()
	l.s = s
	l.mu.Unlock()
}
