// Package delivery sends queued webhooks to subscribers with retries.
package delivery

import (
	"math/rand"
	"net/http"
	"strconv"
	"time"
)

// Policy decides whether and when a failed delivery is retried.
type Policy struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
	Rand        *rand.Rand
}

// Outcome classifies one delivery attempt.
type Outcome int

const (
	Delivered Outcome = iota
	Retry
	DeadLetter
)

// Classify maps an attempt's result to an outcome (see docs/operations.md).
func (p Policy) Classify(attempt int, resp *http.Response, err error) Outcome {
	if err == nil && resp.StatusCode < 300 {
		return Delivered
	}
	if attempt >= p.MaxAttempts {
		return DeadLetter
	}
	if err != nil {
		return Retry
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusRequestTimeout:
		return Retry
	case resp.StatusCode >= 500:
		return Retry
	default:
		return DeadLetter
	}
}

// NextDelay is the backoff before attempt+1: base*2^(attempt-1), capped, with full jitter.
func (p Policy) NextDelay(attempt int) time.Duration {
	delay := p.BaseDelay << attempt
	if delay > p.MaxDelay || delay <= 0 {
		delay = p.MaxDelay
	}
	if p.Rand == nil {
		return delay
	}
	return time.Duration(p.Rand.Int63n(int64(delay) + 1))
}

// RetryAfter parses a Retry-After header given in seconds; ok is false when absent or invalid.
func RetryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	value := resp.Header.Get("Retry-After")
	if value == "" {
		return 0, false
	}
	seconds, err := strconv.Atoi(value)
	if err != nil || seconds < 0 {
		return 0, false
	}
	return time.Duration(seconds) * time.Second, true
}

// DelayFor combines the backoff with the subscriber's Retry-After (the larger wins).
func (p Policy) DelayFor(attempt int, resp *http.Response) time.Duration {
	delay := p.NextDelay(attempt)
	if after, ok := RetryAfter(resp); ok && after > delay {
		return after
	}
	return delay
}
