package ratelimit

import (
	"sync"
	"time"
)

// Limiter keeps one Bucket per key (subscriber ID) and evicts idle ones.
type Limiter struct {
	mu      sync.Mutex
	rate    float64
	burst   int
	idleTTL time.Duration
	buckets map[string]*entry
}

type entry struct {
	bucket   *Bucket
	lastSeen time.Time
}

// NewLimiter creates a limiter with the given per-key rate and burst.
func NewLimiter(rate float64, burst int, idleTTL time.Duration) *Limiter {
	return &Limiter{rate: rate, burst: burst, idleTTL: idleTTL, buckets: make(map[string]*entry)}
}

// Allow reports whether key may proceed now.
func (l *Limiter) Allow(key string, now time.Time) bool {
	l.mu.Lock()
	e, ok := l.buckets[key]
	if !ok {
		e = &entry{bucket: NewBucket(l.rate, l.burst, now), lastSeen: now}
		l.buckets[key] = e
	}
	l.mu.Unlock()
	return e.bucket.Allow(now)
}

// Sweep removes buckets idle for longer than the TTL and returns how many were removed.
func (l *Limiter) Sweep(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	removed := 0
	for key, e := range l.buckets {
		if now.Sub(e.lastSeen) > l.idleTTL {
			delete(l.buckets, key)
			removed++
		}
	}
	return removed
}

// Len is the number of tracked keys.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// RunSweeper sweeps every interval until stop is closed.
func (l *Limiter) RunSweeper(interval time.Duration, stop <-chan struct{}) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case now := <-ticker.C:
			l.Sweep(now)
		case <-stop:
			return
		}
	}
}
