/*
 * sluice.h: the Sluice guest SDK for C (Function ABI v1.1, WASI preview 1).
 *
 * Write one function and link sluice.c beside it:
 *
 *     #include "sluice.h"
 *
 *     void sluice_handler(const sluice_batch *b, sluice_result *r) {
 *         for (size_t i = 0; i < b->n_messages; i++) {
 *             const sluice_message *m = &b->messages[i];
 *             if (sluice_json_is_true(sluice_json_get(m->body, "fail")))
 *                 sluice_retry(r, m->id, 30, "asked to fail");
 *         }
 *     }
 *
 * Build a command (a fresh instance per batch):
 *     clang --target=wasm32-wasi -O2 -o fn.wasm fn.c sluice.c
 * or a reactor (one instance reused across batches, much cheaper per batch):
 *     clang --target=wasm32-wasi -mexec-model=reactor -DSLUICE_REACTOR \
 *           -O2 -o fn.wasm fn.c sluice.c
 *
 * Every message the handler does not fail is acked. Log to stderr
 * (sluice_log); never write to stdout, which carries the output document
 * of a command. The contract the SDK implements is docs/function-abi.md.
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One JSON value, as raw text inside the batch (not NUL-terminated). A
 * missing value has json == NULL and len == 0. */
typedef struct {
	const char *json;
	size_t len;
} sluice_json;

/* One message of a batch. Strings are NUL-terminated and decoded. */
typedef struct {
	const char *id;         /* report failures with it */
	int64_t attempt;        /* 1 on the first delivery */
	const char *created_at; /* RFC 3339, UTC */
	sluice_json headers;    /* an object, or null */
	sluice_json body;       /* any JSON value */
} sluice_message;

/* One invocation's input. Valid only during sluice_handler. */
typedef struct {
	int64_t version; /* ABI version, 1 */
	const char *function_name;
	int64_t function_version;
	const char *trigger_type; /* "queue", "webhook", "cron" or "invoke" */
	const char *trigger_source;
	size_t n_messages;
	const sluice_message *messages;
} sluice_batch;

/* The failures of a batch, filled by the handler. */
typedef struct sluice_result sluice_result;

/* The function: defined by the user, called once per batch. */
void sluice_handler(const sluice_batch *b, sluice_result *r);

/* sluice_retry fails message id; it is delivered again after
 * retry_after_seconds (0: at once), counting toward the queue's receive
 * limit. error (may be NULL) is logged and kept with a dead message. */
void sluice_retry(sluice_result *r, const char *id, int64_t retry_after_seconds, const char *error);

/* sluice_permanent fails message id for good: it moves to the dead-letter
 * queue without further attempts. */
void sluice_permanent(sluice_result *r, const char *id, const char *error);

/* sluice_emit sends a message to queue when the batch settles (Function
 * ABI v1.1), in the same transaction as the batch's acks. body_json is the
 * body as JSON text (any value; NULL: null). for_id (may be NULL) is the
 * id of the message it belongs to: it is sent only if that message
 * succeeds; without it, unless the whole batch fails. The function's
 * manifest must allow the queue (emits: [pattern, ...]). */
void sluice_emit(sluice_result *r, const char *queue, const char *body_json, const char *for_id);

/* sluice_emit_topic publishes a message to topic (a copy to every
 * subscribed queue) when the batch settles, as sluice_emit. */
void sluice_emit_topic(sluice_result *r, const char *topic, const char *body_json, const char *for_id);

/* sluice_log writes one JSON log line to stderr:
 * {"level":level,"message":msg,key1:value1,...}. The arguments after msg
 * are string key/value pairs ended by NULL, e.g.
 *     sluice_log("info", "acked", "id", m->id, NULL);            */
void sluice_log(const char *level, const char *msg, ...);

/* JSON helpers over raw values (a message's body or headers). */

/* sluice_json_get returns the member key of object v (a missing value
 * when v is not an object or has no such member). */
sluice_json sluice_json_get(sluice_json v, const char *key);
/* sluice_json_is_true reports whether v is the literal true. */
bool sluice_json_is_true(sluice_json v);
/* sluice_json_is_null reports whether v is null or missing. */
bool sluice_json_is_null(sluice_json v);
/* sluice_json_int reads an integer (no fraction, no exponent) into *out. */
bool sluice_json_int(sluice_json v, int64_t *out);
/* sluice_json_string decodes a string value into a new NUL-terminated
 * buffer the caller frees; NULL when v is not a valid string. */
char *sluice_json_string(sluice_json v);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_H */
