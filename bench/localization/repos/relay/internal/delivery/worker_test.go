package delivery

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/acme/relay/internal/queue"
	"github.com/acme/relay/internal/ratelimit"
	"github.com/acme/relay/internal/store"
)

type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("dial tcp 10.0.0.7:443: connect: connection refused")
}

func TestWorkerRetriesNetworkErrors(t *testing.T) {
	now := time.Date(2024, 4, 1, 12, 0, 0, 0, time.UTC)
	q := queue.New(30 * time.Second)
	s := store.New()
	s.Put(store.Subscription{ID: "sub-1", Topic: "orders.created", URL: "https://hooks.example.com/in"})
	q.Push(queue.Message{ID: "m1", SubscriptionID: "sub-1", Topic: "orders.created", Body: []byte(`{}`)}, now)
	w := &Worker{
		Queue:   q,
		Store:   s,
		Client:  &http.Client{Transport: failingTransport{}},
		Policy:  Policy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: time.Minute},
		Limiter: ratelimit.NewLimiter(10, 10, time.Minute),
		Secret:  "s3cret",
		Log:     slog.Default(),
		Now:     func() time.Time { return now },
	}
	msg, _ := q.Pop(now)
	w.process(context.Background(), msg)
	if q.Len() != 1 {
		t.Fatalf("queue depth %d, want the message kept for retry", q.Len())
	}
}
