package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/wire"
)

// Topics: fan-out over HTTP. Topic admin (create, delete, subscribe,
// unsubscribe) needs mq:admin, reading topics mq:receive, publishing
// mq:send. A key limited to queue patterns subscribes and unsubscribes
// only queues it may reach, sees only those among a topic's subscriptions,
// and deletes only topics none of whose subscribers are beyond it; a
// publish delivers to every subscribed queue whatever the key's patterns,
// as the topic's subscriptions are what an admin chose (docs/http-api.md).

func checkTopicName(t string) error {
	if !pgqueue.ValidName(t) {
		return errorf(http.StatusBadRequest, "invalid_name", "invalid topic name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(t, 90))
	}
	return nil
}

// pathTopic returns the route's {topic}, checked.
func pathTopic(r *http.Request) (string, error) {
	t := r.PathValue("topic")
	return t, checkTopicName(t)
}

// toTopicJSON converts a topic, keeping the subscriptions the key may see.
func toTopicJSON(t pgqueue.Topic, k *keyRecord) wire.Topic {
	out := wire.Topic{Name: t.Name, CreatedAt: t.CreatedAt.UTC(), Subscriptions: []wire.Subscription{}}
	for _, s := range t.Subscriptions {
		if k.allowsQueue(s.Queue) {
			out.Subscriptions = append(out.Subscriptions, wire.Subscription{Queue: s.Queue, Filter: s.Filter, Source: s.Source})
		}
	}
	return out
}

func (a *api) listTopics(w http.ResponseWriter, r *http.Request, c *call) error {
	ts, err := a.s.queue.ListTopics(r.Context(), c.account)
	if err != nil {
		return err
	}
	out := wire.TopicList{Topics: make([]wire.Topic, len(ts))}
	for i, t := range ts {
		out.Topics[i] = toTopicJSON(t, c.key)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) createTopic(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	var req wire.CreateTopicRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if err := checkTopicName(req.Name); err != nil {
		return err
	}
	err = a.exclusive(r.Context(), c.account, func() error {
		existing, err := a.s.queue.ListTopics(r.Context(), c.account)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(existing, func(t pgqueue.Topic) bool { return t.Name == req.Name }) {
			if err := a.checkLimit(r.Context(), c.account, "topics", len(existing)); err != nil {
				return err
			}
		}
		return a.s.queue.CreateTopic(r.Context(), c.account, req.Name)
	})
	if err != nil {
		return err
	}
	return a.writeTopic(w, r, c, http.StatusCreated, req.Name)
}

// writeTopic answers with topic name as it now is.
func (a *api) writeTopic(w http.ResponseWriter, r *http.Request, c *call, status int, name string) error {
	t, err := a.s.queue.GetTopic(r.Context(), c.account, name)
	if err != nil {
		return err
	}
	writeJSON(w, status, toTopicJSON(t, c.key))
	return nil
}

func (a *api) getTopic(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := pathTopic(r)
	if err != nil {
		return err
	}
	return a.writeTopic(w, r, c, http.StatusOK, name)
}

// topicWithinKey refuses a key limited to some queues a topic that feeds
// a queue beyond its patterns: deleting it would act on that queue's
// subscription. (Publishing is not refused: a subscription is the
// subscribed queue's admin's consent, as with SNS; see the file's top.)
func (a *api) topicWithinKey(r *http.Request, c *call, name string) error {
	if c.key.allQueues() {
		return nil
	}
	t, err := a.s.queue.GetTopic(r.Context(), c.account, name)
	if err != nil {
		return err
	}
	for _, s := range t.Subscriptions {
		if !c.key.allowsQueue(s.Queue) {
			return errorf(http.StatusForbidden, "forbidden", "access key %s is limited to queues %s: topic %q feeds other queues too", c.key.id, strings.Join(c.key.queues, ", "), name)
		}
	}
	return nil
}

func (a *api) deleteTopic(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := pathTopic(r)
	if err != nil {
		return err
	}
	if err := a.topicWithinKey(r, c, name); err != nil {
		return err
	}
	if err := a.s.queue.DeleteTopic(r.Context(), c.account, name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// subscribe puts a subscription; its optional body is wire.SubscribeRequest.
func (a *api) subscribe(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := pathTopic(r)
	if err != nil {
		return err
	}
	body, err := readJSON(w, r, true)
	if err != nil {
		return err
	}
	var req subscribeRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	filter, err := decodeFilter(req.Filter)
	if err != nil {
		return err
	}
	switch req.Source {
	case "", pgqueue.SourceAPI, pgqueue.SourceManifest:
	default:
		return badRequest("field source %q: use api or manifest", truncate(req.Source, 40))
	}
	if err := a.s.queue.SubscribeWith(r.Context(), c.account, name, c.queue, pgqueue.SubscribeOptions{Filter: filter, Source: req.Source}); err != nil {
		return err
	}
	return a.writeTopic(w, r, c, http.StatusOK, name)
}

// decodeFilter checks a subscription filter: an object of up to
// pgqueue.MaxFilterKeys header names, each mapped to a string.
func decodeFilter(raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, badRequest(`field filter: expected a JSON object of header names to strings, e.g. {"type": "order"}`)
	}
	if len(fields) > pgqueue.MaxFilterKeys {
		return nil, badRequest("field filter: name at most %d headers, got %d", pgqueue.MaxFilterKeys, len(fields))
	}
	out := make(map[string]string, len(fields))
	for k, v := range fields {
		if len(k) < 1 || len(k) > 128 {
			return nil, badRequest("field filter: header names are 1 to 128 characters")
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, badRequest("field filter: header %q must map to a JSON string", truncate(k, 40))
		}
		out[k] = s
	}
	return out, nil
}

func (a *api) unsubscribe(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := pathTopic(r)
	if err != nil {
		return err
	}
	if err := a.s.queue.Unsubscribe(r.Context(), c.account, name, c.queue); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// publish takes the body shapes of a send: one message (a JSON object) or
// a batch (an array of bodies), and the query delay_seconds.
func (a *api) publish(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := pathTopic(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, "application/json", maxBodyBytes, false)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	for _, opt := range []string{"dedup_key", "expires_in_seconds", "group"} {
		if _, ok := q[opt]; ok {
			return badRequest("%s applies to a queue's send, not a topic's publish: a publish takes delay_seconds only", opt)
		}
	}
	req, err := decodeSend(body, q)
	if err != nil {
		return err
	}
	if req.single != nil {
		n, err := a.s.queue.PublishBatch(r.Context(), c.account, name, []pgqueue.Publication{{Body: req.single, Delay: req.delay}})
		if err != nil {
			return publishError(c, name, err)
		}
		writeJSON(w, http.StatusCreated, wire.PublishResult{Copies: n[0]})
		return nil
	}
	ms := make([]pgqueue.Publication, len(req.batch))
	for i, b := range req.batch {
		ms[i] = pgqueue.Publication{Body: b, Delay: req.delay}
	}
	n, err := a.s.queue.PublishBatch(r.Context(), c.account, name, ms)
	if err != nil {
		return publishError(c, name, err)
	}
	writeJSON(w, http.StatusCreated, wire.PublishBatchResult{Copies: n})
	return nil
}

// publishError hides, from a key limited to some queues, the subscribed
// queue a publish could not deliver to (a message larger than it takes,
// or a fifo queue, which needs a group): the queue core's message names
// it, and a subscription past the key's patterns is not the key's to see.
func publishError(c *call, topic string, err error) error {
	switch {
	case c.key.allQueues():
		return err
	case errors.Is(err, pgqueue.ErrMessageTooLarge):
		return errorf(http.StatusRequestEntityTooLarge, "message_too_large",
			"a message is larger than a queue subscribed to topic %q takes (max_message_bytes; a key for every queue is told which)", topic)
	case errors.Is(err, pgqueue.ErrInvalidArgument) && strings.Contains(err.Error(), "cannot deliver to queue"):
		return badRequest("topic %q cannot deliver to a queue subscribed to it: a fifo queue, and publishes carry no group (a key for every queue is told which)", topic)
	}
	return err
}

// subscribeRequest is wire.SubscribeRequest with the filter checked by
// decodeFilter, for messages naming the bad key.
type subscribeRequest struct {
	Filter json.RawMessage `json:"filter"`
	Source string          `json:"source"`
}

// publishEntriesRequest is wire.PublishEntriesRequest with each delay
// range-checked after decoding.
type publishEntriesRequest struct {
	Entries []publishEntry `json:"entries"`
}

type publishEntry struct {
	Body         json.RawMessage `json:"body"`
	Headers      json.RawMessage `json:"headers"`
	DelaySeconds number          `json:"delay_seconds"`
}

// publishEntries publishes wire.PublishEntriesRequest: each entry with its
// own headers (which subscription filters match) and delay.
func (a *api) publishEntries(w http.ResponseWriter, r *http.Request, c *call) error {
	name, err := pathTopic(r)
	if err != nil {
		return err
	}
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	var req publishEntriesRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if len(req.Entries) < 1 || len(req.Entries) > maxBatch {
		return badRequest("entries holds 1 to %d messages, got %d", maxBatch, len(req.Entries))
	}
	ms := make([]pgqueue.Publication, len(req.Entries))
	for i, e := range req.Entries {
		if len(e.Body) == 0 || string(e.Body) == "null" {
			return badRequest("entries[%d]: missing body: give a JSON value", i)
		}
		ms[i].Body = e.Body
		if h := bytes.TrimSpace(e.Headers); len(h) > 0 && string(h) != "null" {
			if h[0] != '{' {
				return badRequest("entries[%d].headers: expected a JSON object", i)
			}
			ms[i].Headers = h
		}
		if e.DelaySeconds.set {
			d, err := integer("entries["+strconv.Itoa(i)+"].delay_seconds", e.DelaySeconds.raw, 0, maxDelay)
			if err != nil {
				return err
			}
			ms[i].Delay = time.Duration(d) * time.Second
		}
	}
	n, err := a.s.queue.PublishBatch(r.Context(), c.account, name, ms)
	if err != nil {
		return publishError(c, name, err)
	}
	writeJSON(w, http.StatusCreated, wire.PublishBatchResult{Copies: n})
	return nil
}
