/* SPDX-License-Identifier: Apache-2.0 */
/* nodestream: node status sends on the loop, the latest desired state per node winning */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "log.h"
#include "nodestream.h"
#include "timeutil.h"

struct stream_node {
	struct stream_node *next;
	struct kt_nodestream *ns;	/* the stream it belongs to */
	char *name;
	cJSON *pending;			/* latest desired not yet started */
	struct kt_nodesend send;	/* the send running, if busy */
	struct kt_api_call *call;	/* the request in flight, if any */
	bool busy;
};

struct kt_nodestream {
	struct kt_api *api;
	struct kt_loop *loop;
	const struct kt_schema *schema;
	unsigned flags;
	const char *const *remove;
	kt_nodestream_fn *done;
	void *arg;
	struct stream_node *nodes;
};

struct kt_nodestream *kt_nodestream_new(struct kt_api *api, struct kt_loop *loop,
					const struct kt_schema *schema, unsigned flags,
					const char *const *remove, kt_nodestream_fn *done,
					void *arg, struct kt_err *err)
{
	struct kt_nodestream *ns = calloc(1, sizeof(*ns));

	if (!ns) {
		kt_error(err, "out of memory");
		return NULL;
	}
	*ns = (struct kt_nodestream){ api, loop, schema, flags, remove, done, arg, NULL };
	return ns;
}

static void node_start(struct stream_node *n);

/* the send ended: say how, then start what waits */
static void node_finish(struct stream_node *n)
{
	if (n->send.result != KT_NODESEND_FAILED)
		KT_V(2, "node status patched", "node=\"%s\" attempts=%d", n->name,
		     n->send.writes);
	n->ns->done(n->name, &n->send, n->ns->arg);
	n->busy = false;
	n->call = NULL;
	if (n->pending)
		node_start(n);
}

static void on_reply(struct kt_api_call *call, struct kt_api_resp *resp,
		     const struct kt_err *err, void *arg);

/* sends the request the node's send asks for next */
static void node_send(struct stream_node *n)
{
	struct kt_nodesend_req nr;
	struct kt_api_req req = { 0 };
	struct kt_err err = { 0 };

	if (kt_nodesend_request(&n->send, &nr, &err) == 0) {
		kt_nodesend_api_req(&nr, &req);
		n->call = kt_api_start(n->ns->api, n->ns->loop, &req, on_reply, n, &err);
		if (n->call)
			return;
	}
	n->send.err = err;
	n->send.result = KT_NODESEND_FAILED;
	node_finish(n);
}

static void on_reply(struct kt_api_call *call, struct kt_api_resp *resp,
		     const struct kt_err *err, void *arg)
{
	struct stream_node *n = arg;
	struct kt_nodesend *s = &n->send;
	struct kt_nodesend_reply r = { .json = resp->json, .err = err };

	n->call = NULL;
	if (kt_nodesend_reply(s, &r, kt_now_us()) == KT_NODESEND_DONE) {
		node_finish(n);
		return;
	}
	if (s->conflict) {
		KT_V(4, "conflict, reading the node again", "node=\"%s\" attempt=%d", n->name,
		     s->writes);
		/* a newer state came meanwhile: it is the one to send */
		if (n->pending)
			kt_nodesend_replace(s, n->pending);
		n->pending = NULL;
	}
	node_send(n);
}

static void node_start(struct stream_node *n)
{
	n->busy = true;
	kt_nodesend_begin(&n->send, n->pending);
	n->pending = NULL;
	node_send(n);
}

int kt_nodestream_push(struct kt_nodestream *ns, const char *name, cJSON *desired,
		       struct kt_err *err)
{
	struct stream_node *n;

	for (n = ns->nodes; n && strcmp(n->name, name) != 0; n = n->next)
		;
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (n)
			n->name = strdup(name);
		if (!n || !n->name) {
			free(n);
			cJSON_Delete(desired);
			return kt_error(err, "out of memory");
		}
		n->ns = ns;
		kt_nodesend_init(&n->send, n->name, ns->schema, ns->flags);
		n->send.remove = ns->remove;
		n->next = ns->nodes;
		ns->nodes = n;
	}
	if (n->pending)
		KT_V(2, "superseded by a newer desired state", "node=\"%s\"", name);
	cJSON_Delete(n->pending);
	n->pending = desired;
	if (!n->busy)
		node_start(n);
	return 0;
}

void kt_nodestream_free(struct kt_nodestream *ns)
{
	struct stream_node *n, *next;

	if (!ns)
		return;
	for (n = ns->nodes; n; n = next) {
		next = n->next;
		kt_api_cancel(n->call);
		cJSON_Delete(n->pending);
		kt_nodesend_release(&n->send);
		free(n->name);
		free(n);
	}
	free(ns);
}
