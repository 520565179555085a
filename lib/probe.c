/* SPDX-License-Identifier: Apache-2.0 */
/* probe: one probe on the loop: handler choice, tries while it errors, the report */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "probe_int.h"

static void call_free(struct kt_probe_call *c)
{
	if (c->soon)
		kt_timer_cancel(c->loop, c->soon);
	free(c->soon_output);
	free(c->host);
	free(c);
}

static void try_once(struct kt_probe_call *c)
{
	struct kt_err err = { 0 };
	int rc;

	c->tries++;
	switch (c->spec->kind) {
	case KT_PROBE_EXEC:
		rc = kt_probe_exec_start(c, &err);
		break;
	case KT_PROBE_HTTP:
		rc = kt_probe_http_start(c, &err);
		break;
	case KT_PROBE_TCP:
		rc = kt_probe_tcp_start(c, &err);
		break;
	case KT_PROBE_GRPC:
		rc = kt_probe_grpc_start(c, &err);
		break;
	default:
		rc = kt_error(&err, "missing probe handler");
	}
	if (rc == 0)
		return;
	/* a start that failed is an attempt that errored; report it from the loop */
	if (kt_probe_attempt_done_soon(c, KT_PROBE_UNKNOWN, true, err.msg) < 0)
		KT_WARN("probe lost", "reason=\"out of memory\"");
}

void kt_probe_attempt_done(struct kt_probe_call *c, enum kt_probe_result r, bool errored,
			   const char *output, size_t len)
{
	struct kt_probe_outcome o = { 0 };

	c->attempt = NULL;
	if (errored && c->tries < KT_PROBE_MAX_TRIES) {
		KT_V(4, "probe errored, trying again", "try=%d error=\"%.*s\"", c->tries,
		     (int)(len > 200 ? 200 : len), output ? output : "");
		try_once(c);
		return;
	}
	o.result = errored ? KT_PROBE_UNKNOWN : r;
	o.output = output ? output : "";
	o.output_len = output ? len : 0;
	o.tries = c->tries;
	c->fn(c->loop, &o, c->arg);
	call_free(c);
}

static void soon_fire(struct kt_loop *loop, void *arg)
{
	struct kt_probe_call *c = arg;
	char *out = c->soon_output;

	c->soon = NULL;
	c->soon_output = NULL;
	kt_probe_attempt_done(c, c->soon_result, c->soon_error, out, strlen(out));
	free(out);
}

int kt_probe_attempt_done_soon(struct kt_probe_call *c, enum kt_probe_result r, bool errored,
			       const char *output)
{
	c->attempt = NULL;
	c->soon_result = r;
	c->soon_error = errored;
	free(c->soon_output);
	c->soon_output = strdup(output ? output : "");
	if (!c->soon_output)
		return -1;
	c->soon = kt_timer_add(c->loop, 0, soon_fire, c);
	return c->soon ? 0 : -1;
}

struct kt_probe_call *kt_probe_start(struct kt_loop *loop, const struct kt_probe_spec *spec,
				     const char *host, kt_probe_done_fn *fn, void *arg,
				     struct kt_err *err)
{
	struct kt_probe_call *c = calloc(1, sizeof(*c));

	if (c)
		c->host = strdup(spec->host && *spec->host ? spec->host
				 : host ? host : "127.0.0.1");
	if (!c || !c->host) {
		free(c);
		kt_error(err, "out of memory");
		return NULL;
	}
	c->loop = loop;
	c->spec = spec;
	c->fn = fn;
	c->arg = arg;
	c->timeout_ms = (spec->timeout_s > 0 ? spec->timeout_s : 1) * 1000;
	try_once(c);
	return c;
}

void kt_probe_cancel(struct kt_probe_call *c)
{
	void *a = c ? c->attempt : NULL;

	if (!c)
		return;
	if (a) {
		c->attempt = NULL;
		switch (c->spec->kind) {
		case KT_PROBE_EXEC:
			kt_probe_exec_cancel(c->loop, a);
			break;
		case KT_PROBE_HTTP:
			kt_probe_http_cancel(c->loop, a);
			break;
		case KT_PROBE_TCP:
			kt_probe_tcp_cancel(c->loop, a);
			break;
		case KT_PROBE_GRPC:
			kt_probe_grpc_cancel(c->loop, a);
			break;
		default:
			break;
		}
	}
	call_free(c);
}

