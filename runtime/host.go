package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// HostModule is the import module of the host functions of Function ABI
// v1.1 (see docs/function-abi.md).
const HostModule = "sluice"

// Errno is what a host function of module "sluice" returns: 0 on
// success; otherwise the invocation's result buffer holds a message.
type Errno uint32

// The host functions' errnos.
const (
	ErrnoOK       Errno = 0
	ErrnoDenied   Errno = 1 // not allowed by the function's capabilities
	ErrnoInvalid  Errno = 2 // malformed arguments or request document
	ErrnoLimit    Errno = 3 // a cap was hit: count, size
	ErrnoFailed   Errno = 4 // the operation failed: network, timeout, store
	ErrnoNotFound Errno = 5 // no such key
	ErrnoConflict Errno = 6 // compare-and-set found another value
)

// HostStats counts an invocation's host calls.
type HostStats struct {
	// HTTPRequests is how many http_request calls reached the network
	// (refused ones are not counted); HTTPErrors how many calls failed or
	// were refused.
	HTTPRequests, HTTPErrors int
	// HTTPBytesSent and HTTPBytesReceived count request and response
	// bodies.
	HTTPBytesSent, HTTPBytesReceived int64
	// KVCalls counts key-value calls; KVErrors those that failed (a key
	// not found or a compare-and-set conflict is no error).
	KVCalls, KVErrors int
	// HostWait is the time spent waiting on the host (HTTP, KV), holding
	// no CPU slot.
	HostWait time.Duration
}

// hostKey carries an invocation's *hostCalls in the context of its calls
// into the guest, or the *startedCommand that will get one.
type hostKey struct{}

// hostCalls is the state of one invocation's host calls. The guest is
// single-threaded: no lock is needed.
type hostCalls struct {
	f      *Function
	io     *invocationIO
	result []byte // the last call's result or error message
	stats  HostStats
}

// callsOf returns the invocation's host call state; an instance started
// ahead (see startedCommand) first waits for its batch.
func callsOf(ctx context.Context) *hostCalls {
	switch v := ctx.Value(hostKey{}).(type) {
	case *hostCalls:
		return v
	case *startedCommand:
		v.await()
		return v.hc
	}
	return nil
}

// fail sets the result buffer to the message and returns errno.
func (hc *hostCalls) fail(errno Errno, format string, args ...any) Errno {
	hc.result = fmt.Appendf(hc.result[:0], format, args...)
	return errno
}

