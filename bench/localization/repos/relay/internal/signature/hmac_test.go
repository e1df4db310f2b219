package signature

import (
	"errors"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	now := time.Unix(1712345678, 0)
	h := Sign("k", []byte("body"), now)
	if err := Verify([]string{"k"}, h, []byte("body"), time.Minute, now); err != nil {
		t.Fatal(err)
	}
}

func TestExpired(t *testing.T) {
	now := time.Unix(1712345678, 0)
	h := Sign("k", []byte("body"), now.Add(-10*time.Minute))
	if err := Verify([]string{"k"}, h, []byte("body"), 5*time.Minute, now); !errors.Is(err, ErrExpired) {
		t.Fatalf("err = %v, want ErrExpired", err)
	}
}

func TestParseHeaderRejectsGarbage(t *testing.T) {
	if _, err := ParseHeader("nonsense"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
}
