/*
 * sluice_host.h: the Sluice C SDK's wrappers for the v1.1 host imports of
 * module "sluice" (outbound HTTP and key-value stores; see section 8 of
 * docs/function-abi.md). Link sluice_host.c beside sluice.c only when a
 * function calls them: a module that does not is a plain v1 module.
 *
 *     sluice_http_response resp;
 *     if (sluice_http_request("POST", "https://api.example.com/v1/charges",
 *                             "{\"Content-Type\":[\"application/json\"]}",
 *                             "{\"amount\":42}", 13, &resp) == SLUICE_OK) {
 *         ... resp.status, resp.body, resp.body_len ...
 *         sluice_http_response_free(&resp);
 *     } else {
 *         sluice_log("error", sluice_host_error(), NULL);
 *     }
 *
 *     int32_t counts;
 *     int64_t n;
 *     if (sluice_kv_open("counts", &counts) == SLUICE_OK)
 *         sluice_kv_increment(counts, "hits", 1, &n);
 *
 * Every call returns an errno (SLUICE_OK, or SLUICE_E* below); after a
 * failure sluice_host_error() is the host's one-line message. Keys here
 * are NUL-terminated strings (1-1024 bytes); values are any bytes.
 */
#ifndef SLUICE_HOST_H
#define SLUICE_HOST_H

#include "sluice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Errnos of the host calls (docs/function-abi.md, section 8). */
enum {
	SLUICE_OK = 0,
	SLUICE_EDENIED = 1,    /* not allowed by the manifest */
	SLUICE_EINVALID = 2,   /* malformed arguments */
	SLUICE_ELIMIT = 3,     /* a cap was hit */
	SLUICE_EFAILED = 4,    /* network error, timeout, store error */
	SLUICE_ENOTFOUND = 5,  /* no such key */
	SLUICE_ECONFLICT = 6   /* compare-and-set found another value */
};

/* sluice_host_error returns the message of the last failed host call
 * ("" when it succeeded); valid until the next call. */
const char *sluice_host_error(void);

/* An HTTP response. body is the decoded body (NUL-terminated beyond
 * body_len); headers is the raw JSON object {"Name":["value",...]}. */
typedef struct {
	int status;
	char *body;
	size_t body_len;
	sluice_json headers;
	char *doc_; /* the response document, owned */
} sluice_http_response;

/* sluice_http_request performs one request through the host: method
 * (NULL: GET), url (must match the manifest's allowed_outbound_hosts),
 * headers_json (NULL or a JSON object {"Name":["value",...]}) and body
 * (NULL or body_len bytes). A non-2xx status is a response like any other
 * (SLUICE_OK). Free a response with sluice_http_response_free. */
int sluice_http_request(const char *method, const char *url, const char *headers_json,
                        const char *body, size_t body_len, sluice_http_response *resp);
void sluice_http_response_free(sluice_http_response *resp);

/* sluice_kv_open opens store name (listed in the manifest's stores) and
 * writes its handle to *store; handles stay valid across batches. */
int sluice_kv_open(const char *name, int32_t *store);
/* sluice_kv_get sets *value to a new buffer (NUL-terminated beyond
 * *value_len) holding the value of key; the caller frees it.
 * SLUICE_ENOTFOUND when key is absent or expired. */
int sluice_kv_get(int32_t store, const char *key, char **value, size_t *value_len);
/* sluice_kv_set stores value at key, expiring after ttl_ms (0: never). */
int sluice_kv_set(int32_t store, const char *key, const char *value, size_t value_len, int64_t ttl_ms);
/* sluice_kv_delete removes key (SLUICE_ENOTFOUND when absent). */
int sluice_kv_delete(int32_t store, const char *key);
/* sluice_kv_increment adds delta to the decimal integer at key (absent:
 * 0) and writes the new value to *value (may be NULL). */
int sluice_kv_increment(int32_t store, const char *key, int64_t delta, int64_t *value);
/* sluice_kv_compare_and_set sets key to value only if it holds old
 * (old_len bytes), or with if_absent only if key is absent (old is then
 * ignored); SLUICE_ECONFLICT otherwise. */
int sluice_kv_compare_and_set(int32_t store, const char *key, const char *old, size_t old_len,
                              const char *value, size_t value_len, bool if_absent, int64_t ttl_ms);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_HOST_H */
