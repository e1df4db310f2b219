// Package queue is an in-memory delivery queue with visibility timeouts.
package queue

import (
	"sort"
	"sync"
	"time"
)

// Message is one pending delivery.
type Message struct {
	ID             string
	SubscriptionID string
	Topic          string
	Body           []byte
	Attempt        int
	visibleAt      time.Time
	inFlight       bool
}

// Queue holds messages until they are acked.
type Queue struct {
	mu         sync.Mutex
	messages   map[string]*Message
	order      []string
	visibility time.Duration
}

// New creates a queue whose popped messages stay invisible for visibility.
func New(visibility time.Duration) *Queue {
	return &Queue{messages: make(map[string]*Message), visibility: visibility}
}

// Push enqueues msg, visible immediately.
func (q *Queue) Push(msg Message, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	m := msg
	m.visibleAt = now
	q.messages[m.ID] = &m
	q.order = append(q.order, m.ID)
}

// Pop returns the oldest visible message and hides it for the visibility timeout.
func (q *Queue) Pop(now time.Time) (Message, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, id := range q.order {
		m := q.messages[id]
		if m.inFlight || now.Before(m.visibleAt) {
			continue
		}
		m.inFlight = true
		m.Attempt++
		m.visibleAt = now.Add(q.visibility)
		return *m, true
	}
	return Message{}, false
}

// Ack removes a message for good.
func (q *Queue) Ack(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.messages, id)
	for i, other := range q.order {
		if other == id {
			q.order = append(q.order[:i], q.order[i+1:]...)
			break
		}
	}
}

// Nack makes a message visible again after delay.
func (q *Queue) Nack(id string, delay time.Duration, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	m, ok := q.messages[id]
	if !ok {
		return
	}
	m.inFlight = false
	m.visibleAt = now.Add(delay)
}

// Len is the number of messages not yet acked (the queue depth).
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order)
}

// Snapshot lists message IDs by visibility time, for the admin endpoint.
func (q *Queue) Snapshot() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids := append([]string(nil), q.order...)
	sort.SliceStable(ids, func(i, j int) bool {
		return q.messages[ids[i]].visibleAt.Before(q.messages[ids[j]].visibleAt)
	})
	return ids
}
