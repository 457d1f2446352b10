package server

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/pgqueue"
)

// Metrics, on a registry of the server's own. GET /metrics on the API
// needs a key with ScopeMetrics and shows that key's account only; the
// listener of Config.MetricsAddr shows everything without a key. An
// account has at most Config.MetricsSeriesPerAccount queue and function
// label values; the others are summed under otherLabel.
//
//   - sluice_queue_messages{account,queue,state} (gauge; state is ready,
//     delayed, inflight or dlq), sluice_queue_oldest_ready_age_seconds and
//     sluice_queue_stored_bytes{account,queue,of} (of: messages, dlq):
//     read from the queue_stats view at scrape time, cached for
//     depthCacheTTL, since the view counts rows.
//   - sluice_invocations_total{account,function,outcome} and
//     sluice_invocation_duration_seconds (histogram, with an exemplar
//     {invocation_id} in the OpenMetrics format): read at scrape time
//     from the invocations table, forward by log_seq (the order records
//     are written), and accumulated in the
//     process. They count every invocation of every process sharing the
//     database (aggregate across Sluice processes with max, not sum) that
//     the invocation log holds when first scraped and after. Rows of
//     several processes may commit out of id order, so the last
//     settleWindow of rows is read again at each scrape and counted once
//     (by id).
//   - sluice_http_requests_total{route,code} and
//     sluice_http_request_duration_seconds{route}: counted in the process.
//   - the Go runtime and process collectors.
type metrics struct {
	a        *api
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	invs     *prometheus.CounterVec
	invDur   *prometheus.HistogramVec
	// outbound HTTP of functions (host import), from the invocation log
	httpCalls, httpErrors, httpBytes *prometheus.CounterVec
	errors                           prometheus.Counter

	mu sync.Mutex // serializes refreshes
	// invFloor: every invocation with a smaller or equal log_seq has been
	// counted; invSeen: the ids of those above it counted so far, with
	// their log_seq (records written on two nodes in the same microsecond
	// may share a log_seq, never an id; migration 007 of triggers).
	invFloor int64
	invSeen  map[int64]int64
	depthAt  time.Time
	depth    []pgqueue.QueueStats // replaced whole, read under mu

	// perAccount caps the queue and function names of one account that
	// get their own label value; the others are summed under otherLabel.
	perAccount int
	lmu        sync.Mutex
	admitted   map[string]map[string]struct{} // kind/account → names
}

// otherLabel is the queue or function label of the series beyond an
// account's cap; no queue or function can be named so.
const otherLabel = "~other"

const (
	depthCacheTTL = 5 * time.Second
	// invocationBatch rows are read per query, at most invocationBatches
	// queries per scrape; a backlog beyond that is read by later scrapes.
	invocationBatch   = 10000
	invocationBatches = 5
	// settleWindow is how long after an invocation ends its record is
	// surely committed, along with every record of a smaller id.
	settleWindow = 30 * time.Second
)

var (
	depthDesc = prometheus.NewDesc("sluice_queue_messages", "Messages in a queue by state (ready, delayed, inflight, dlq).",
		[]string{"account", "queue", "state"}, nil)
	ageDesc = prometheus.NewDesc("sluice_queue_oldest_ready_age_seconds", "Age of the oldest ready message of a queue.",
		[]string{"account", "queue"}, nil)
	bytesDesc = prometheus.NewDesc("sluice_queue_stored_bytes",
		"Bodies and headers of a queue's messages and of its dead letters (of: messages, dlq) as stored.",
		[]string{"account", "queue", "of"}, nil)
)

func newMetrics(a *api) *metrics {
	m := &metrics{a: a, reg: prometheus.NewRegistry(), invSeen: map[int64]int64{},
		perAccount: a.s.cfg.MetricsSeriesPerAccount, admitted: map[string]map[string]struct{}{}}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_http_requests_total",
		Help: "HTTP API requests by route and status code."}, []string{"route", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_http_request_duration_seconds",
		Help: "HTTP API request durations by route.", Buckets: prometheus.ExponentialBucketsRange(0.0005, 30, 16)}, []string{"route"})
	m.invs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_invocations_total",
		Help: "Function invocations by outcome (success, partial_failure, failure), from the invocation log."},
		[]string{"account", "function", "outcome"})
	m.invDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_invocation_duration_seconds",
		Help: "Function invocation durations, from the invocation log.", Buckets: prometheus.ExponentialBucketsRange(0.001, 900, 16)},
		[]string{"account", "function", "outcome"})
	m.httpCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_function_http_requests_total",
		Help: "Outbound HTTP requests functions made through the host import, from the invocation log."},
		[]string{"account", "function"})
	m.httpErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_function_http_errors_total",
		Help: "Outbound HTTP calls of functions that failed or were refused, from the invocation log."},
		[]string{"account", "function"})
	m.httpBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_function_http_bytes_total",
		Help: "Request and response body bytes of functions' outbound HTTP calls, from the invocation log."},
		[]string{"account", "function"})
	m.errors = prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_metrics_refresh_errors_total",
		Help: "Scrapes whose database reads failed (the last values are served)."})
	m.reg.MustRegister(m.requests, m.latency, m.invs, m.invDur, m.httpCalls, m.httpErrors, m.httpBytes, m.errors, depthCollector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observeRequest(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// handler serves every account's metrics without a key: what
// Config.MetricsAddr listens with, for the operator's network only.
func (m *metrics) handler() http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, h) })
}

// serve refreshes what is read from the database and serves h.
func (m *metrics) serve(w http.ResponseWriter, r *http.Request, h http.Handler) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	err := m.refresh(ctx)
	cancel()
	if err != nil {
		m.errors.Inc()
		m.a.log.Warn().Err(err).Msg("metrics refresh")
	}
	h.ServeHTTP(w, r)
}

