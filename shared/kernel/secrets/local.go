package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// localPrefix marks values sealed by a Local keeper (format version 1).
const localPrefix = "l1:"

// KeyFileName is the key file inside the directory given to OpenLocal.
const KeyFileName = "secrets.key"

// Local seals with an AES-256-GCM key kept in a file (mode 0600). Losing the
// file makes every sealed value unreadable, so it is created once and never
// rotated implicitly.
type Local struct {
	aead cipher.AEAD
}

var _ Keeper = (*Local)(nil)

// OpenLocal loads the key from dir/secrets.key, creating the directory and a
// new random key when the file does not exist yet. Two processes starting at
// once agree on one key: the file is created exclusively and the loser reads
// the winner's key.
func OpenLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secrets: key directory: %w", err)
	}
	path := filepath.Join(dir, KeyFileName)
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err = createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: key file: %w", err)
	}
	return NewLocal(key)
}

func createKey(path string) ([]byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	// Written to a temporary file and linked into place, so no reader ever
	// sees a partial key and an existing key is never replaced.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secrets-key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return os.ReadFile(path)
		}
		return nil, err
	}
	return key, nil
}

// NewLocal returns a keeper over a 32-byte key.
func NewLocal(key []byte) (*Local, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secrets: key must be 32 bytes, not %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Local{aead: aead}, nil
}

// Seal implements Keeper.
func (l *Local) Seal(_ context.Context, plaintext []byte, aad string) (string, error) {
	if len(plaintext) > MaxPlaintext {
		return "", ErrTooLarge
	}
	return localPrefix + base64.RawStdEncoding.EncodeToString(sealGCM(l.aead, plaintext, aad)), nil
}

// Open implements Keeper.
func (l *Local) Open(_ context.Context, sealed string, aad string) ([]byte, error) {
	raw, ok := strings.CutPrefix(sealed, localPrefix)
	if !ok {
		return nil, ErrCorrupt
	}
	b, err := base64.RawStdEncoding.DecodeString(raw)
	if err != nil {
		return nil, ErrCorrupt
	}
	return openGCM(l.aead, b, aad)
}

// sealGCM returns nonce || ciphertext.
func sealGCM(aead cipher.AEAD, plaintext []byte, aad string) []byte {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, plaintext, []byte(aad))
}

func openGCM(aead cipher.AEAD, b []byte, aad string) ([]byte, error) {
	if len(b) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrCorrupt
	}
	out, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], []byte(aad))
	if err != nil {
		return nil, ErrCorrupt
	}
	return out, nil
}
