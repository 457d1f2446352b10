/*
 * {{.Name}}: a Sluice function in C. A message whose body has "permanent":
 * true goes to the dead-letter queue at once; one with "fail": true is
 * retried after "retry_after" seconds (default 60); every other message
 * is acked. Each decision is logged to stderr.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sluice.h"

void sluice_handler(const sluice_batch *b, sluice_result *r) {
	for (size_t i = 0; i < b->n_messages; i++) {
		const sluice_message *m = &b->messages[i];
		char *why = sluice_json_string(sluice_json_get(m->body, "error"));
		if (sluice_json_is_true(sluice_json_get(m->body, "permanent"))) {
			sluice_permanent(r, m->id, why ? why : "asked to fail permanently");
			sluice_log("error", "permanent", "id", m->id, NULL);
		} else if (sluice_json_is_true(sluice_json_get(m->body, "fail"))) {
			int64_t after = 60;
			sluice_json_int(sluice_json_get(m->body, "retry_after"), &after);
			sluice_retry(r, m->id, after, why ? why : "asked to fail");
			sluice_log("warn", "retry", "id", m->id, NULL);
		} else {
			sluice_log("info", "acked", "id", m->id, NULL);
		}
		free(why);
	}
}
