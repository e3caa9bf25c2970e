package deployments

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/secrets"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
)

func TestNormalizeRepoURL(t *testing.T) {
	same := []string{
		"https://github.com/acme/agent", "https://github.com/acme/agent.git", "https://GitHub.com/acme/agent/",
		"git@github.com:acme/agent.git", "ssh://git@github.com/acme/agent.git", "git://github.com/acme/agent.git",
		"http://github.com/acme/agent",
	}
	for _, u := range same {
		if got := normalizeRepoURL(u); got != "github.com/acme/agent" {
			t.Errorf("%s → %s", u, got)
		}
	}
	for _, u := range []string{"/tmp/repo", "/tmp/repo/", "file:///tmp/repo", "file:///tmp/repo/.git", "/tmp/repo/.git"} {
		if got := normalizeRepoURL(u); got != "file:/tmp/repo" {
			t.Errorf("%s → %s", u, got)
		}
	}
	if normalizeRepoURL("https://github.com/acme/agent") == normalizeRepoURL("https://github.com/acme/agent2") {
		t.Error("different repositories collide")
	}
}

func TestCheckRepoURL(t *testing.T) {
	for u, want := range map[string][2]bool{ // [local ok, hosted ok]
		"https://github.com/acme/agent":        {true, true},
		"https://github.com:8443/acme/agent":   {true, true},
		"https://github.com:65535/acme/agent":  {true, true},
		"https://github.com:1/acme/agent":      {true, true},
		"https://github.com:99999/acme/agent":  {false, false},
		"https://github.com:65536/acme/agent":  {false, false},
		"https://github.com:0/acme/agent":      {false, false},
		"https://github.com:/acme/agent":       {false, false},
		"http://127.0.0.1:99999/acme/agent":    {false, false},
		"https://github.com/acme/\u202eagent":  {false, false},
		"http://github.com/acme/agent":         {true, false},
		"/srv/git/agent":                       {true, false},
		"file:///srv/git/agent":                {true, false},
		"file://otherhost/srv/git/agent":       {false, false},
		"file:///srv/../etc":                   {false, false},
		"/srv/./git":                           {false, false},
		"https://user:pw@github.com/acme/a":    {false, false},
		"https://github.com/acme/a?x=1":        {false, false},
		"ssh://git@github.com/acme/a":          {false, false},
		"git@github.com:acme/a.git":            {false, false},
		"relative/path":                        {false, false},
		"https://127.0.0.1/a":                  {true, false},
		"https://[fd00::1]/a":                  {true, false},
		"https://LOCALHOST./a":                 {true, false},
		"https://api.localhost/a":              {true, false},
		"https:///nohost":                      {false, false},
		"https://github.com/acme/agent with s": {false, false},
		"":                                     {false, false},
	} {
		if got := CheckRepoURL(u, true) == ""; got != want[0] {
			t.Errorf("local %q: %v (%s)", u, got, CheckRepoURL(u, true))
		}
		if got := CheckRepoURL(u, false) == ""; got != want[1] {
			t.Errorf("hosted %q: %v (%s)", u, got, CheckRepoURL(u, false))
		}
	}
}

func TestVerifySignature(t *testing.T) {
	body := []byte(`{"ref":"refs/heads/main"}`)
	sig := Sign("s3cret", body)
	if !VerifySignature("s3cret", body, sig) || !VerifySignature("s3cret", body, " "+sig+" ") {
		t.Fatal("valid signature refused")
	}
	for _, bad := range []string{"", "sha256=", "sha256=zz", sig[:len(sig)-2], "sha1=" + sig[7:]} {
		if VerifySignature("s3cret", body, bad) {
			t.Fatalf("accepted %q", bad)
		}
	}
	if VerifySignature("", body, Sign("", body)) {
		t.Fatal("an empty secret verifies")
	}
}

// purger is a queue whose first deployment-deleted event cannot be sent.
type purger struct{ calls atomic.Int64 }

func (p *purger) Enqueue(_ context.Context, topic string, payload any) error {
	if topic != TopicDeleted {
		return nil
	}
	if m, ok := payload.(DeletedMessage); !ok || m.DeploymentID == "" || m.WorkspaceID == "" {
		return errors.New("malformed deployment-deleted event")
	}
	if p.calls.Add(1) == 1 {
		return errors.New("queue unavailable")
	}
	return nil
}

// Purge announces the deletion (the threads domain removes the
// deployment's threads) before removing anything; if the announcement
// cannot be sent the purge fails (and is retried by the queue) with nothing
// removed yet.
func TestPurgeAnnouncesDeletion(t *testing.T) {
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bucket, err := blobs.NewDir(filepath.Join(dir, "blobs"), filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	keeper, _ := secrets.OpenLocal(t.TempDir())
	p := &purger{}
	svc, err := New(Options{Store: st, Blobs: bucket, Queue: p, Keeper: keeper, ExternalContainer: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	img := "ghcr.io/acme/agent:1"
	d, err := svc.Create(ctx, "ws-1", DeploymentRequest{Name: strPtrAlways("purge-me"), Source: strPtrAlways("external_container"),
		SourceConfig: &SourceConfig{}, SourceRevisionConfig: &SourceRevisionConfig{ImageURI: &img}, Secrets: &[]secretIn{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendLog(ctx, d.ID, *d.LatestRevisionID, "Test", "line"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Delete(ctx, "ws-1", d.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := svc.Purge(ctx, d.ID); err == nil {
		t.Fatal("purge succeeded although the deletion could not be announced")
	}
	if _, err := svc.Get(ctx, "ws-1", d.ID); err != nil {
		t.Fatalf("deployment removed before its deletion was announced: %v", err)
	}
	if err := svc.Purge(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, "ws-1", d.ID); err == nil {
		t.Fatal("deployment still there")
	}
	if ok, _ := bucket.Exists(ctx, LogKey(d.ID, *d.LatestRevisionID)); ok {
		t.Fatal("build log left behind")
	}
	// Nor are the folders that held its blobs.
	if entries, err := os.ReadDir(filepath.Join(dir, "blobs")); err != nil || len(entries) != 0 {
		t.Fatalf("blob folders left behind: %v %v", entries, err)
	}
	if p.calls.Load() != 2 {
		t.Fatalf("deletion announced %d times", p.calls.Load())
	}
	// A deployment that is not being deleted is never purged.
	d2, _ := svc.Create(ctx, "ws-1", DeploymentRequest{Name: strPtrAlways("keep-me"), Source: strPtrAlways("external_container"),
		SourceConfig: &SourceConfig{}, SourceRevisionConfig: &SourceRevisionConfig{ImageURI: &img}, Secrets: &[]secretIn{}})
	if err := svc.Purge(ctx, d2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, "ws-1", d2.ID); err != nil {
		t.Fatalf("live deployment purged: %v", err)
	}
}
