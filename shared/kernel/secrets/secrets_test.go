package secrets_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/secrets"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
)

func roundTrip(t *testing.T, k secrets.Keeper) {
	t.Helper()
	ctx := context.Background()
	for _, plain := range []string{"", "sk-live-123", strings.Repeat("x", 10000)} {
		sealed, err := k.Seal(ctx, []byte(plain), "dep-1/OPENAI_API_KEY")
		if err != nil {
			t.Fatal(err)
		}
		if plain != "" && strings.Contains(sealed, plain) {
			t.Fatal("sealed value contains the plaintext")
		}
		got, err := k.Open(ctx, sealed, "dep-1/OPENAI_API_KEY")
		if err != nil || string(got) != plain {
			t.Fatalf("open: %q %v", got, err)
		}
		// Bound to its context: another record cannot open it.
		if _, err := k.Open(ctx, sealed, "dep-2/OPENAI_API_KEY"); !errors.Is(err, secrets.ErrCorrupt) {
			t.Fatalf("open with other aad: %v", err)
		}
		// Tampering is detected.
		raw := []byte(sealed)
		raw[len(raw)-2] ^= 1
		if _, err := k.Open(ctx, string(raw), "dep-1/OPENAI_API_KEY"); err == nil {
			t.Fatal("tampered value opened")
		}
	}
	// Two seals of one value differ (fresh nonce, fresh data key).
	a, _ := k.Seal(ctx, []byte("v"), "c")
	b, _ := k.Seal(ctx, []byte("v"), "c")
	if a == b {
		t.Fatal("seals are deterministic")
	}
	if _, err := k.Seal(ctx, make([]byte, secrets.MaxPlaintext+1), "c"); !errors.Is(err, secrets.ErrTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	for _, junk := range []string{"", "nope", "l1:***", "k1:", "k1:AAAA", "l1:AAAA"} {
		if _, err := k.Open(ctx, junk, "c"); err == nil {
			t.Fatalf("junk %q opened", junk)
		}
	}
}

func TestLocalKeeper(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	k, err := secrets.OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, k)
	fi, err := os.Stat(filepath.Join(dir, secrets.KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", fi.Mode().Perm())
	}
	// Reopening uses the same key.
	sealed, _ := k.Seal(context.Background(), []byte("persist"), "c")
	k2, err := secrets.OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k2.Open(context.Background(), sealed, "c"); err != nil || string(got) != "persist" {
		t.Fatalf("reopen: %q %v", got, err)
	}
	// A different key cannot open it.
	k3, _ := secrets.OpenLocal(t.TempDir())
	if _, err := k3.Open(context.Background(), sealed, "c"); !errors.Is(err, secrets.ErrCorrupt) {
		t.Fatalf("other key: %v", err)
	}
}

// Concurrent first starts agree on one key.
func TestLocalKeyCreationRace(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	keepers := make([]*secrets.Local, 8)
	for i := range keepers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := secrets.OpenLocal(dir)
			if err != nil {
				t.Error(err)
			}
			keepers[i] = k
		}()
	}
	wg.Wait()
	sealed, _ := keepers[0].Seal(context.Background(), []byte("v"), "c")
	for _, k := range keepers[1:] {
		if _, err := k.Open(context.Background(), sealed, "c"); err != nil {
			t.Fatal("keepers disagree on the key")
		}
	}
	if _, err := secrets.NewLocal([]byte("short")); err == nil {
		t.Fatal("short key accepted")
	}
}

// fakeKMS speaks the KMS JSON protocol (GenerateDataKey, Decrypt) over HTTP,
// so the keeper is tested through the real SDK client and its wire format.
// It wraps data keys with its own AES-GCM master key, binding the
// encryption context as KMS does.
type fakeKMS struct {
	master cipher.AEAD
	mu     sync.Mutex
	calls  map[string]int
}

func newFakeKMS(t *testing.T) (*fakeKMS, *kms.Client) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	f := &fakeKMS{master: aead, calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := kms.New(kms.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, nil
		}),
		RetryMaxAttempts: 1,
	})
	return f, client
}

func ctxBytes(ec map[string]string) []byte { b, _ := json.Marshal(ec); return b }

func (f *fakeKMS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "TrentService.")
	f.mu.Lock()
	f.calls[op]++
	f.mu.Unlock()
	var in struct {
		KeyId             string
		KeySpec           string
		EncryptionContext map[string]string
		CiphertextBlob    []byte
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fail := func(typ string) {
		w.WriteHeader(400)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": typ})
	}
	switch op {
	case "GenerateDataKey":
		if in.KeyId != "alias/agentplane" || in.KeySpec != "AES_256" {
			fail("NotFoundException")
			return
		}
		dk := make([]byte, 32)
		_, _ = rand.Read(dk)
		nonce := make([]byte, 12)
		_, _ = rand.Read(nonce)
		wrapped := f.master.Seal(append([]byte(nil), nonce...), nonce, dk, ctxBytes(in.EncryptionContext))
		_ = json.NewEncoder(w).Encode(map[string]any{"KeyId": in.KeyId, "Plaintext": dk, "CiphertextBlob": wrapped})
	case "Decrypt":
		b := in.CiphertextBlob
		if len(b) < 12 {
			fail("InvalidCiphertextException")
			return
		}
		dk, err := f.master.Open(nil, b[:12], b[12:], ctxBytes(in.EncryptionContext))
		if err != nil {
			fail("InvalidCiphertextException")
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"KeyId": in.KeyId, "Plaintext": dk})
	default:
		fail("UnsupportedOperationException")
	}
}

func TestKMSKeeper(t *testing.T) {
	f, client := newFakeKMS(t)
	k, err := secrets.NewKMS(client, "alias/agentplane")
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, k)
	if f.calls["GenerateDataKey"] == 0 || f.calls["Decrypt"] == 0 {
		t.Fatalf("KMS not used: %v", f.calls)
	}
	// A local keeper's value is not a KMS value and vice versa.
	l, _ := secrets.OpenLocal(t.TempDir())
	ls, _ := l.Seal(context.Background(), []byte("v"), "c")
	if _, err := k.Open(context.Background(), ls, "c"); !errors.Is(err, secrets.ErrCorrupt) {
		t.Fatalf("local value opened by KMS keeper: %v", err)
	}
	// KMS errors surface as errors (not as corrupt values) so callers can retry.
	bad, _ := secrets.NewKMS(client, "alias/missing")
	if _, err := bad.Seal(context.Background(), []byte("v"), "c"); err == nil || errors.Is(err, secrets.ErrCorrupt) {
		t.Fatalf("seal with a missing key: %v", err)
	}
	if _, err := secrets.NewKMS(nil, ""); err == nil {
		t.Fatal("empty KMS keeper accepted")
	}
}
