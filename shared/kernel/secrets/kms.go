package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// kmsPrefix marks values sealed by a KMS keeper (format version 1).
const kmsPrefix = "k1:"

// KMSAPI is the part of the KMS client the keeper uses (*kms.Client).
type KMSAPI interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// KMS seals with envelope encryption: each Seal asks KMS for a fresh AES-256
// data key, encrypts locally with AES-GCM and stores the KMS-encrypted data
// key next to the ciphertext. The aad is also passed to KMS as encryption
// context, so KMS itself refuses to unwrap the key for another record (and
// CloudTrail shows which record a Decrypt was for).
type KMS struct {
	client KMSAPI
	keyID  string
}

var _ Keeper = (*KMS)(nil)

// NewKMS returns a keeper using the KMS key keyID (id, ARN or alias).
func NewKMS(client KMSAPI, keyID string) (*KMS, error) {
	if client == nil || keyID == "" {
		return nil, errors.New("secrets: KMS keeper needs a client and a key id")
	}
	return &KMS{client: client, keyID: keyID}, nil
}

func encryptionContext(aad string) map[string]string {
	return map[string]string{"agentplane": aad}
}

// Seal implements Keeper. The layout after the prefix is base64 of
// uint16 len(wrapped key) || wrapped key || nonce || ciphertext.
func (k *KMS) Seal(ctx context.Context, plaintext []byte, aad string) (string, error) {
	if len(plaintext) > MaxPlaintext {
		return "", ErrTooLarge
	}
	out, err := k.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             aws.String(k.keyID),
		KeySpec:           types.DataKeySpecAes256,
		EncryptionContext: encryptionContext(aad),
	})
	if err != nil {
		return "", fmt.Errorf("secrets: KMS GenerateDataKey: %w", err)
	}
	if len(out.Plaintext) != 32 || len(out.CiphertextBlob) == 0 || len(out.CiphertextBlob) > 0xffff {
		return "", errors.New("secrets: KMS returned an unusable data key")
	}
	aead, err := gcm(out.Plaintext)
	clear(out.Plaintext)
	if err != nil {
		return "", err
	}
	buf := binary.BigEndian.AppendUint16(nil, uint16(len(out.CiphertextBlob)))
	buf = append(buf, out.CiphertextBlob...)
	buf = append(buf, sealGCM(aead, plaintext, aad)...)
	return kmsPrefix + base64.RawStdEncoding.EncodeToString(buf), nil
}

// Open implements Keeper.
func (k *KMS) Open(ctx context.Context, sealed string, aad string) ([]byte, error) {
	raw, ok := strings.CutPrefix(sealed, kmsPrefix)
	if !ok {
		return nil, ErrCorrupt
	}
	b, err := base64.RawStdEncoding.DecodeString(raw)
	if err != nil || len(b) < 2 {
		return nil, ErrCorrupt
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b) < 2+n {
		return nil, ErrCorrupt
	}
	out, err := k.client.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:    b[2 : 2+n],
		KeyId:             aws.String(k.keyID),
		EncryptionContext: encryptionContext(aad),
	})
	if err != nil {
		var invalid *types.InvalidCiphertextException
		if errors.As(err, &invalid) {
			return nil, ErrCorrupt
		}
		return nil, fmt.Errorf("secrets: KMS Decrypt: %w", err)
	}
	aead, err := gcm(out.Plaintext)
	clear(out.Plaintext)
	if err != nil {
		return nil, ErrCorrupt
	}
	return openGCM(aead, b[2+n:], aad)
}

func gcm(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
