package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/acme/relay/internal/config"
	"github.com/acme/relay/internal/queue"
	"github.com/acme/relay/internal/signature"
	"github.com/acme/relay/internal/store"
)

var now = time.Date(2024, 4, 1, 12, 0, 0, 0, time.UTC)

func newTestServer(t *testing.T, maxDepth int) (*Server, *queue.Queue) {
	t.Helper()
	cfg := config.Default()
	cfg.Secrets = []string{"old-secret", "new-secret"}
	cfg.MaxQueueDepth = maxDepth
	q := queue.New(time.Minute)
	s := store.New()
	s.Put(store.Subscription{ID: "sub-1", Topic: "orders.*", URL: "https://a.example.com"})
	return New(cfg, q, s, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return now }), q
}

func post(t *testing.T, h http.Handler, body []byte, secret string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/hooks/orders.created", bytes.NewReader(body))
	req.Header.Set("Relay-Signature", signature.Sign(secret, body, now))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestWebhookQueuesForSubscribers(t *testing.T) {
	srv, q := newTestServer(t, 100)
	rec := post(t, srv.Handler(), []byte(`{"id":1}`), "new-secret")
	if rec.Code != http.StatusAccepted {
		t.Fatalf("status %d, want 202: %s", rec.Code, rec.Body)
	}
	if q.Len() != 1 {
		t.Fatalf("queue depth %d, want 1", q.Len())
	}
}

func TestWebhookConcurrentIntake(t *testing.T) {
	srv, q := newTestServer(t, 1000)
	h := srv.Handler()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			post(t, h, []byte(`{"id":2}`), "new-secret")
		}()
	}
	wg.Wait()
	if q.Len() != 20 {
		t.Fatalf("queue depth %d, want 20", q.Len())
	}
}

func TestHealthAtCapacity(t *testing.T) {
	srv, q := newTestServer(t, 2)
	q.Push(queue.Message{ID: "a"}, now)
	q.Push(queue.Message{ID: "b"}, now)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /healthz with depth 2 and max_queue_depth 2: status %d, want 200", rec.Code)
	}
}

func TestRejectsBadSignature(t *testing.T) {
	srv, _ := newTestServer(t, 100)
	rec := post(t, srv.Handler(), []byte(`{}`), "wrong")
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", rec.Code)
	}
}
