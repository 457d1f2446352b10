/*
 * sluice.c: the Sluice guest SDK for C. See sluice.h and
 * docs/function-abi.md.
 *
 * It reads the batch with a small JSON parser that checks the whole input
 * (a batch that is not valid JSON, or not the ABI's shape, makes the
 * function exit with status 1, failing the batch), calls sluice_handler
 * and writes the output document. Built with -DSLUICE_REACTOR it exports
 * sluice_alloc and sluice_handle for the reactor convention; otherwise it
 * provides main for a command.
 */
#include "sluice.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH 200

/* ---- growable byte buffer ---- */

typedef struct {
	char *p;
	size_t len, cap;
} buf;

static void buf_grow(buf *b, size_t n) {
	if (b->len + n <= b->cap)
		return;
	size_t c = b->cap ? b->cap * 2 : 256;
	while (c < b->len + n)
		c *= 2;
	char *p = realloc(b->p, c);
	if (!p) {
		fputs("sluice sdk: out of memory\n", stderr);
		exit(1);
	}
	b->p = p;
	b->cap = c;
}

static void buf_add(buf *b, const char *s, size_t n) {
	buf_grow(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void buf_str(buf *b, const char *s) { buf_add(b, s, strlen(s)); }

/* buf_quote appends s as a JSON string. */
static void buf_quote(buf *b, const char *s) {
	static const char hex[] = "0123456789abcdef";
	buf_add(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '"': buf_add(b, "\\\"", 2); break;
		case '\\': buf_add(b, "\\\\", 2); break;
		case '\n': buf_add(b, "\\n", 2); break;
		case '\r': buf_add(b, "\\r", 2); break;
		case '\t': buf_add(b, "\\t", 2); break;
		default:
			if (c < 0x20) {
				char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
				buf_add(b, e, 6);
			} else {
				buf_add(b, (const char *)&c, 1);
			}
		}
	}
	buf_add(b, "\"", 1);
}

/* ---- JSON scanning ---- */

typedef struct {
	const char *p, *end;
} scan;

static void ws(scan *s) {
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool lit(scan *s, const char *w) {
	size_t n = strlen(w);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
		return false;
	s->p += n;
	return true;
}

static int hexval(char c) {
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

static bool hex4(scan *s, unsigned *out) {
	if (s->end - s->p < 4)
		return false;
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(s->p[i]);
		if (h < 0)
			return false;
		v = v << 4 | (unsigned)h;
	}
	s->p += 4;
	*out = v;
	return true;
}

static void utf8(buf *b, unsigned r) {
	char e[4];
	if (r < 0x80) {
		e[0] = (char)r;
		buf_add(b, e, 1);
	} else if (r < 0x800) {
		e[0] = (char)(0xc0 | r >> 6);
		e[1] = (char)(0x80 | (r & 0x3f));
		buf_add(b, e, 2);
	} else if (r < 0x10000) {
		e[0] = (char)(0xe0 | r >> 12);
		e[1] = (char)(0x80 | (r >> 6 & 0x3f));
		e[2] = (char)(0x80 | (r & 0x3f));
		buf_add(b, e, 3);
	} else {
		e[0] = (char)(0xf0 | r >> 18);
		e[1] = (char)(0x80 | (r >> 12 & 0x3f));
		e[2] = (char)(0x80 | (r >> 6 & 0x3f));
		e[3] = (char)(0x80 | (r & 0x3f));
		buf_add(b, e, 4);
	}
}

/* string reads a JSON string at s->p ('"'); with out, it appends the
 * decoded text (a \u0000 escape is kept as U+FFFD so C strings stay
 * whole; a lone surrogate too). */
static bool string(scan *s, buf *out) {
	if (s->p >= s->end || *s->p != '"')
		return false;
	s->p++;
	const char *run = s->p;
	while (s->p < s->end) {
		unsigned char c = (unsigned char)*s->p;
		if (c == '"') {
			if (out)
				buf_add(out, run, (size_t)(s->p - run));
			s->p++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c != '\\') {
			s->p++;
			continue;
		}
		if (out)
			buf_add(out, run, (size_t)(s->p - run));
		s->p++;
		if (s->p >= s->end)
			return false;
		char e = *s->p++;
		unsigned r;
		switch (e) {
		case '"': r = '"'; break;
		case '\\': r = '\\'; break;
		case '/': r = '/'; break;
		case 'b': r = '\b'; break;
		case 'f': r = '\f'; break;
		case 'n': r = '\n'; break;
		case 'r': r = '\r'; break;
		case 't': r = '\t'; break;
		case 'u':
			if (!hex4(s, &r))
				return false;
			if (r >= 0xd800 && r < 0xdc00 && s->end - s->p >= 6 && s->p[0] == '\\' && s->p[1] == 'u') {
				scan t = {s->p + 2, s->end};
				unsigned lo;
				if (hex4(&t, &lo) && lo >= 0xdc00 && lo < 0xe000) {
					r = 0x10000 + ((r - 0xd800) << 10) + (lo - 0xdc00);
					s->p = t.p;
				}
			}
			if (r == 0 || (r >= 0xd800 && r < 0xe000))
				r = 0xfffd;
			break;
		default:
			return false;
		}
		if (out)
			utf8(out, r);
		run = s->p;
	}
	return false;
}

static bool digits(scan *s) {
	const char *start = s->p;
	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p > start;
}

static bool number(scan *s) {
	if (s->p < s->end && *s->p == '-')
		s->p++;
	if (s->p < s->end && *s->p == '0')
		s->p++;
	else if (!digits(s))
		return false;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (!digits(s))
			return false;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (!digits(s))
			return false;
	}
	return true;
}

/* value skips one JSON value (after whitespace), checking it. */
static bool value(scan *s, int depth) {
	ws(s);
	if (s->p >= s->end || depth > MAX_DEPTH)
		return false;
	switch (*s->p) {
	case '"': return string(s, NULL);
	case 't': return lit(s, "true");
	case 'f': return lit(s, "false");
	case 'n': return lit(s, "null");
	case '{':
	case '[': {
		bool obj = *s->p == '{';
		char close = obj ? '}' : ']';
		s->p++;
		ws(s);
		if (s->p < s->end && *s->p == close) {
			s->p++;
			return true;
		}
		for (;;) {
			if (obj) {
				ws(s);
				if (!string(s, NULL))
					return false;
				ws(s);
				if (s->p >= s->end || *s->p != ':')
					return false;
				s->p++;
			}
			if (!value(s, depth + 1))
				return false;
			ws(s);
			if (s->p >= s->end)
				return false;
			if (*s->p == close) {
				s->p++;
				return true;
			}
			if (*s->p != ',')
				return false;
			s->p++;
		}
	}
	default: return number(s);
	}
}

/* raw skips one value and returns its text. */
static bool raw(scan *s, sluice_json *out) {
	ws(s);
	const char *start = s->p;
	if (!value(s, 0))
		return false;
	out->json = start;
	out->len = (size_t)(s->p - start);
	return true;
}

/* object iterates over the members of an object: call with *first = true
 * at the '{'; each true return leaves s at the member's value with its key
 * decoded into key. */
static bool member(scan *s, bool *first, buf *key, bool *ok) {
	ws(s);
	if (*first) {
		if (s->p >= s->end || *s->p != '{')
			return *ok = false;
		s->p++;
		ws(s);
		if (s->p < s->end && *s->p == '}') {
			s->p++;
			return false;
		}
		*first = false;
	} else {
		if (s->p < s->end && *s->p == '}') {
			s->p++;
			return false;
		}
		if (s->p >= s->end || *s->p != ',')
			return *ok = false;
		s->p++;
		ws(s);
	}
	key->len = 0;
	if (!string(s, key))
		return *ok = false;
	buf_add(key, "", 1);
	ws(s);
	if (s->p >= s->end || *s->p != ':')
		return *ok = false;
	s->p++;
	ws(s);
	return true;
}

static char *dup_string(scan *s) {
	buf b = {0};
	if (!string(s, &b)) {
		free(b.p);
		return NULL;
	}
	buf_add(&b, "", 1);
	return b.p;
}

static bool int_value(scan *s, int64_t *out) {
	const char *start = s->p;
	if (!number(s))
		return false;
	sluice_json v = {start, (size_t)(s->p - start)};
	return sluice_json_int(v, out);
}

/* ---- the batch ---- */

typedef struct {
	sluice_batch b;
	sluice_message *msgs;
	size_t cap;
	buf key;
	char *err;
} parsed;

static void batch_free(parsed *pb) {
	for (size_t i = 0; i < pb->b.n_messages; i++) {
		free((char *)pb->msgs[i].id);
		free((char *)pb->msgs[i].created_at);
	}
	free(pb->msgs);
	free((char *)pb->b.function_name);
	free((char *)pb->b.trigger_type);
	free((char *)pb->b.trigger_source);
	free(pb->key.p);
	memset(pb, 0, sizeof *pb);
}

#define EXPECT(cond, what)            \
	do {                              \
		if (!(cond)) {                \
			pb->err = (char *)(what); \
			return false;             \
		}                             \
	} while (0)

static bool parse_message(scan *s, parsed *pb, sluice_message *m) {
	bool first = true, ok = true;
	m->headers = (sluice_json){"null", 4};
	m->body = (sluice_json){"null", 4};
	while (member(s, &first, &pb->key, &ok)) {
		const char *k = pb->key.p;
		if (!strcmp(k, "id")) {
			free((char *)m->id);
			EXPECT(m->id = dup_string(s), "message id is not a string");
		} else if (!strcmp(k, "attempt")) {
			EXPECT(int_value(s, &m->attempt), "message attempt is not an integer");
		} else if (!strcmp(k, "created_at")) {
			free((char *)m->created_at);
			EXPECT(m->created_at = dup_string(s), "message created_at is not a string");
		} else if (!strcmp(k, "headers")) {
			EXPECT(raw(s, &m->headers), "message headers are not JSON");
		} else if (!strcmp(k, "body")) {
			EXPECT(raw(s, &m->body), "message body is not JSON");
		} else {
			EXPECT(value(s, 0), "message member is not JSON");
		}
	}
	EXPECT(ok, "a message is not a JSON object");
	EXPECT(m->id && *m->id, "a message has no id");
	if (!m->created_at)
		m->created_at = strdup("");
	return true;
}

static bool parse_batch(const char *in, size_t n, parsed *pb) {
	scan s = {in, in + n};
	bool first = true, ok = true;
	while (member(&s, &first, &pb->key, &ok)) {
		const char *k = pb->key.p;
		if (!strcmp(k, "version")) {
			EXPECT(int_value(&s, &pb->b.version), "version is not an integer");
		} else if (!strcmp(k, "function") || !strcmp(k, "trigger")) {
			bool fn = k[0] == 'f', f2 = true, ok2 = true;
			while (member(&s, &f2, &pb->key, &ok2)) {
				const char *k2 = pb->key.p;
				const char **dst = NULL;
				if (fn && !strcmp(k2, "name"))
					dst = &pb->b.function_name;
				else if (!fn && !strcmp(k2, "type"))
					dst = &pb->b.trigger_type;
				else if (!fn && !strcmp(k2, "source"))
					dst = &pb->b.trigger_source;
				if (dst) {
					free((char *)*dst);
					EXPECT(*dst = dup_string(&s), "function or trigger member is not a string");
				} else if (fn && !strcmp(k2, "version")) {
					EXPECT(int_value(&s, &pb->b.function_version), "function version is not an integer");
				} else {
					EXPECT(value(&s, 0), "function or trigger member is not JSON");
				}
			}
			EXPECT(ok2, "function or trigger is not a JSON object");
		} else if (!strcmp(k, "messages")) {
			EXPECT(s.p < s.end && *s.p == '[', "messages is not an array");
			s.p++;
			ws(&s);
			if (s.p < s.end && *s.p == ']') {
				s.p++;
				continue;
			}
			for (;;) {
				if (pb->b.n_messages == pb->cap) {
					pb->cap = pb->cap ? 2 * pb->cap : 16;
					sluice_message *m = realloc(pb->msgs, pb->cap * sizeof *m);
					EXPECT(m, "out of memory");
					pb->msgs = m;
				}
				sluice_message *m = &pb->msgs[pb->b.n_messages++];
				memset(m, 0, sizeof *m);
				if (!parse_message(&s, pb, m))
					return false;
				ws(&s);
				EXPECT(s.p < s.end && (*s.p == ',' || *s.p == ']'), "messages is not an array of objects");
				if (*s.p++ == ']')
					break;
			}
		} else {
			EXPECT(value(&s, 0), "batch member is not JSON");
		}
	}
	EXPECT(ok, "input is not a JSON object");
	ws(&s);
	EXPECT(s.p == s.end, "data after the batch object");
	EXPECT(pb->b.version == 1, "unsupported ABI version");
	if (!pb->b.function_name) pb->b.function_name = strdup("");
	if (!pb->b.trigger_type) pb->b.trigger_type = strdup("");
	if (!pb->b.trigger_source) pb->b.trigger_source = strdup("");
	pb->b.messages = pb->msgs;
	return true;
}

/* ---- the result ---- */

struct sluice_result {
	buf out;   /* batchItemFailures, open */
	buf emits; /* emit entries, comma-separated */
};

static void fail(sluice_result *r, const char *id, int64_t after, bool permanent, const char *error) {
	buf *b = &r->out;
	buf_str(b, b->len ? "," : "{\"batchItemFailures\":[");
	buf_str(b, "{\"itemIdentifier\":");
	buf_quote(b, id ? id : "");
	if (permanent) {
		buf_str(b, ",\"permanent\":true");
	} else if (after > 0) {
		char n[32];
		snprintf(n, sizeof n, ",\"retryAfterSeconds\":%lld", (long long)after);
		buf_str(b, n);
	}
	if (error && *error) {
		buf_str(b, ",\"error\":");
		buf_quote(b, error);
	}
	buf_str(b, "}");
}

void sluice_retry(sluice_result *r, const char *id, int64_t retry_after_seconds, const char *error) {
	fail(r, id, retry_after_seconds, false, error);
}

void sluice_permanent(sluice_result *r, const char *id, const char *error) {
	fail(r, id, 0, true, error);
}

static void emit(sluice_result *r, const char *kind, const char *target, const char *body_json, const char *for_id) {
	buf *b = &r->emits;
	if (b->len)
		buf_str(b, ",");
	buf_str(b, "{\"");
	buf_str(b, kind);
	buf_str(b, "\":");
	buf_quote(b, target ? target : "");
	buf_str(b, ",\"body\":");
	buf_str(b, body_json && *body_json ? body_json : "null");
	if (for_id && *for_id) {
		buf_str(b, ",\"for\":");
		buf_quote(b, for_id);
	}
	buf_str(b, "}");
}

void sluice_emit(sluice_result *r, const char *queue, const char *body_json, const char *for_id) {
	emit(r, "queue", queue, body_json, for_id);
}

void sluice_emit_topic(sluice_result *r, const char *topic, const char *body_json, const char *for_id) {
	emit(r, "topic", topic, body_json, for_id);
}

void sluice_log(const char *level, const char *msg, ...) {
	buf b = {0};
	buf_str(&b, "{\"level\":");
	buf_quote(&b, level ? level : "info");
	buf_str(&b, ",\"message\":");
	buf_quote(&b, msg ? msg : "");
	va_list ap;
	va_start(ap, msg);
	for (;;) {
		const char *k = va_arg(ap, const char *);
		if (!k)
			break;
		const char *v = va_arg(ap, const char *);
		buf_str(&b, ",");
		buf_quote(&b, k);
		buf_str(&b, ":");
		buf_quote(&b, v ? v : "");
	}
	va_end(ap);
	buf_str(&b, "}\n");
	fwrite(b.p, 1, b.len, stderr);
	free(b.p);
}

/* ---- JSON helpers ---- */

sluice_json sluice_json_get(sluice_json v, const char *key) {
	sluice_json none = {NULL, 0};
	if (!v.json)
		return none;
	scan s = {v.json, v.json + v.len};
	buf k = {0};
	bool first = true, ok = true;
	while (member(&s, &first, &k, &ok)) {
		if (!strcmp(k.p, key)) {
			sluice_json out;
			bool found = raw(&s, &out);
			free(k.p);
			return found ? out : none;
		}
		if (!value(&s, 0))
			break;
	}
	free(k.p);
	return none;
}

bool sluice_json_is_true(sluice_json v) { return v.len == 4 && !memcmp(v.json, "true", 4); }

bool sluice_json_is_null(sluice_json v) { return !v.json || (v.len == 4 && !memcmp(v.json, "null", 4)); }

bool sluice_json_int(sluice_json v, int64_t *out) {
	const char *p = v.json, *end = v.json + v.len;
	if (!p || p == end)
		return false;
	bool neg = *p == '-';
	if (neg && ++p == end)
		return false;
	if (*p == '0' && end - p > 1)
		return false;
	uint64_t n = 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return false;
		uint64_t d = (uint64_t)(*p - '0');
		if (n > (UINT64_C(9223372036854775808) - d) / 10)
			return false;
		n = n * 10 + d;
	}
	if (!neg && n > INT64_MAX)
		return false;
	*out = neg ? (int64_t)(0 - n) : (int64_t)n;
	return true;
}

