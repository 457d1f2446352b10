/*
 * host.c: a C function that calls the v1.1 host imports through the C
 * SDK's wrappers (sdk/c/sluice_host.h): an HTTP POST to the message's
 * "url", a request to its "denied_url" (refused), and the key-value
 * stores "counts" and "sessions" (and "other", not listed: refused). It
 * logs one line {"message":"host","summary":"..."} that
 * examples/hostcalls_test.go checks.
 */
#include "sluice.h"
#include "sluice_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char summary[512];

static void add(const char *fmt, const char *s, long long n) {
	size_t len = strlen(summary);
	if (len)
		summary[len++] = ' ';
	snprintf(summary + len, sizeof summary - len, fmt, s ? s : "", n);
}

void sluice_handler(const sluice_batch *b, sluice_result *r) {
	(void)r;
	for (size_t i = 0; i < b->n_messages; i++) {
		const sluice_message *m = &b->messages[i];
		char *url = sluice_json_string(sluice_json_get(m->body, "url"));
		char *denied = sluice_json_string(sluice_json_get(m->body, "denied_url"));
		summary[0] = 0;

		sluice_http_response resp;
		int e = sluice_http_request("POST", url, "{\"X-Test\":[\"c\"]}", "ping", 4, &resp);
		if (e == SLUICE_OK) {
			char text[128];
			snprintf(text, sizeof text, "%d:%.*s", resp.status, (int)resp.body_len, resp.body);
			add("http=%s", text, 0);
			sluice_http_response_free(&resp);
		} else {
			add("http=error:%s", sluice_host_error(), 0);
		}
		add("denied=%s%lld", NULL, sluice_http_request(NULL, denied, NULL, NULL, 0, &resp));

		int32_t counts = 0, sessions = 0, other = 0;
		int64_t n = 0;
		sluice_kv_open("counts", &counts);
		e = sluice_kv_increment(counts, "hits", 2, &n);
		add("inc=%s%lld", NULL, e == SLUICE_OK ? n : -e);

		sluice_kv_open("sessions", &sessions);
		sluice_kv_set(sessions, "k", "v1", 2, 0);
		char *v = NULL;
		size_t vlen = 0;
		if (sluice_kv_get(sessions, "k", &v, &vlen) == SLUICE_OK) {
			add("get=%s", v, 0);
			free(v);
		}
		add("cas=%s%lld", NULL, sluice_kv_compare_and_set(sessions, "k", "v1", 2, "v2", 2, false, 60000));
		add("cas2=%s%lld", NULL, sluice_kv_compare_and_set(sessions, "k", "v1", 2, "v3", 2, false, 0));
		add("absent=%s%lld", NULL, sluice_kv_compare_and_set(sessions, "k", NULL, 0, "v4", 2, true, 0));
		add("del=%s%lld", NULL, sluice_kv_delete(sessions, "k"));
		add("get2=%s%lld", NULL, sluice_kv_get(sessions, "k", &v, &vlen));
		add("open=%s%lld", NULL, sluice_kv_open("other", &other));
		sluice_log("info", "host", "id", m->id, "summary", summary, NULL);
		free(url);
		free(denied);
	}
}
