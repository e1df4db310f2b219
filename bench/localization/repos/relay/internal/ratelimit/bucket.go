// Package ratelimit implements token buckets and a per-key limiter.
package ratelimit

import (
	"sync"
	"time"
)

// Bucket is a token bucket refilled continuously at Rate tokens per second up to Burst.
type Bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// NewBucket returns a full bucket.
func NewBucket(rate float64, burst int, now time.Time) *Bucket {
	return &Bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

func (b *Bucket) refill(now time.Time) {
	elapsed := now.Sub(b.last).Seconds()
	if elapsed <= 0 {
		return
	}
	b.tokens += elapsed * b.rate
	b.last = now
}

// Allow takes one token if available.
func (b *Bucket) Allow(now time.Time) bool {
	return b.AllowN(now, 1)
}

// AllowN takes n tokens if available; it never blocks.
func (b *Bucket) AllowN(now time.Time, n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.tokens < float64(n) {
		return false
	}
	b.tokens -= float64(n)
	return true
}

// Wait returns how long until n tokens will be available (0 if they are now).
func (b *Bucket) Wait(now time.Time, n int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	missing := float64(n) - b.tokens
	if missing <= 0 {
		return 0
	}
	return time.Duration(missing / b.rate * float64(time.Second))
}

// Tokens reports the current token count (for metrics).
func (b *Bucket) Tokens(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	return b.tokens
}
