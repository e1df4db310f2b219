// Package signature signs and verifies webhook payloads ("t=<unix>,v1=<hex>").
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

var (
	ErrMalformed = errors.New("signature: malformed header")
	ErrExpired   = errors.New("signature: timestamp outside tolerance")
	ErrMismatch  = errors.New("signature: no matching signature")
)

// Header is a parsed Relay-Signature header.
type Header struct {
	Timestamp  time.Time
	Signatures [][]byte
}

// Sign returns the header value for body at time t.
func Sign(secret string, body []byte, t time.Time) string {
	return fmt.Sprintf("t=%d,v1=%s", t.Unix(), hex.EncodeToString(compute(secret, t.Unix(), body)))
}

func compute(secret string, ts int64, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return mac.Sum(nil)
}

// ParseHeader splits "t=...,v1=...,v1=..." into its parts.
func ParseHeader(value string) (Header, error) {
	var h Header
	for _, part := range strings.Split(value, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return h, ErrMalformed
		}
		switch key {
		case "t":
			ts, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return h, ErrMalformed
			}
			h.Timestamp = time.Unix(ts, 0)
		case "v1":
			sig, err := hex.DecodeString(val)
			if err != nil {
				return h, ErrMalformed
			}
			h.Signatures = append(h.Signatures, sig)
		}
	}
	if h.Timestamp.IsZero() || len(h.Signatures) == 0 {
		return h, ErrMalformed
	}
	return h, nil
}

// Verify checks header against body with any of secrets (several during rotation).
func Verify(secrets []string, header string, body []byte, tolerance time.Duration, now time.Time) error {
	h, err := ParseHeader(header)
	if err != nil {
		return err
	}
	if age := now.Sub(h.Timestamp); age > tolerance || age < -tolerance {
		return ErrExpired
	}
	for _, secret := range secrets {
		expected := compute(secret, h.Timestamp.Unix(), body)
		if hmac.Equal(expected, h.Signatures[0]) {
			return nil
		}
	}
	return ErrMismatch
}
