package wire

import (
	"encoding/json"
	"time"
)

// Topic is a topic with the queues subscribed to it.
type Topic struct {
	Name          string         `json:"name"`
	CreatedAt     time.Time      `json:"created_at"`
	Subscriptions []Subscription `json:"subscriptions"`
}

// Subscription is a queue subscribed to a topic. A message published to
// the topic is copied into Queue when its headers hold every key of Filter
// with exactly that string value; no filter takes every message.
type Subscription struct {
	Queue  string            `json:"queue"`
	Filter map[string]string `json:"filter,omitempty"`
	// Source is who made it: "api", or "manifest" (sluice deploy, which
	// removes it when it leaves the manifest).
	Source string `json:"source"`
}

// TopicList answers a list of topics.
type TopicList struct {
	Topics []Topic `json:"topics"`
}

// CreateTopicRequest is the body of a topic's creation.
type CreateTopicRequest struct {
	Name string `json:"name"`
}

// SubscribeRequest is the optional body of a subscription's PUT: its
// filter on headers (none: every message) and its source ("api" when
// left out, or "manifest").
type SubscribeRequest struct {
	Filter map[string]string `json:"filter,omitempty"`
	Source string            `json:"source,omitempty"`
}

// PublishResult answers the publish of one message: the copies made, one
// per subscribed queue whose filter matched.
type PublishResult struct {
	Copies int `json:"copies"`
}

// PublishBatchResult answers the publish of a batch or of entries: the
// copies made per message, in the batch's order.
type PublishBatchResult struct {
	Copies []int `json:"copies"`
}

// PublishEntry is one message of a publish with entries: its body, its
// headers (which subscription filters match) and its delay.
type PublishEntry struct {
	Body         json.RawMessage `json:"body"`
	Headers      json.RawMessage `json:"headers,omitempty"`
	DelaySeconds int             `json:"delay_seconds,omitempty"`
}

// PublishEntriesRequest is the body of a publish with entries.
type PublishEntriesRequest struct {
	Entries []PublishEntry `json:"entries"`
}
