package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// LogsService streams function logs and invocation outcomes from the
// invocation log (scope mq:admin): what every server on the database ran,
// whichever server the client reaches.
type LogsService struct{ c *Client }

// LogsOptions select what Logs.Stream sends.
type LogsOptions struct {
	// Function, Trigger (a trigger's name, or "invoke") and Outcome
	// (success, partial_failure or failure) match exactly.
	Function, Trigger, Outcome string
	// Since starts with the invocations started at or after it; zero
	// starts at the end of the log (only new invocations) unless After
	// is set.
	Since time.Time
	// After resumes after a log position (the Seq of the last entry seen).
	After int64
	// Follow keeps the stream open for new invocations until ctx is done
	// (reconnecting after a dropped connection); without it Stream
	// returns once the invocations there are now have been sent.
	Follow bool
}

// LogEntry is one invocation of a log stream: its record, with the
// function's captured stderr, and its position in the log.
type LogEntry struct {
	Invocation
	// Seq is the entry's position in the log: pass it as
	// LogsOptions.After to resume.
	Seq int64
}

// Stream calls fn with each invocation the options select, oldest first,
// and returns when the stream ends (without Follow), when ctx is done (nil)
// or when fn returns an error (that error).
func (s *LogsService) Stream(ctx context.Context, o LogsOptions, fn func(LogEntry) error) error {
	q := url.Values{}
	if o.Function != "" {
		if err := checkName("function", o.Function); err != nil {
			return err
		}
		q.Set("function", o.Function)
	}
	if o.Trigger != "" {
		q.Set("trigger", o.Trigger)
	}
	switch o.Outcome {
	case "", "success", "partial_failure", "failure":
	default:
		return invalidf("outcome %q: use success, partial_failure or failure", o.Outcome)
	}
	if o.Outcome != "" {
		q.Set("outcome", o.Outcome)
	}
	if !o.Since.IsZero() {
		q.Set("since", o.Since.UTC().Format(time.RFC3339Nano))
	}
	if o.After < 0 {
		return invalidf("after %d: must be 0 or more", o.After)
	}
	if o.After > 0 {
		q.Set("after", strconv.FormatInt(o.After, 10))
	}
	if o.Follow {
		q.Set("follow", "true")
	}
	for {
		last, err := s.stream(ctx, q, fn)
		if last > 0 {
			q.Set("after", strconv.FormatInt(last, 10))
		}
		var apiErr *Error
		var cb *callbackError
		switch {
		case errors.As(err, &cb):
			return cb.err
		case ctx.Err() != nil:
			return nil
		case err == nil && !o.Follow:
			return nil
		case errors.As(err, &apiErr), !o.Follow:
			return err
		}
		// Following: the connection dropped; resume where it ended.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// stream reads one connection's events; last is the Seq of the last entry
// passed to fn. An error of fn comes back as a *callbackError.
func (s *LogsService) stream(ctx context.Context, q url.Values, fn func(LogEntry) error) (last int64, err error) {
	c := s.c
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + "/v1/accounts/" + c.account + "/logs"
	u.RawPath = ""
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("client: GET %s: %w", u.Path, err)
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.userAgent)
	// The client's timeout bounds whole requests; a stream has none.
	hc := &http.Client{Transport: c.http.Transport, CheckRedirect: c.http.CheckRedirect, Jar: c.http.Jar}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("client: GET %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, decodeError(resp)
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	var event, id string
	var data bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return last, fmt.Errorf("client: log stream: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			switch event {
			case "invocation":
				var e LogEntry
				if err := json.Unmarshal(data.Bytes(), &e.Invocation); err != nil {
					return last, fmt.Errorf("client: log stream: decode an invocation: %w", err)
				}
				e.Seq, _ = strconv.ParseInt(id, 10, 64)
				if err := fn(e); err != nil {
					return last, &callbackError{err}
				}
				last = e.Seq
			case "end":
				return last, nil
			case "error":
				return last, fmt.Errorf("client: log stream: server: %s", strings.TrimSpace(data.String()))
			}
			event, id = "", ""
			data.Reset()
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			data.WriteString(line[len("data: "):])
		}
	}
}

// callbackError carries an error of Stream's fn: it ends the stream.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }
