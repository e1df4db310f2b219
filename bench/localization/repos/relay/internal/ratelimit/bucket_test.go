package ratelimit

import (
	"testing"
	"time"
)

var t0 = time.Date(2024, 4, 1, 12, 0, 0, 0, time.UTC)

func TestBucketStartsFull(t *testing.T) {
	b := NewBucket(1, 5, t0)
	for i := 0; i < 5; i++ {
		if !b.Allow(t0) {
			t.Fatalf("request %d denied, want allowed", i)
		}
	}
	if b.Allow(t0) {
		t.Fatal("6th request allowed, want denied")
	}
}

func TestBucketRefillsAtRate(t *testing.T) {
	b := NewBucket(2, 2, t0)
	b.AllowN(t0, 2)
	if got := b.Wait(t0, 1); got != 500*time.Millisecond {
		t.Fatalf("Wait = %v, want 500ms", got)
	}
}

func TestBucketNeverExceedsBurst(t *testing.T) {
	b := NewBucket(10, 20, t0)
	later := t0.Add(time.Minute)
	allowed := 0
	for b.Allow(later) {
		allowed++
	}
	if allowed != 20 {
		t.Errorf("allowed %d requests after an idle minute, want burst of 20", allowed)
	}
}

func TestLimiterSweepEvictsIdle(t *testing.T) {
	l := NewLimiter(1, 1, time.Minute)
	l.Allow("a", t0)
	l.Allow("b", t0.Add(50*time.Second))
	if n := l.Sweep(t0.Add(90 * time.Second)); n != 1 {
		t.Fatalf("Sweep removed %d, want 1", n)
	}
}
