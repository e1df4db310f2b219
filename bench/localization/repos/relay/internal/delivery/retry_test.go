package delivery

import (
	"net/http"
	"testing"
	"time"
)

func TestNextDelayDoubles(t *testing.T) {
	p := Policy{MaxAttempts: 5, BaseDelay: 500 * time.Millisecond, MaxDelay: time.Minute}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		if got := p.NextDelay(i + 1); got != w {
			t.Errorf("NextDelay(%d) = %v, want %v", i+1, got, w)
		}
	}
}

func TestNextDelayCapped(t *testing.T) {
	p := Policy{MaxAttempts: 50, BaseDelay: time.Second, MaxDelay: 30 * time.Second}
	if got := p.NextDelay(40); got != 30*time.Second {
		t.Fatalf("NextDelay(40) = %v, want cap", got)
	}
}

func TestClassify(t *testing.T) {
	p := Policy{MaxAttempts: 3}
	cases := []struct {
		status int
		want   Outcome
	}{
		{200, Delivered}, {404, DeadLetter}, {429, Retry}, {503, Retry}, {408, Retry},
	}
	for _, c := range cases {
		resp := &http.Response{StatusCode: c.status, Header: http.Header{}}
		if got := p.Classify(1, resp, nil); got != c.want {
			t.Errorf("Classify(%d) = %v, want %v", c.status, got, c.want)
		}
	}
}

func TestRetryAfterWins(t *testing.T) {
	p := Policy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: time.Minute}
	resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"20"}}}
	if got := p.DelayFor(1, resp); got != 20*time.Second {
		t.Fatalf("DelayFor = %v, want 20s", got)
	}
}
