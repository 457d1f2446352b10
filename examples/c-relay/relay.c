/*
 * relay.c: a plain WASI function in C that passes messages on with emit
 * (Function ABI v1.1), written with the C SDK (sdk/c), not the Go one.
 *
 * A message whose body has "to": "QUEUE" is passed on to QUEUE, for that
 * message (so it goes out only if the message succeeds); "fail": true
 * fails it after asking, so its emit is dropped. Every batch also
 * publishes {"relayed": true} to the topic "audit", for the batch.
 */
#include <stdlib.h>

#include "sluice.h"

void sluice_handler(const sluice_batch *b, sluice_result *r) {
	for (size_t i = 0; i < b->n_messages; i++) {
		const sluice_message *m = &b->messages[i];
		char *to = sluice_json_string(sluice_json_get(m->body, "to"));
		if (to) {
			/* The body is raw JSON text inside the batch: pass it on as is. */
			char *body = malloc(m->body.len + 1);
			if (!body)
				abort();
			for (size_t k = 0; k < m->body.len; k++)
				body[k] = m->body.json[k];
			body[m->body.len] = 0;
			sluice_emit(r, to, body, m->id);
			free(body);
			free(to);
		}
		if (sluice_json_is_true(sluice_json_get(m->body, "fail")))
			sluice_retry(r, m->id, 0, "asked to fail");
	}
	sluice_emit_topic(r, "audit", "{\"relayed\":true}", NULL);
}