char *sluice_json_string(sluice_json v) {
	if (!v.json)
		return NULL;
	scan s = {v.json, v.json + v.len};
	char *out = dup_string(&s);
	if (out && s.p != s.end) {
		free(out);
		return NULL;
	}
	return out;
}

/* ---- entry points ---- */

/* run handles the batch in[0:n] and leaves the output in *out (empty when
 * every message succeeded). It calls sched_yield once, which imports it:
 * the host then preempts the module with a cheap countdown rather than a
 * check at every loop (see docs/function-abi.md). */
static void run(const char *in, size_t n, buf *out) {
	parsed pb = {0};
	if (!parse_batch(in, n, &pb)) {
		fprintf(stderr, "sluice sdk: decode batch: %s\n", pb.err ? pb.err : "invalid JSON");
		exit(1);
	}
	sluice_result r = {{0}, {0}};
	sched_yield();
	sluice_handler(&pb.b, &r);
	if (r.out.len)
		buf_str(&r.out, "]");
	if (r.emits.len) {
		buf_str(&r.out, r.out.len ? ",\"emit\":[" : "{\"emit\":[");
		buf_add(&r.out, r.emits.p, r.emits.len);
		buf_str(&r.out, "]");
		free(r.emits.p);
	}
	if (r.out.len)
		buf_str(&r.out, "}");
	batch_free(&pb);
	free(out->p);
	*out = r.out;
}

