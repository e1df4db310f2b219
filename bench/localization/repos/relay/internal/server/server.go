// Package server exposes the webhook intake and admin HTTP endpoints.
package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/acme/relay/internal/config"
	"github.com/acme/relay/internal/queue"
	"github.com/acme/relay/internal/signature"
	"github.com/acme/relay/internal/store"
)

const maxBodyBytes = 1 << 20

// Server wires the intake endpoint to the queue.
type Server struct {
	cfg   config.Config
	queue *queue.Queue
	store *store.Store
	log   *slog.Logger
	now   func() time.Time
	seq   int
	mux   *http.ServeMux
}

// New builds a Server and its routes.
func New(cfg config.Config, q *queue.Queue, s *store.Store, log *slog.Logger, now func() time.Time) *Server {
	srv := &Server{cfg: cfg, queue: q, store: s, log: log, now: now, mux: http.NewServeMux()}
	srv.routes()
	return srv
}

func (s *Server) routes() {
	s.mux.HandleFunc("POST /hooks/{topic}", s.handleWebhook)
	s.mux.HandleFunc("GET /healthz", s.handleHealth)
	s.mux.HandleFunc("GET /admin/queue", s.handleQueue)
	s.mux.HandleFunc("PUT /admin/subscriptions/{id}", s.handlePutSubscription)
}

// Handler returns the root handler with middleware applied.
func (s *Server) Handler() http.Handler {
	return Chain(s.mux, Recover(s.log), RequestID(), AccessLog(s.log))
}

func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "body too large")
		return
	}
	header := r.Header.Get("Relay-Signature")
	if err := signature.Verify(s.cfg.Secrets, header, body, s.cfg.SignatureTolerance, s.now()); err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, signature.ErrMalformed) {
			status = http.StatusBadRequest
		}
		writeError(w, status, err.Error())
		return
	}
	subs := s.store.ListByTopic(topic)
	for _, sub := range subs {
		s.seq++
		s.queue.Push(queue.Message{
			ID:             fmt.Sprintf("msg-%d", s.seq),
			SubscriptionID: sub.ID,
			Topic:          topic,
			Body:           body,
		}, s.now())
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": len(subs)})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	depth := s.queue.Len()
	status := http.StatusOK
	if depth >= s.cfg.MaxQueueDepth {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"status": http.StatusText(status), "queue_depth": depth})
}

func (s *Server) handleQueue(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"messages": s.queue.Snapshot()})
}

type subscriptionRequest struct {
	Topic   string            `json:"topic"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Paused  bool              `json:"paused"`
}

func (s *Server) handlePutSubscription(w http.ResponseWriter, r *http.Request) {
	var req subscriptionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON")
		return
	}
	if req.Topic == "" || !strings.HasPrefix(req.URL, "https://") {
		writeError(w, http.StatusBadRequest, "topic and an https url are required")
		return
	}
	sub := store.Subscription{ID: r.PathValue("id"), Topic: req.Topic, URL: req.URL, Headers: req.Headers, Paused: req.Paused}
	s.store.Put(sub)
	writeJSON(w, http.StatusOK, sub)
}

func writeJSON(w http.ResponseWriter, status int, value any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(value)
}

func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]string{"error": message})
}