// refresh reads new invocations and, when stale, queue depths.
func (m *metrics) refresh(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	after, floor, prefixSettled := m.invFloor, m.invFloor, true
	for range invocationBatches {
		invs, err := m.a.s.invocations.After(ctx, after, invocationBatch, settleWindow)
		if err != nil {
			return err
		}
		for _, v := range invs {
			after = v.Seq
			if _, dup := m.invSeen[v.ID]; !dup {
				m.invSeen[v.ID] = v.Seq
				fn := m.label("function", v.Account, v.Function)
				m.invs.WithLabelValues(v.Account, fn, v.Outcome).Inc()
				// The exemplar names the invocation by its one id (shown
				// in the OpenMetrics format).
				m.invDur.WithLabelValues(v.Account, fn, v.Outcome).(prometheus.ExemplarObserver).ObserveWithExemplar(
					v.DurationMS/1000, prometheus.Labels{"invocation_id": strconv.FormatInt(v.ID, 10)})
				if v.HTTPRequests > 0 || v.HTTPErrors > 0 {
					m.httpCalls.WithLabelValues(v.Account, fn).Add(float64(v.HTTPRequests))
					m.httpErrors.WithLabelValues(v.Account, fn).Add(float64(v.HTTPErrors))
					m.httpBytes.WithLabelValues(v.Account, fn).Add(float64(v.HTTPBytes))
				}
			}
			if prefixSettled = prefixSettled && v.Settled; prefixSettled {
				floor = v.Seq
			}
		}
		if len(invs) < invocationBatch {
			break
		}
	}
	m.invFloor = floor
	for id, seq := range m.invSeen {
		if seq <= floor {
			delete(m.invSeen, id)
		}
	}
	if time.Since(m.depthAt) < depthCacheTTL {
		return nil
	}
	depth, err := m.a.s.queue.AllStats(ctx)
	if err != nil {
		return err
	}
	m.depth, m.depthAt = depth, time.Now()
	return nil
}

// depthCollector emits the cached queue depths.
type depthCollector struct{ m *metrics }

func (c depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- depthDesc
	ch <- ageDesc
	ch <- bytesDesc
}

func (c depthCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	depth := c.m.depth
	c.m.mu.Unlock()
	// Queues beyond an account's cap are summed (their age: the oldest).
	type key struct{ account, queue string }
	sums := map[key]*pgqueue.QueueStats{}
	var order []key
	for _, d := range depth {
		k := key{d.Account, c.m.label("queue", d.Account, d.Queue)}
		sum, ok := sums[k]
		if !ok {
			sum = &pgqueue.QueueStats{Account: k.account, Queue: k.queue}
			sums[k] = sum
			order = append(order, k)
		}
		sum.Ready += d.Ready
		sum.Delayed += d.Delayed
		sum.Inflight += d.Inflight
		sum.DLQ += d.DLQ
		sum.OldestReadyAge = max(sum.OldestReadyAge, d.OldestReadyAge)
		sum.Bytes += d.Bytes
		sum.DLQBytes += d.DLQBytes
	}
	for _, k := range order {
		d := sums[k]
		for _, s := range []struct {
			state string
			n     int64
		}{{"ready", d.Ready}, {"delayed", d.Delayed}, {"inflight", d.Inflight}, {"dlq", d.DLQ}} {
			ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(s.n), d.Account, d.Queue, s.state)
		}
		ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, d.OldestReadyAge.Seconds(), d.Account, d.Queue)
		ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.GaugeValue, float64(d.Bytes), d.Account, d.Queue, "messages")
		ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.GaugeValue, float64(d.DLQBytes), d.Account, d.Queue, "dlq")
	}
}

// label returns name as the kind (queue or function) label of account,
// or otherLabel once the account has perAccount other names labelled.
// A name keeps its label for the life of the process.
func (m *metrics) label(kind, account, name string) string {
	if m.perAccount <= 0 {
		return name
	}
	m.lmu.Lock()
	defer m.lmu.Unlock()
	set := m.admitted[kind+"/"+account]
	if set == nil {
		set = map[string]struct{}{}
		m.admitted[kind+"/"+account] = set
	}
	if _, ok := set[name]; ok {
		return name
	}
	if len(set) >= m.perAccount {
		return otherLabel
	}
	set[name] = struct{}{}
	return name
}

// accountHandler serves the metrics of one account only, to a request
// authenticated with a key holding ScopeMetrics (the main API's
// /metrics): the series labelled with its account, nothing else.
func (m *metrics) accountHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := m.a.authenticate(r)
		if err == nil && !key.allows(ScopeMetrics) {
			err = errorf(http.StatusForbidden, "forbidden", "access key %s lacks scope %s", key.id, ScopeMetrics)
		}
		if err == nil && !key.allQueues() {
			// The series name every queue and function of the account.
			err = (&call{key: key}).accountWide("metrics cover")
		}
		if err != nil {
			m.a.writeError(w, r, err)
			return
		}
		account := key.account
		g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			mfs, err := m.reg.Gather()
			var out []*dto.MetricFamily
			for _, mf := range mfs {
				var keep []*dto.Metric
				for _, metric := range mf.Metric {
					for _, l := range metric.Label {
						if l.GetName() == "account" && l.GetValue() == account {
							keep = append(keep, metric)
							break
						}
					}
				}
				if len(keep) > 0 {
					mf.Metric = keep
					out = append(out, mf)
				}
			}
			return out, err
		})
		m.serve(w, r, promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true}))
	})
}