#ifdef SLUICE_REACTOR

static char *input;   /* the buffer handed out by sluice_alloc */
static size_t in_len;
static buf output;    /* the last output, readable until the next call */

__attribute__((export_name("sluice_alloc"))) uint32_t sluice_alloc(uint32_t n) {
	free(output.p);
	output = (buf){0};
	free(input);
	input = malloc(n ? n : 1);
	if (!input) {
		fputs("sluice sdk: out of memory\n", stderr);
		exit(1);
	}
	in_len = n;
	return (uint32_t)(uintptr_t)input;
}

__attribute__((export_name("sluice_handle"))) uint64_t sluice_handle(uint32_t ptr, uint32_t n) {
	if (!input || ptr != (uint32_t)(uintptr_t)input || n > in_len) {
		fprintf(stderr, "sluice sdk: sluice_handle(%u, %u) does not name the buffer from sluice_alloc\n", ptr, n);
		exit(1);
	}
	run(input, n, &output);
	free(input);
	input = NULL;
	fflush(stdout); /* a reactor's stdout is logged, not read as output */
	fflush(stderr);
	if (!output.len)
		return 0;
	return (uint64_t)(uintptr_t)output.p << 32 | (uint64_t)output.len;
}

#else

int main(void) {
	buf in = {0}, out = {0};
	for (;;) {
		buf_grow(&in, 65536);
		ssize_t k = read(0, in.p + in.len, in.cap - in.len);
		if (k < 0) {
			perror("sluice sdk: read batch from stdin");
			return 1;
		}
		if (k == 0)
			break;
		in.len += (size_t)k;
	}
	run(in.p ? in.p : "", in.len, &out);
	if (out.len && fwrite(out.p, 1, out.len, stdout) != out.len) {
		perror("sluice sdk: write output");
		return 1;
	}
	return fflush(stdout) ? 1 : 0;
}

#endif
