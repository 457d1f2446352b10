/*
 * sluice_host.c: wrappers for the v1.1 host imports of module "sluice".
 * See sluice_host.h and section 8 of docs/function-abi.md.
 */
#include "sluice_host.h"

#include <stdlib.h>
#include <string.h>

#define IMPORT(name) __attribute__((import_module("sluice"), import_name(name)))

IMPORT("result_read") int32_t sluice_import_result_read(char *buf, uint32_t len);
IMPORT("http_request") uint32_t sluice_import_http_request(const char *req, uint32_t len, uint32_t *resp_len);
IMPORT("kv_open") uint32_t sluice_import_kv_open(const char *name, uint32_t len, int32_t *handle);
IMPORT("kv_get") uint32_t sluice_import_kv_get(int32_t store, const char *key, uint32_t key_len, uint32_t *val_len);
IMPORT("kv_set") uint32_t sluice_import_kv_set(int32_t store, const char *key, uint32_t key_len, const char *val, uint32_t val_len, int64_t ttl_ms);
IMPORT("kv_delete") uint32_t sluice_import_kv_delete(int32_t store, const char *key, uint32_t key_len);
IMPORT("kv_increment") uint32_t sluice_import_kv_increment(int32_t store, const char *key, uint32_t key_len, int64_t delta, int64_t *value);
IMPORT("kv_compare_and_set") uint32_t sluice_import_kv_compare_and_set(int32_t store, const char *key, uint32_t key_len,
	const char *old, uint32_t old_len, const char *val, uint32_t val_len, uint32_t flags, int64_t ttl_ms);

static char *last_error;

const char *sluice_host_error(void) { return last_error ? last_error : ""; }

/* result returns the last call's result as a new NUL-terminated buffer. */
static char *result(size_t *len) {
	int32_t n = sluice_import_result_read(NULL, 0);
	if (n < 0)
		n = 0;
	char *p = malloc((size_t)n + 1);
	if (!p)
		abort();
	if (n > 0)
		sluice_import_result_read(p, (uint32_t)n);
	p[n] = 0;
	if (len)
		*len = (size_t)n;
	return p;
}

/* done records errno's message and returns errno. */
static int done(uint32_t errno_) {
	free(last_error);
	last_error = NULL;
	if (errno_ != 0)
		last_error = result(NULL);
	return (int)errno_;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void add(char **p, size_t *len, size_t *cap, const char *s, size_t n) {
	if (*len + n + 1 > *cap) {
		while (*len + n + 1 > *cap)
			*cap = *cap ? *cap * 2 : 256;
		*p = realloc(*p, *cap);
		if (!*p)
			abort();
	}
	memcpy(*p + *len, s, n);
	*len += n;
	(*p)[*len] = 0;
}

/* quote appends s as a JSON string. */
static void quote(char **p, size_t *len, size_t *cap, const char *s) {
	static const char hex[] = "0123456789abcdef";
	add(p, len, cap, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			add(p, len, cap, e, 2);
		} else if (c < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			add(p, len, cap, e, 6);
		} else {
			add(p, len, cap, (const char *)&c, 1);
		}
	}
	add(p, len, cap, "\"", 1);
}

static int b64val(char c) {
	const char *q = c ? strchr(b64, c) : NULL;
	return q ? (int)(q - b64) : -1;
}

