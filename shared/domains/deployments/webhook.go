package deployments

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/agentplane/agentplane/shared/kernel/fault"
	"strings"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// SignatureHeader carries the HMAC-SHA256 of a webhook body, GitHub style:
// "sha256=" and the hex digest, keyed with the webhook secret.
const SignatureHeader = "X-Hub-Signature-256"

// EventHeader names the webhook event (push, ping, …).
const EventHeader = "X-GitHub-Event"

// VerifySignature checks a webhook signature in constant time.
func VerifySignature(secret string, body []byte, header string) bool {
	if secret == "" {
		return false
	}
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// Sign returns the signature header value of body (for clients and tests).
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

type pushRepository struct {
	CloneURL      string `json:"clone_url"`
	HTMLURL       string `json:"html_url"`
	SSHURL        string `json:"ssh_url"`
	GitURL        string `json:"git_url"`
	URL           string `json:"url"`
	DefaultBranch string `json:"default_branch"`
}

type pushEvent struct {
	Ref        string         `json:"ref"`
	After      string         `json:"after"`
	Deleted    bool           `json:"deleted"`
	Repository pushRepository `json:"repository"`
}

// TriggeredRevision is a revision a push created.
type TriggeredRevision struct {
	DeploymentID string `json:"deployment_id"`
	RevisionID   string `json:"revision_id"`
}

// WebhookResult is the answer to a webhook delivery.
type WebhookResult struct {
	Event     string              `json:"event"`
	Ignored   string              `json:"ignored,omitempty"`
	Revisions []TriggeredRevision `json:"revisions"`
}

// HandleWebhook processes a verified webhook delivery: a push to a branch
// creates a revision on every deployment built from that repository and
// branch with build_on_push true. Tag pushes and branch deletions never
// build.
func (s *Service) HandleWebhook(ctx context.Context, event string, body []byte) (WebhookResult, error) {
	res := WebhookResult{Event: event, Revisions: []TriggeredRevision{}}
	switch event {
	case "ping":
		return res, nil
	case "push":
	default:
		res.Ignored = "only push events build revisions"
		return res, nil
	}
	var ev pushEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return res, fault.Bad("The push event is not valid JSON: %s", err.Error())
	}
	branch, ok := strings.CutPrefix(ev.Ref, "refs/heads/")
	switch {
	case !ok:
		res.Ignored = "not a branch push (tags never build on push)"
		return res, nil
	case ev.Deleted:
		res.Ignored = "branch deleted"
		return res, nil
	}
	seen := map[string]bool{}
	for _, raw := range []string{ev.Repository.CloneURL, ev.Repository.HTMLURL, ev.Repository.SSHURL, ev.Repository.GitURL, ev.Repository.URL} {
		if raw == "" {
			continue
		}
		key := normalizeRepoURL(raw)
		if seen[key] {
			continue
		}
		seen[key] = true
		q := store.Query{Index: idxRepo, PK: "deprepo#" + key}
		for {
			page, err := s.st.Query(ctx, q)
			if err != nil {
				return res, err
			}
			for _, it := range page.Items {
				r, err := s.pushRevision(ctx, it.Key.PK[len("dep#"):], branch, ev.Repository.DefaultBranch)
				if err != nil {
					return res, apiError(err)
				}
				if r != nil {
					res.Revisions = append(res.Revisions, TriggeredRevision{DeploymentID: r.DeploymentID, RevisionID: r.ID})
				}
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
	}
	return res, nil
}

// pushRevision creates a revision of deployment id for a push to branch, if
// the deployment builds on push from that branch.
func (s *Service) pushRevision(ctx context.Context, id, branch, defaultBranch string) (*revision, error) {
	var created *revision
	err := retry(ctx, func() error {
		d, v, err := s.loadDeployment(ctx, id)
		if err != nil {
			if err == ErrDeploymentNotFound {
				return nil
			}
			return err
		}
		ref := deref(d.Current.RepoRef)
		if ref == "" {
			ref = defaultBranch
		}
		if d.Source != SourceRepoHost || d.Status == StatusAwaitingDelete || d.Config.BuildOnPush == nil ||
			!*d.Config.BuildOnPush || isTagRef(&ref) || ref != branch {
			return nil
		}
		now := s.now()
		cfg := d.Current
		cfg.RepoCommitSHA = nil
		sup, err := s.supersedeOp(ctx, d, now, "Superseded by a newer push")
		if err != nil {
			return err
		}
		r := s.newRevision(d, "push", cfg, now)
		if err := s.commitRevision(ctx, d, v, r, sup); err != nil {
			return err
		}
		created = r
		return nil
	})
	if err == nil && created != nil {
		s.enqueueBuild(ctx, created)
	}
	return created, err
}