// wait runs fn, a host wait, holding no long slot meanwhile; the time
// counts toward the batch's timeout. A batch that must stop meanwhile
// unwinds the guest afterwards.
func (hc *hostCalls) wait(fn func()) {
	start := time.Now()
	held := hc.io.holding
	if held {
		hc.io.releaseLongSlot()
	}
	fn()
	hc.stats.HostWait += time.Since(start)
	if held && !hc.io.takeLongSlot() {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
}

// read returns guest memory [ptr, ptr+n) or false.
func read(m api.Module, ptr, n uint32) ([]byte, bool) {
	if n == 0 {
		return nil, true
	}
	return m.Memory().Read(ptr, n)
}

// hostFunc adapts a host function to wazero: it finds the invocation's
// state and stores the errno. Without one in ctx every call fails with
// ErrnoDenied. (A reactor's _initialize runs inside the batch that starts
// its instance, so the calls it makes there are that batch's.)
func hostFunc(fn func(ctx context.Context, hc *hostCalls, m api.Module, stack []uint64) Errno) api.GoModuleFunc {
	return func(ctx context.Context, m api.Module, stack []uint64) {
		hc := callsOf(ctx)
		if hc == nil {
			stack[0] = uint64(ErrnoDenied)
			return
		}
		stack[0] = uint64(fn(ctx, hc, m, stack))
	}
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// instantiateHost adds module "sluice" to wr.
func instantiateHost(ctx context.Context, wr wazero.Runtime) (api.Module, error) {
	b := wr.NewHostModuleBuilder(HostModule)
	def := func(name string, params []api.ValueType, fn func(ctx context.Context, hc *hostCalls, m api.Module, stack []uint64) Errno) {
		b.NewFunctionBuilder().WithGoModuleFunction(hostFunc(fn), params, []api.ValueType{i32}).Export(name)
	}
	def("result_read", []api.ValueType{i32, i32}, hostResultRead)
	def("http_request", []api.ValueType{i32, i32, i32}, hostHTTPRequest)
	def("kv_open", []api.ValueType{i32, i32, i32}, hostKVOpen)
	def("kv_get", []api.ValueType{i32, i32, i32, i32}, hostKVGet)
	def("kv_set", []api.ValueType{i32, i32, i32, i32, i32, i64}, hostKVSet)
	def("kv_delete", []api.ValueType{i32, i32, i32}, hostKVDelete)
	def("kv_increment", []api.ValueType{i32, i32, i32, i64, i32}, hostKVIncrement)
	def("kv_compare_and_set", []api.ValueType{i32, i32, i32, i32, i32, i32, i32, i32, i64}, hostKVCompareAndSet)
	return b.Instantiate(ctx)
}

// result_read(buf_ptr, buf_len i32) -> i32: copies up to buf_len bytes of
// the last call's result to buf_ptr and returns the result's full length
// (so result_read(0, 0) asks for the size). Unlike the others it returns
// a length, not an errno; -1 when buf is outside memory.
func hostResultRead(_ context.Context, hc *hostCalls, m api.Module, stack []uint64) Errno {
	ptr, n := uint32(stack[0]), uint32(stack[1])
	n = min(n, uint32(len(hc.result)))
	if n > 0 && !m.Memory().Write(ptr, hc.result[:n]) {
		return Errno(0xffffffff)
	}
	return Errno(len(hc.result))
}

// httpRequest is the request document of http_request.
type httpRequest struct {
	Method  string              `json:"method"`
	URL     string              `json:"url"`
	Headers map[string][]string `json:"headers"`
	Body    []byte              `json:"body"` // base64 in JSON
}

// httpResponse is the response document of http_request.
type httpResponse struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	Body    []byte              `json:"body"` // base64 in JSON
}

// http_request(req_ptr, req_len, resp_len_ptr i32) -> errno: performs the
// request document at [req_ptr, +req_len) and writes the length of the
// result (the response document, or an error message) at resp_len_ptr.
func hostHTTPRequest(ctx context.Context, hc *hostCalls, m api.Module, stack []uint64) (errno Errno) {
	reqPtr, reqLen, lenPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	defer func() {
		if errno != ErrnoOK {
			hc.stats.HTTPErrors++
		}
		m.Memory().WriteUint32Le(lenPtr, uint32(len(hc.result)))
	}()
	cfg := &hc.f.cfg
	doc, ok := read(m, reqPtr, reqLen)
	if !ok {
		return hc.fail(ErrnoInvalid, "http_request: request [%#x, +%d) is outside memory", reqPtr, reqLen)
	}
	var req httpRequest
	if err := json.Unmarshal(doc, &req); err != nil {
		return hc.fail(ErrnoInvalid, "http_request: request document: %v", err)
	}
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	u, err := url.Parse(req.URL)
	if err != nil || u.Host == "" {
		return hc.fail(ErrnoInvalid, "http_request: url %q is not an absolute http(s) url", req.URL)
	}
	if err := hc.f.outbound.allowed(u); err != nil {
		return hc.fail(ErrnoDenied, "http_request: %v", err)
	}
	if cfg.RefuseOutbound != "" {
		return hc.fail(ErrnoDenied, "http_request %s %s: %s", req.Method, u.Redacted(), cfg.RefuseOutbound)
	}
	if hc.stats.HTTPRequests >= cfg.MaxHTTPRequests {
		return hc.fail(ErrnoLimit, "http_request: over the limit of %d requests per invocation", cfg.MaxHTTPRequests)
	}
	hc.stats.HTTPRequests++
	rctx, cancel := context.WithTimeout(ctx, cfg.HTTPRequestTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(rctx, req.Method, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return hc.fail(ErrnoInvalid, "http_request: %v", err)
	}
	for k, vs := range req.Headers {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	hc.stats.HTTPBytesSent += int64(len(req.Body))
	var (
		resp        httpResponse
		over        bool
		headerBytes int
	)
	hc.wait(func() {
		var r *http.Response
		if r, err = hc.f.outbound.client.Do(hreq); err != nil {
			return
		}
		defer r.Body.Close()
		resp.Status, resp.Headers = r.StatusCode, r.Header
		for k, vs := range r.Header {
			for _, v := range vs {
				headerBytes += len(k) + len(v) + 4 // "k: v\r\n"
			}
		}
		resp.Body, err = io.ReadAll(io.LimitReader(r.Body, int64(cfg.MaxHTTPResponseBytes)+1))
		if len(resp.Body) > cfg.MaxHTTPResponseBytes {
			over = true
		}
	})
	hc.stats.HTTPBytesReceived += int64(headerBytes + len(resp.Body))
	var denied *deniedError
	switch {
	case errors.As(err, &denied):
		return hc.fail(ErrnoDenied, "http_request %s %s: %v", req.Method, u.Redacted(), denied)
	case err != nil && strings.Contains(err.Error(), "response headers exceeded"): // net/http's, untyped
		return hc.fail(ErrnoLimit, "http_request %s %s: response headers over the limit of %d bytes", req.Method, u.Redacted(), MaxHTTPResponseHeaderBytes)
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		return hc.fail(ErrnoFailed, "http_request %s %s: timed out (per-request cap %s, or the batch's deadline)", req.Method, u.Redacted(), cfg.HTTPRequestTimeout)
	case err != nil:
		return hc.fail(ErrnoFailed, "http_request %s %s: %v", req.Method, u.Redacted(), err)
	case over:
		return hc.fail(ErrnoLimit, "http_request %s %s: response body over the limit of %d bytes", req.Method, u.Redacted(), cfg.MaxHTTPResponseBytes)
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return hc.fail(ErrnoFailed, "http_request: encode response: %v", err)
	}
	hc.result = out
	return ErrnoOK
}

// storeOf returns the name of store handle h (1-based index into Stores).
func (hc *hostCalls) storeOf(h uint32) (string, bool) {
	if h == 0 || int(h) > len(hc.f.cfg.Stores) {
		return "", false
	}
	return hc.f.cfg.Stores[h-1], true
}

// kv_open(name_ptr, name_len, handle_ptr i32) -> errno: opens a store the
// function lists and writes its handle (an i32) at handle_ptr.
func hostKVOpen(_ context.Context, hc *hostCalls, m api.Module, stack []uint64) Errno {
	name, ok := read(m, uint32(stack[0]), uint32(stack[1]))
	if !ok {
		return hc.fail(ErrnoInvalid, "kv_open: name outside memory")
	}
	i := slices.Index(hc.f.cfg.Stores, string(name))
	if i < 0 {
		return hc.fail(ErrnoDenied, "kv_open: store %q is not listed in the function's stores %q", name, hc.f.cfg.Stores)
	}
	if hc.f.cfg.KV == nil {
		return hc.fail(ErrnoFailed, "kv_open: the host has no key-value service")
	}
	if !m.Memory().WriteUint32Le(uint32(stack[2]), uint32(i+1)) {
		return hc.fail(ErrnoInvalid, "kv_open: handle pointer outside memory")
	}
	hc.result = hc.result[:0]
	return ErrnoOK
}

// kvArgs reads a store handle and key.
func (hc *hostCalls) kvArgs(op string, m api.Module, h, keyPtr, keyLen uint32) (string, []byte, Errno) {
	hc.stats.KVCalls++
	store, ok := hc.storeOf(h)
	if !ok {
		return "", nil, hc.fail(ErrnoInvalid, "%s: %d is not a store handle from kv_open", op, h)
	}
	key, ok := read(m, keyPtr, keyLen)
	if !ok {
		return "", nil, hc.fail(ErrnoInvalid, "%s: key outside memory", op)
	}
	if len(key) == 0 || len(key) > MaxKVKeyBytes {
		return "", nil, hc.fail(ErrnoInvalid, "%s: key of %d bytes: use 1 to %d bytes", op, len(key), MaxKVKeyBytes)
	}
	return store, bytes.Clone(key), ErrnoOK
}

// kvFailed records a failed store call.
func (hc *hostCalls) kvFailed(op, store string, err error) Errno {
	hc.stats.KVErrors++
	if errors.Is(err, ErrKVInvalid) {
		return hc.fail(ErrnoInvalid, "%s %s: %v", op, store, err)
	}
	if errors.Is(err, ErrKVLimit) {
		return hc.fail(ErrnoLimit, "%s %s: %v", op, store, err)
	}
	return hc.fail(ErrnoFailed, "%s %s: %v", op, store, err)
}

// kv_get(store, key_ptr, key_len, val_len_ptr i32) -> errno: the value
// becomes the result; its length is written at val_len_ptr.
func hostKVGet(ctx context.Context, hc *hostCalls, m api.Module, stack []uint64) Errno {
	store, key, errno := hc.kvArgs("kv_get", m, uint32(stack[0]), uint32(stack[1]), uint32(stack[2]))
	if errno != ErrnoOK {
		return errno
	}
	var (
		v     []byte
		found bool
		err   error
	)
	hc.wait(func() { v, found, err = hc.f.cfg.KV.Get(ctx, store, key) })
	switch {
	case err != nil:
		errno = hc.kvFailed("kv_get", store, err)
	case !found:
		errno = hc.fail(ErrnoNotFound, "kv_get %s: key not found", store)
	default:
		hc.result = v
	}
	m.Memory().WriteUint32Le(uint32(stack[3]), uint32(len(hc.result)))
	return errno
}

// kv_set(store, key_ptr, key_len, val_ptr, val_len i32, ttl_ms i64) -> errno.
func hostKVSet(ctx context.Context, hc *hostCalls, m api.Module, stack []uint64) Errno {
	store, key, errno := hc.kvArgs("kv_set", m, uint32(stack[0]), uint32(stack[1]), uint32(stack[2]))
	if errno != ErrnoOK {
		return errno
	}
	val, errno := hc.kvValue("kv_set", m, uint32(stack[3]), uint32(stack[4]))
	if errno != ErrnoOK {
		return errno
	}
	ttl, errno := hc.kvTTL("kv_set", int64(stack[5]))
	if errno != ErrnoOK {
		return errno
	}
	var err error
	hc.wait(func() { err = hc.f.cfg.KV.Set(ctx, store, key, val, ttl) })
	if err != nil {
		return hc.kvFailed("kv_set", store, err)
	}
	hc.result = hc.result[:0]
	return ErrnoOK
}

func (hc *hostCalls) kvValue(op string, m api.Module, ptr, n uint32) ([]byte, Errno) {
	if int(n) > hc.f.cfg.MaxKVValueBytes {
		return nil, hc.fail(ErrnoLimit, "%s: value of %d bytes is over the limit of %d", op, n, hc.f.cfg.MaxKVValueBytes)
	}
	v, ok := read(m, ptr, n)
	if !ok {
		return nil, hc.fail(ErrnoInvalid, "%s: value outside memory", op)
	}
	return append([]byte{}, v...), ErrnoOK
}

func (hc *hostCalls) kvTTL(op string, ms int64) (time.Duration, Errno) {
	if ms < 0 || ms > int64(MaxKVTTL/time.Millisecond) {
		return 0, hc.fail(ErrnoInvalid, "%s: ttl_ms %d out of range 0 (none) to %d", op, ms, MaxKVTTL.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, ErrnoOK
}

// kv_delete(store, key_ptr, key_len i32) -> errno (ErrnoNotFound when
// there was no such key).
func hostKVDelete(ctx context.Context, hc *hostCalls, m api.Module, stack []uint64) Errno {
	store, key, errno := hc.kvArgs("kv_delete", m, uint32(stack[0]), uint32(stack[1]), uint32(stack[2]))
	if errno != ErrnoOK {
		return errno
	}
	var (
		deleted bool
		err     error
	)
	hc.wait(func() { deleted, err = hc.f.cfg.KV.Delete(ctx, store, key) })
	switch {
	case err != nil:
		return hc.kvFailed("kv_delete", store, err)
	case !deleted:
		return hc.fail(ErrnoNotFound, "kv_delete %s: key not found", store)
	}
	hc.result = hc.result[:0]
	return ErrnoOK
}

// kv_increment(store, key_ptr, key_len i32, delta i64, value_ptr i32) ->
// errno: adds delta to the decimal integer stored at key (a missing key
// counts as 0) and writes the new value (an i64) at value_ptr.
func hostKVIncrement(ctx context.Context, hc *hostCalls, m api.Module, stack []uint64) Errno {
	store, key, errno := hc.kvArgs("kv_increment", m, uint32(stack[0]), uint32(stack[1]), uint32(stack[2]))
	if errno != ErrnoOK {
		return errno
	}
	var (
		n   int64
		err error
	)
	hc.wait(func() { n, err = hc.f.cfg.KV.Increment(ctx, store, key, int64(stack[3])) })
	if err != nil {
		return hc.kvFailed("kv_increment", store, err)
	}
	if !m.Memory().WriteUint64Le(uint32(stack[4]), uint64(n)) {
		return hc.fail(ErrnoInvalid, "kv_increment: value pointer outside memory")
	}
	hc.result = binary.LittleEndian.AppendUint64(hc.result[:0], uint64(n))
	return ErrnoOK
}

// kv_compare_and_set(store, key_ptr, key_len, old_ptr, old_len, new_ptr,
// new_len, flags i32, ttl_ms i64) -> errno: sets key to new only if its
// value is old (flags bit 0 set: only if the key is absent); ErrnoConflict
// otherwise.
func hostKVCompareAndSet(ctx context.Context, hc *hostCalls, m api.Module, stack []uint64) Errno {
	store, key, errno := hc.kvArgs("kv_compare_and_set", m, uint32(stack[0]), uint32(stack[1]), uint32(stack[2]))
	if errno != ErrnoOK {
		return errno
	}
	var old []byte
	if stack[7]&1 == 0 {
		v, ok := read(m, uint32(stack[3]), uint32(stack[4]))
		if !ok {
			return hc.fail(ErrnoInvalid, "kv_compare_and_set: old value outside memory")
		}
		old = append([]byte{}, v...) // never nil: nil means absent
	}
	val, errno := hc.kvValue("kv_compare_and_set", m, uint32(stack[5]), uint32(stack[6]))
	if errno != ErrnoOK {
		return errno
	}
	ttl, errno := hc.kvTTL("kv_compare_and_set", int64(stack[8]))
	if errno != ErrnoOK {
		return errno
	}
	var (
		swapped bool
		err     error
	)
	hc.wait(func() { swapped, err = hc.f.cfg.KV.CompareAndSet(ctx, store, key, old, val, ttl) })
	switch {
	case err != nil:
		return hc.kvFailed("kv_compare_and_set", store, err)
	case !swapped:
		return hc.fail(ErrnoConflict, "kv_compare_and_set %s: the key holds another value", store)
	}
	hc.result = hc.result[:0]
	return ErrnoOK
}