/* unbase64 decodes s in place (standard, padded) and returns its length. */
static size_t unbase64(char *s) {
	size_t n = 0;
	unsigned acc = 0;
	int bits = 0;
	for (const char *q = s; *q && *q != '='; q++) {
		int v = b64val(*q);
		if (v < 0)
			continue;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			s[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	s[n] = 0;
	return n;
}

int sluice_http_request(const char *method, const char *url, const char *headers_json,
                        const char *body, size_t body_len, sluice_http_response *resp) {
	memset(resp, 0, sizeof *resp);
	char *req = NULL;
	size_t len = 0, cap = 0;
	add(&req, &len, &cap, "{\"method\":", 10);
	quote(&req, &len, &cap, method ? method : "GET");
	add(&req, &len, &cap, ",\"url\":", 7);
	quote(&req, &len, &cap, url ? url : "");
	if (headers_json) {
		add(&req, &len, &cap, ",\"headers\":", 11);
		add(&req, &len, &cap, headers_json, strlen(headers_json));
	}
	if (body) {
		add(&req, &len, &cap, ",\"body\":\"", 9);
		const unsigned char *b = (const unsigned char *)body;
		for (size_t i = 0; i < body_len; i += 3) {
			unsigned v = (unsigned)b[i] << 16;
			if (i + 1 < body_len)
				v |= (unsigned)b[i + 1] << 8;
			if (i + 2 < body_len)
				v |= b[i + 2];
			char e[4] = {b64[(v >> 18) & 63], b64[(v >> 12) & 63],
			             i + 1 < body_len ? b64[(v >> 6) & 63] : '=', i + 2 < body_len ? b64[v & 63] : '='};
			add(&req, &len, &cap, e, 4);
		}
		add(&req, &len, &cap, "\"", 1);
	}
	add(&req, &len, &cap, "}", 1);
	uint32_t resp_len = 0;
	uint32_t e = sluice_import_http_request(req, (uint32_t)len, &resp_len);
	free(req);
	if (done(e) != 0)
		return (int)e;
	size_t n;
	resp->doc_ = result(&n);
	sluice_json doc = {resp->doc_, n};
	int64_t status = 0;
	sluice_json_int(sluice_json_get(doc, "status"), &status);
	resp->status = (int)status;
	resp->headers = sluice_json_get(doc, "headers");
	sluice_json bj = sluice_json_get(doc, "body");
	resp->body = sluice_json_is_null(bj) ? NULL : sluice_json_string(bj);
	if (!resp->body) {
		resp->body = calloc(1, 1);
		if (!resp->body)
			abort();
	}
	resp->body_len = unbase64(resp->body);
	return SLUICE_OK;
}

void sluice_http_response_free(sluice_http_response *resp) {
	free(resp->body);
	free(resp->doc_);
	memset(resp, 0, sizeof *resp);
}

int sluice_kv_open(const char *name, int32_t *store) {
	return done(sluice_import_kv_open(name, (uint32_t)strlen(name), store));
}

int sluice_kv_get(int32_t store, const char *key, char **value, size_t *value_len) {
	uint32_t n = 0;
	*value = NULL;
	if (value_len)
		*value_len = 0;
	uint32_t e = sluice_import_kv_get(store, key, (uint32_t)strlen(key), &n);
	if (done(e) != 0)
		return (int)e;
	*value = result(value_len);
	return SLUICE_OK;
}

int sluice_kv_set(int32_t store, const char *key, const char *value, size_t value_len, int64_t ttl_ms) {
	return done(sluice_import_kv_set(store, key, (uint32_t)strlen(key), value, (uint32_t)value_len, ttl_ms));
}

int sluice_kv_delete(int32_t store, const char *key) {
	return done(sluice_import_kv_delete(store, key, (uint32_t)strlen(key)));
}

int sluice_kv_increment(int32_t store, const char *key, int64_t delta, int64_t *value) {
	int64_t v = 0;
	int e = done(sluice_import_kv_increment(store, key, (uint32_t)strlen(key), delta, &v));
	if (e == 0 && value)
		*value = v;
	return e;
}

int sluice_kv_compare_and_set(int32_t store, const char *key, const char *old, size_t old_len,
                              const char *value, size_t value_len, bool if_absent, int64_t ttl_ms) {
	return done(sluice_import_kv_compare_and_set(store, key, (uint32_t)strlen(key), old, (uint32_t)old_len,
	                                             value, (uint32_t)value_len, if_absent ? 1 : 0, ttl_ms));
}
