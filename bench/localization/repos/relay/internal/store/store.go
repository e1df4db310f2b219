// Package store keeps webhook subscriptions.
package store

import (
	"errors"
	"sort"
	"strings"
	"sync"
)

// ErrNotFound is returned for unknown subscription IDs.
var ErrNotFound = errors.New("store: subscription not found")

// Subscription routes a topic to a subscriber URL.
type Subscription struct {
	ID      string
	Topic   string
	URL     string
	Headers map[string]string
	Paused  bool
}

// Store is a concurrency-safe subscription registry.
type Store struct {
	mu   sync.RWMutex
	subs map[string]Subscription
}

// New returns an empty store.
func New() *Store {
	return &Store{subs: make(map[string]Subscription)}
}

// Put inserts or replaces a subscription.
func (s *Store) Put(sub Subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[sub.ID] = sub
}

// Get returns one subscription.
func (s *Store) Get(id string) (Subscription, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sub, ok := s.subs[id]
	if !ok {
		return Subscription{}, ErrNotFound
	}
	return sub, nil
}

// Delete removes a subscription; it is not an error if it does not exist.
func (s *Store) Delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, id)
}

// ListByTopic returns active subscriptions for topic, sorted by ID. Topics match exactly or by a
// trailing wildcard: "orders.*" matches "orders.created" and "orders.paid".
func (s *Store) ListByTopic(topic string) []Subscription {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Subscription
	for _, sub := range s.subs {
		if matchTopic(sub.Topic, topic) {
			out = append(out, sub)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func matchTopic(pattern, topic string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(topic, prefix)
	}
	return pattern == topic
}
