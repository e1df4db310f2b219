package delivery

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/acme/relay/internal/queue"
	"github.com/acme/relay/internal/ratelimit"
	"github.com/acme/relay/internal/signature"
	"github.com/acme/relay/internal/store"
)

// Worker pops messages from the queue and delivers them.
type Worker struct {
	Queue   *queue.Queue
	Store   *store.Store
	Client  *http.Client
	Policy  Policy
	Limiter *ratelimit.Limiter
	Secret  string
	Log     *slog.Logger
	Now     func() time.Time
	Dead    []queue.Message
}

// Run processes messages until ctx is done.
func (w *Worker) Run(ctx context.Context) {
	for ctx.Err() == nil {
		msg, ok := w.Queue.Pop(w.Now())
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		w.process(ctx, msg)
	}
}

func (w *Worker) process(ctx context.Context, msg queue.Message) {
	sub, err := w.Store.Get(msg.SubscriptionID)
	if err != nil {
		w.Log.Warn("dropping message for unknown subscription", "id", msg.ID, "subscription", msg.SubscriptionID)
		w.Queue.Ack(msg.ID)
		return
	}
	if !w.Limiter.Allow(sub.ID, w.Now()) {
		w.Queue.Nack(msg.ID, time.Second, w.Now())
		return
	}
	resp, err := w.deliver(ctx, sub, msg)
	w.handleResult(msg, resp, err)
}

func (w *Worker) deliver(ctx context.Context, sub store.Subscription, msg queue.Message) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL, bytes.NewReader(msg.Body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Relay-Signature", signature.Sign(w.Secret, msg.Body, w.Now()))
	req.Header.Set("Relay-Attempt", fmt.Sprint(msg.Attempt))
	for key, value := range sub.Headers {
		req.Header.Set(key, value)
	}
	resp, err := w.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp, nil
}

func (w *Worker) handleResult(msg queue.Message, resp *http.Response, err error) {
	switch w.Policy.Classify(msg.Attempt, resp, err) {
	case Delivered:
		w.Queue.Ack(msg.ID)
	case Retry:
		delay := w.Policy.DelayFor(msg.Attempt, resp)
		w.Log.Info("retrying delivery", "id", msg.ID, "attempt", msg.Attempt, "status", resp.StatusCode, "delay", delay)
		w.Queue.Nack(msg.ID, delay, w.Now())
	case DeadLetter:
		w.Dead = append(w.Dead, msg)
		w.Queue.Ack(msg.ID)
	}
}
