/* SPDX-License-Identifier: Apache-2.0 */
/* node-ping: keep nodes' Leases in kube-node-lease renewed, once or on an interval */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <curl/curl.h>

#include "kt.h"

enum {
	OPT_ONCE = KT_OPT_TOOL,
	OPT_INTERVAL,
	OPT_LEASE_DURATION,
	OPT_HOLDER,
	OPT_CHECK,
	OPT_CHECK_TIMEOUT,
	OPT_STATUS_INTERVAL,
	OPT_NODES_FROM,
};

/* a connection cap for HTTP/1.1 servers; HTTP/2 multiplexes over fewer */
#define PING_MAX_CONNS 32L
/* lease requests in flight at once, no more than the connections: the rest
 * wait here in order, holding no transfer.  Transfers left waiting inside
 * curl for a free connection cost memory and, measured, made renewals late
 * by seconds at 10,000 nodes */
#define PING_MAX_INFLIGHT 32
/* from this many nodes on, one LIST of the leases replaces a GET each */
#define PING_LIST_MIN 8
#define PING_STATUS_DEFAULT_MS 60000

struct ping_ctl;

struct ping_node {
	struct ping_ctl *ctl;
	char *name;
	struct kt_lease lease;
	struct kt_timer *timer;		/* the next renewal, or a backoff wait */
	struct kt_api_call *call;	/* the request in flight */
	struct ping_node *lease_next;	/* in the lease queue for a slot */
	struct ping_node *status_next;	/* in the status queue for a slot */
	bool waiting;			/* for the check's result */
	int64_t due_ms;			/* when the renewal was meant to start */
	/* --status-interval */
	struct kt_timer *status_timer;
	struct kt_api_call *status_call;
	struct kt_nodesend status;	/* the refresh of its conditions' heartbeats */
};

/* the health check: one at a time, its result shared by every node */
struct ping_check {
	pid_t pid;			/* running child, 0 when none */
	struct kt_timer *kill_timer;
	bool timed_out;
	bool have;			/* a result is known */
	bool ok;
	int64_t done_ms;		/* loop time the result came */
	char why[512];
};

/* nodes waiting for a request slot, in order */
struct ping_queue {
	struct ping_node *head, *tail;
};

struct ping_ctl {
	struct kt_api_opts api_opts;
	bool once, once_set;
	int64_t interval_ms;		/* 0 until set or derived */
	int64_t duration_s;
	const char *holder;
	const char *check_cmd;
	int64_t check_timeout_ms;
	int64_t status_ms;		/* 0: no status refresh */
	bool status_set;
	bool json_out;
	const char *nodes_from;

	char **names;
	size_t n;
	struct ping_node *nodes;
	struct kt_api *api;
	struct kt_loop *loop;
	struct kt_schema *schema;	/* the built-in Node schema, built once */
	struct ping_check check;
	size_t pending;			/* --once: renewals not ended yet */
	size_t inflight;		/* requests running */
	struct ping_queue leases;	/* waiting for a slot; served first */
	struct ping_queue statuses;
	struct kt_tally troubles;	/* failures to report, grouped by cause */
	struct kt_timer *tally_timer;	/* looping: reports them once an interval */
	bool failed;			/* --once: some renewal did not succeed */
	bool broken;			/* the loop itself failed */
	bool stopping;
};

static void usage(FILE *out)
{
	fputs("Usage: node-ping [options] <node>...\n"
	      "\n"
	      "Keep the Lease of each <node> in kube-node-lease renewed, as the kubelet and\n"
	      "virtual-kubelet do: once (for cron) or every interval until stopped.\n"
	      "\n"
	      "Options:\n"
	      "      --once               renew once and exit (the default)\n"
	      "      --interval=<duration>\n"
	      "                           renew every <duration> until SIGTERM or SIGINT\n"
	      "                           (default: lease duration / 4)\n"
	      "      --lease-duration=<seconds>\n"
	      "                           leaseDurationSeconds to write (default 40)\n"
	      "      --holder-identity=<name>\n"
	      "                           holderIdentity to write (default: the node name)\n"
	      "      --check=<command>    run <command> with /bin/sh before renewing; a\n"
	      "                           failure or timeout skips the renewal\n"
	      "      --check-timeout=<duration>\n"
	      "                           kill a check running longer (default 5s)\n"
	      "      --status-interval=<duration>\n"
	      "                           also refresh the node's condition heartbeats\n"
	      "                           every <duration> (default 1m with --interval)\n"
	      "      --nodes-from=<file>  read node names from <file>, one a line ('-' for\n"
	      "                           standard input)\n"
	      "  -o, --output=json        print one JSON line per renewal\n"
	      KT_USAGE_API
	      KT_USAGE_COMMON
	      "\n"
	      "Example:\n"
	      "  node-ping --interval=10s --check='curl -fsS localhost:8080/healthz' vk-1\n"
	      "\n"
	      "See node-ping(1).\n", out);
}

/* ------------------------------------------------------------- node names */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_name(struct ping_ctl *ctl, const char *name, const char *where)
{
	struct kt_err err = { 0 };
	char **grown;

	if (kt_lease_check_name(name, &err) < 0) {
		if (where)
			kt_usage_error("%s: %s", where, err.msg);
		kt_usage_error("%s", err.msg);
	}
	grown = realloc(ctl->names, (ctl->n + 1) * sizeof(*grown));
	if (!grown)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	ctl->names = grown;
	ctl->names[ctl->n] = strdup(name);
	if (!ctl->names[ctl->n])
		kt_die(KT_EXIT_FAILURE, "out of memory");
	ctl->n++;
}

/* one name a line; blank lines and # comments skipped, spaces around trimmed */
static void read_names(struct ping_ctl *ctl, const char *path)
{
	bool is_stdin = !strcmp(path, "-");
	FILE *f = is_stdin ? stdin : fopen(path, "r");
	char *line = NULL, where[300];
	size_t cap = 0;
	unsigned long lineno = 0;
	ssize_t len;

	if (!f)
		kt_usage_error("cannot open '%s': %s", path, strerror(errno));
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *s = line, *e = line + len;

		lineno++;
		while (s < e && strchr(" \t", *s))
			s++;
		while (e > s && strchr(" \t\r\n", e[-1]))
			e--;
		*e = '\0';
		if (!*s || *s == '#')
			continue;
		snprintf(where, sizeof(where), "%s:%lu", is_stdin ? "<stdin>" : path, lineno);
		add_name(ctl, s, where);
	}
	if (ferror(f))
		kt_usage_error("cannot read '%s': %s", path, strerror(errno));
	free(line);
	if (!is_stdin)
		fclose(f);
}

/* ----------------------------------------------------------------- output */

/* one line per cause: the first node's message and how many more had it */
static void say_trouble(const char *msg, size_t more, void *arg)
{
	if (more)
		kt_errmsg("%s (and %zu more node%s with the same error)", msg, more,
			  more == 1 ? "" : "s");
	else
		kt_errmsg("%s", msg);
}

static void trouble(struct ping_ctl *ctl, const char *node, const char *msg)
{
	if (kt_tally_add(&ctl->troubles, node, msg) < 0)
		kt_errmsg("%s", msg);
}

static void troubles_flush(struct ping_ctl *ctl)
{
	kt_tally_flush(&ctl->troubles, say_trouble, NULL);
}


static void report(struct ping_node *node)
{
	struct kt_lease *l = &node->lease;
	cJSON *doc;

	if ((l->result == KT_LEASE_FAILED || l->no_node) && !node->ctl->stopping)
		trouble(node->ctl, node->name, l->err.msg);
	if (l->result == KT_LEASE_RENEWED || l->result == KT_LEASE_CREATED)
		KT_V(2, "lease renewed", "node=\"%s\" result=\"%s\" renewTime=\"%s\"",
		     node->name, kt_lease_result_name(l->result), l->renew_time);
	if (l->changed & KT_LEASE_OWNER_REPAIRED)
		KT_V(1, "lease owner repaired", "node=\"%s\" uid=\"%s\"", node->name,
		     l->node_uid ? l->node_uid : "");
	if (!node->ctl->json_out)
		return;
	doc = cJSON_CreateObject();
	if (!doc || !cJSON_AddStringToObject(doc, "node", node->name) ||
	    !cJSON_AddStringToObject(doc, "result", kt_lease_result_name(l->result)))
		goto out;
	if (l->renew_time[0] && l->result != KT_LEASE_FAILED &&
	    l->result != KT_LEASE_SKIPPED && !cJSON_AddStringToObject(doc, "renewTime", l->renew_time))
		goto out;
	if ((l->result == KT_LEASE_FAILED || l->result == KT_LEASE_SKIPPED) &&
	    !cJSON_AddStringToObject(doc, "error", l->err.msg))
		goto out;
	kt_emit(doc, 0);
out:
	cJSON_Delete(doc);
}

/* --------------------------------------------------------------- renewal */

static void node_schedule(struct ping_node *node, int64_t delay_ms);
static void renewal_send(struct ping_node *node);
static void slot_pump(struct ping_ctl *ctl);
static void slot_release(struct ping_ctl *ctl);

static bool status_retryable(long status)
{
	return status == 0 || status == 429 || status >= 500;
}

/* a renewal ended (renewed, created, skipped or failed) */
static void renewal_end(struct ping_node *node)
{
	struct ping_ctl *ctl = node->ctl;
	struct kt_lease *l = &node->lease;
	int64_t next = ctl->interval_ms;

	report(node);
	if (l->result != KT_LEASE_RENEWED && l->result != KT_LEASE_CREATED)
		ctl->failed = true;
	if (ctl->once) {
		if (--ctl->pending == 0)
			kt_loop_stop(ctl->loop);
		return;
	}
	/* an outage keeps backing off, never longer than the interval */
	if (l->result == KT_LEASE_FAILED && status_retryable(l->err.http_status) &&
	    kt_lease_next_backoff(l) < next)
		next = kt_lease_next_backoff(l);
	node_schedule(node, next);
}

static void on_wait(struct kt_loop *loop, void *arg)
{
	struct ping_node *node = arg;

	node->timer = NULL;
	renewal_send(node);
}

static void on_reply(struct kt_api_call *call, struct kt_api_resp *resp,
		     const struct kt_err *err, void *arg)
{
	struct ping_node *node = arg;
	struct kt_lease_reply r = { 0 };
	int64_t delay = 0;

	node->call = NULL;
	slot_release(node->ctl);
	r.status = err ? err->http_status : resp->status;
	r.json = resp->json;
	r.error = err ? err->msg : NULL;
	switch (kt_lease_reply(&node->lease, &r, kt_loop_now(node->ctl->loop), &delay)) {
	case KT_LEASE_SEND:
		renewal_send(node);
		break;
	case KT_LEASE_WAIT:
		KT_V(4, "lease retry", "node=\"%s\" status=%ld delayMs=%lld", node->name,
		     r.status, (long long)delay);
		node->timer = kt_timer_add(node->ctl->loop, delay, on_wait, node);
		if (!node->timer)
			kt_die(KT_EXIT_FAILURE, "out of memory");
		break;
	case KT_LEASE_DONE:
		renewal_end(node);
		break;
	}
	slot_pump(node->ctl);
}

/*
 * Request slots: at most PING_MAX_INFLIGHT requests run; the rest wait in
 * node-ping, lease requests before status ones, so heartbeats go first.
 */
static struct ping_node **next_of(struct ping_ctl *ctl, struct ping_queue *q,
				  struct ping_node *node)
{
	return q == &ctl->leases ? &node->lease_next : &node->status_next;
}

/* true when the caller may send now (the slot is taken), else node waits in q */
static bool slot_take(struct ping_ctl *ctl, struct ping_queue *q, struct ping_node *node)
{
	if (ctl->inflight < PING_MAX_INFLIGHT) {
		ctl->inflight++;
		return true;
	}
	if (q->tail)
		*next_of(ctl, q, q->tail) = node;
	else
		q->head = node;
	q->tail = node;
	return false;
}

static void slot_release(struct ping_ctl *ctl)
{
	ctl->inflight--;
}

static struct ping_node *queue_pop(struct ping_ctl *ctl, struct ping_queue *q)
{
	struct ping_node *node = q->head;

	if (!node)
		return NULL;
	q->head = *next_of(ctl, q, node);
	if (!q->head)
		q->tail = NULL;
	*next_of(ctl, q, node) = NULL;
	return node;
}

static void status_send(struct ping_node *node);

static void slot_pump(struct ping_ctl *ctl)
{
	while (ctl->inflight < PING_MAX_INFLIGHT && !ctl->stopping) {
		struct ping_node *node = queue_pop(ctl, &ctl->leases);

		if (node) {
			renewal_send(node);
			continue;
		}
		node = queue_pop(ctl, &ctl->statuses);
		if (!node)
			break;
		status_send(node);
	}
}

static void renewal_send(struct ping_node *node)
{
	struct ping_ctl *ctl = node->ctl;
	struct kt_lease_req lr;
	struct kt_api_req req = { 0 };
	struct kt_err err = { 0 };

	if (!slot_take(ctl, &ctl->leases, node))
		return;
	if (kt_lease_request(&node->lease, kt_now_us(), &lr, &err) < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	req.method = lr.method;
	req.path = lr.path;
	req.body = lr.body;
	req.body_len = lr.body_len;
	/* lease decides about retries and their backoff, not the client */
	req.flags = KT_API_NO_RETRY;
	node->call = kt_api_start(ctl->api, ctl->loop, &req, on_reply, node, &err);
	if (!node->call) {
		struct kt_api_resp none = { 0 };

		on_reply(NULL, &none, &err, node);
	}
}

static void renewal_start(struct ping_node *node)
{
	struct ping_ctl *ctl = node->ctl;
	int64_t now = kt_loop_now(ctl->loop), deadline = 0;
	int64_t budget = kt_api_kcfg(ctl->api)->timeout_ms;

	if (!ctl->once)
		budget = ctl->interval_ms;
	if (budget > 0)
		deadline = now + budget;
	/* looping, the status refresh reads the node anyway: the renewal reads
	 * it only after a failure (or with no status refresh) */
	kt_lease_begin(&node->lease, deadline,
		       ctl->once || !ctl->status_ms || node->lease.result != KT_LEASE_RENEWED);
	renewal_send(node);
}

/* ----------------------------------------------------------------- check */

static void check_start(struct ping_ctl *ctl);

static void skip(struct ping_node *node, const char *why)
{
	kt_lease_begin(&node->lease, 0, true);
	node->lease.result = KT_LEASE_SKIPPED;
	kt_error(&node->lease.err, "%s", why);
	renewal_end(node);
}

/* a renewal is due: gate it on the check, then start it */
static void node_due(struct ping_node *node)
{
	struct ping_ctl *ctl = node->ctl;
	struct ping_check *ck = &ctl->check;
	int64_t now = kt_loop_now(ctl->loop);

	if (!ctl->check_cmd) {
		renewal_start(node);
		return;
	}
	/* a result is good for half an interval, so each node waits for a
	 * check that started after its previous renewal */
	if (!ck->pid && ck->have && !ctl->once && now - ck->done_ms < ctl->interval_ms / 2) {
		if (ck->ok)
			renewal_start(node);
		else
			skip(node, ck->why);
		return;
	}
	node->waiting = true;
	if (!ck->pid)
		check_start(ctl);
}

static void check_done(struct ping_ctl *ctl)
{
	struct ping_check *ck = &ctl->check;

	ck->have = true;
	ck->done_ms = kt_loop_now(ctl->loop);
	if (!ck->ok && !ctl->stopping)
		kt_errmsg("%s", ck->why);
	for (size_t i = 0; i < ctl->n && !ctl->stopping; i++) {
		struct ping_node *node = &ctl->nodes[i];

		if (!node->waiting)
			continue;
		node->waiting = false;
		if (ck->ok)
			renewal_start(node);
		else
			skip(node, ck->why);
	}
}

static void on_check_exit(struct kt_loop *loop, pid_t pid, int status, void *arg)
{
	struct ping_ctl *ctl = arg;
	struct ping_check *ck = &ctl->check;
	char tmo[32];

	ck->pid = 0;
	if (ck->kill_timer)
		kt_timer_cancel(loop, ck->kill_timer);
	ck->kill_timer = NULL;
	ck->ok = !ck->timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (ck->timed_out)
		snprintf(ck->why, sizeof(ck->why), "check '%s' timed out after %s", ctl->check_cmd,
			 kt_duration_format(ctl->check_timeout_ms, tmo, sizeof(tmo)));
	else if (WIFEXITED(status))
		snprintf(ck->why, sizeof(ck->why), "check '%s' failed: exit status %d",
			 ctl->check_cmd, WEXITSTATUS(status));
	else
		snprintf(ck->why, sizeof(ck->why), "check '%s' failed: killed by signal %d",
			 ctl->check_cmd, WTERMSIG(status));
	KT_V(2, "check done", "ok=%s", ck->ok ? "true" : "false");
	check_done(ctl);
}

static void on_check_timeout(struct kt_loop *loop, void *arg)
{
	struct ping_ctl *ctl = arg;

	ctl->check.kill_timer = NULL;
	ctl->check.timed_out = true;
	/* the whole group: a shell's children would otherwise keep running */
	kill(-ctl->check.pid, SIGKILL);
}

/* the child: own process group, no signals blocked, stdout kept off ours */
static void check_exec(const char *cmd)
{
	int null = open("/dev/null", O_RDONLY);

	setpgid(0, 0);
	kt_loop_sigmask_reset();
	if (null >= 0)
		dup2(null, STDIN_FILENO);
	dup2(STDERR_FILENO, STDOUT_FILENO);
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	_exit(127);
}

static void check_start(struct ping_ctl *ctl)
{
	struct ping_check *ck = &ctl->check;
	struct kt_err err = { 0 };
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		check_exec(ctl->check_cmd);
	if (pid < 0) {
		snprintf(ck->why, sizeof(ck->why), "check '%s': cannot fork: %s", ctl->check_cmd,
			 strerror(errno));
		ck->ok = false;
		check_done(ctl);
		return;
	}
	setpgid(pid, pid);
	ck->pid = pid;
	ck->timed_out = false;
	if (kt_loop_watch_child(ctl->loop, pid, on_check_exit, ctl, &err) < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	ck->kill_timer = kt_timer_add(ctl->loop, ctl->check_timeout_ms, on_check_timeout, ctl);
	if (!ck->kill_timer)
		kt_die(KT_EXIT_FAILURE, "out of memory");
}

/* ------------------------------------------------------------- scheduling */

static void on_due(struct kt_loop *loop, void *arg)
{
	struct ping_node *node = arg;
	int64_t late = kt_loop_now(loop) - node->due_ms;

	node->timer = NULL;
	if (late > 100)
		KT_V(4, "renewal late", "node=\"%s\" ms=%lld", node->name, (long long)late);
	node_due(node);
}

static void node_schedule(struct ping_node *node, int64_t delay_ms)
{
	struct ping_ctl *ctl = node->ctl;

	node->due_ms = kt_loop_now(ctl->loop) + delay_ms;
	node->timer = kt_timer_add(ctl->loop, delay_ms, on_due, node);
	if (!node->timer)
		kt_die(KT_EXIT_FAILURE, "out of memory");
}

static void on_stop_signal(struct kt_loop *loop, int signo, void *arg)
{
	struct ping_ctl *ctl = arg;

	KT_V(1, "stopping", "signal=%d", signo);
	ctl->stopping = true;
	if (ctl->once)
		ctl->failed = ctl->failed || ctl->pending > 0;
	if (ctl->check.pid)
		kill(-ctl->check.pid, SIGKILL);
	kt_loop_stop(loop);
}

/* ------------------------------------------------------- status heartbeat */

static void status_schedule(struct ping_node *node, int64_t delay_ms);

static void status_fail(struct ping_node *node, const char *msg)
{
	char line[sizeof(node->status.err.msg) + 320];

	if (node->ctl->stopping)
		return;
	snprintf(line, sizeof(line), "node/%s: cannot refresh status: %s", node->name, msg);
	trouble(node->ctl, node->name, line);
}

static void on_status_done(struct kt_api_call *call, struct kt_api_resp *resp,
			   const struct kt_err *err, void *arg);

/* sends the request the refresh asks for next, in a slot */
static void status_send(struct ping_node *node)
{
	struct ping_ctl *ctl = node->ctl;
	struct kt_nodesend_req nr;
	struct kt_api_req req = { 0 };
	struct kt_api_resp none = { 0 };
	struct kt_err err = { 0 };

	if (!slot_take(ctl, &ctl->statuses, node))
		return;
	if (kt_nodesend_request(&node->status, &nr, &err) == 0) {
		req.method = nr.method;
		req.path = nr.path;
		req.content_type = nr.content_type;
		req.body = nr.body;
		req.body_len = nr.body_len;
		node->status_call = kt_api_start(ctl->api, ctl->loop, &req, on_status_done, node,
						 &err);
	}
	if (!node->status_call)
		on_status_done(NULL, &none, &err, node);
}

/* a refresh ended: the node's uid goes to the lease, the outcome to the log */
static void status_end(struct ping_node *node)
{
	struct kt_nodesend *s = &node->status;

	if (s->current && kt_lease_set_node_uid(&node->lease, kt_json_get_string(
			kt_json_get_object(s->current, "metadata"), "uid")) < 0)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	switch (s->result) {
	case KT_NODESEND_ABSENT:
		/* not registered (yet): the renewal reads it before any write */
		if (kt_lease_set_node_uid(&node->lease, NULL) < 0)
			kt_die(KT_EXIT_FAILURE, "out of memory");
		KT_V(2, "status not refreshed", "node=\"%s\" reason=\"not found\"", node->name);
		break;
	case KT_NODESEND_FAILED:
		status_fail(node, s->err.msg);
		break;
	case KT_NODESEND_PATCHED:
		KT_V(2, "status refreshed", "node=\"%s\"", node->name);
		break;
	default:
		break;
	}
	status_schedule(node, node->ctl->status_ms);
}

static void on_status_done(struct kt_api_call *call, struct kt_api_resp *resp,
			   const struct kt_err *err, void *arg)
{
	struct ping_node *node = arg;
	struct kt_nodesend_reply r = { .json = resp->json, .err = err };

	node->status_call = NULL;
	slot_release(node->ctl);
	if (kt_nodesend_reply(&node->status, &r, kt_now_us()) == KT_NODESEND_SEND)
		status_send(node);
	else
		status_end(node);
	slot_pump(node->ctl);
}

static void on_status_due(struct kt_loop *loop, void *arg)
{
	struct ping_node *node = arg;
	struct ping_ctl *ctl = node->ctl;

	node->status_timer = NULL;
	/* as virtual-kubelet: no status while the provider is unhealthy; look
	 * again after a renew interval, by when a check will have run */
	if (ctl->check_cmd && !(ctl->check.have && ctl->check.ok)) {
		KT_V(2, "status not refreshed", "node=\"%s\" reason=\"check\"", node->name);
		status_schedule(node, ctl->interval_ms);
		return;
	}
	kt_nodesend_begin(&node->status, NULL);
	status_send(node);
}

/* the status timer never touches the renewal timer: a slow status refresh
 * cannot hold a heartbeat back */
static void status_schedule(struct ping_node *node, int64_t delay_ms)
{
	node->status_timer = kt_timer_add(node->ctl->loop, delay_ms, on_status_due, node);
	if (!node->status_timer)
		kt_die(KT_EXIT_FAILURE, "out of memory");
}

/* ----------------------------------------------------------------- setup */

static void ping_open(struct ping_ctl *ctl)
{
	struct kt_err err = { 0 };

	ctl->loop = kt_loop_new(&err);
	if (!ctl->loop)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	ctl->api = kt_api_open(&ctl->api_opts, &err);
	if (!ctl->api)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	curl_multi_setopt(kt_loop_multi(ctl->loop), CURLMOPT_MAX_HOST_CONNECTIONS, PING_MAX_CONNS);
	curl_multi_setopt(kt_loop_multi(ctl->loop), CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	if (kt_loop_on_signal(ctl->loop, SIGTERM, on_stop_signal, ctl, &err) < 0 ||
	    kt_loop_on_signal(ctl->loop, SIGINT, on_stop_signal, ctl, &err) < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	ctl->schema = kt_schema_builtin("Node", &err);
	if (!ctl->schema)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	ctl->nodes = calloc(ctl->n, sizeof(*ctl->nodes));
	if (!ctl->nodes)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	for (size_t i = 0; i < ctl->n; i++) {
		struct kt_lease_spec spec = { .node = ctl->names[i], .holder = ctl->holder,
					      .duration_s = ctl->duration_s };

		ctl->nodes[i].ctl = ctl;
		ctl->nodes[i].name = ctl->names[i];
		kt_lease_init(&ctl->nodes[i].lease, &spec);
		kt_nodesend_init(&ctl->nodes[i].status, ctl->names[i], ctl->schema,
				 KT_NODESEND_REFRESH);
	}
}

static struct ping_node *find_node(struct ping_ctl *ctl, const char *name)
{
	char **hit = bsearch(&name, ctl->names, ctl->n, sizeof(*ctl->names), cmp_names);

	return hit ? &ctl->nodes[hit - ctl->names] : NULL;
}

/* many nodes: one LIST of the leases, so first renewals PUT without a GET */
static void seed_leases(struct ping_ctl *ctl)
{
	struct kt_err err = { 0 };
	cJSON *list, *items, *item;

	if (ctl->n < PING_LIST_MIN)
		return;
	/* one try: on failure each node GETs its own, with its own backoff */
	list = kt_api_json(ctl->api, "GET", KT_LEASE_COLLECTION, NULL, NULL, KT_API_NO_RETRY,
			   &err);
	if (!list) {
		KT_V(1, "leases not listed", "error=\"%s\"", err.msg);
		return;
	}
	items = kt_json_get_array(list, "items");
	while (items && (item = cJSON_DetachItemFromArray(items, 0))) {
		const char *name = kt_json_get_string(kt_json_get_object(item, "metadata"), "name");
		struct ping_node *node = name ? find_node(ctl, name) : NULL;

		if (!node) {
			cJSON_Delete(item);
			continue;
		}
		if (kt_lease_take_latest(&node->lease, item) < 0)
			kt_die(KT_EXIT_FAILURE, "out of memory");
	}
	cJSON_Delete(list);
}

/* --once: all at once; else spread evenly over the first interval */
static void on_tally_due(struct kt_loop *loop, void *arg)
{
	struct ping_ctl *ctl = arg;

	troubles_flush(ctl);
	ctl->tally_timer = kt_timer_add(loop, ctl->interval_ms, on_tally_due, ctl);
	if (!ctl->tally_timer)
		kt_die(KT_EXIT_FAILURE, "out of memory");
}

static void ping_start(struct ping_ctl *ctl)
{
	seed_leases(ctl);
	/* looping, what failed in one interval is said once, at its end */
	if (!ctl->once)
		on_tally_due(ctl->loop, ctl);
	ctl->pending = ctl->n;
	for (size_t i = 0; i < ctl->n; i++) {
		struct ping_node *node = &ctl->nodes[i];

		if (ctl->once) {
			node->due_ms = kt_loop_now(ctl->loop);
			node_due(node);
			continue;
		}
		node_schedule(node, (int64_t)(ctl->interval_ms * (double)i / (double)ctl->n));
		if (ctl->status_ms)
			status_schedule(node,
					(int64_t)(ctl->status_ms * (double)i / (double)ctl->n));
	}
}

static void ping_close(struct ping_ctl *ctl)
{
	kt_api_free(ctl->api);
	kt_loop_free(ctl->loop);
	if (ctl->check.pid) {
		kill(-ctl->check.pid, SIGKILL);
		waitpid(ctl->check.pid, NULL, 0);
	}
	for (size_t i = 0; ctl->nodes && i < ctl->n; i++) {
		kt_lease_release(&ctl->nodes[i].lease);
		kt_nodesend_release(&ctl->nodes[i].status);
	}
	for (size_t i = 0; i < ctl->n; i++)
		free(ctl->names[i]);
	free(ctl->nodes);
	free(ctl->names);
	kt_schema_free(ctl->schema);
	kt_tally_release(&ctl->troubles);
}

/* --------------------------------------------------------------- options */

static void check_args(struct ping_ctl *ctl)
{
	char a[32], b[32];

	if (ctl->once_set && ctl->interval_ms)
		kt_usage_error("--once and --interval cannot be used together");
	ctl->once = !ctl->interval_ms;
	if (ctl->once && ctl->status_set)
		kt_usage_error("--status-interval needs --interval");
	if (!ctl->interval_ms)
		ctl->interval_ms = ctl->duration_s * 1000 / 4;
	if (ctl->interval_ms >= ctl->duration_s * 1000)
		kt_usage_error("--interval %s must be shorter than the lease duration %s",
			       kt_duration_format(ctl->interval_ms, a, sizeof(a)),
			       kt_duration_format(ctl->duration_s * 1000, b, sizeof(b)));
	if (!ctl->once && !ctl->status_set)
		ctl->status_ms = PING_STATUS_DEFAULT_MS;
	if (!ctl->n)
		kt_usage_error("missing node name");
}

/* a duration option that must be more than zero */
static int64_t positive_duration(const char *opt, const char *arg)
{
	int64_t ms = kt_opt_duration_ms(opt, arg);

	if (ms <= 0)
		kt_usage_error("invalid value '%s' for %s: must be more than 0", arg, opt);
	return ms;
}

static void parse_option(struct ping_ctl *ctl, int c)
{
	switch (c) {
	case OPT_ONCE:
		ctl->once_set = true;
		break;
	case OPT_INTERVAL:
		ctl->interval_ms = positive_duration("--interval", optarg);
		break;
	case OPT_LEASE_DURATION:
		ctl->duration_s = kt_opt_long("--lease-duration", optarg, 1, 2147483647L);
		break;
	case OPT_HOLDER:
		if (!*optarg)
			kt_usage_error("--holder-identity must not be empty");
		ctl->holder = optarg;
		break;
	case OPT_CHECK:
		ctl->check_cmd = optarg;
		break;
	case OPT_CHECK_TIMEOUT:
		ctl->check_timeout_ms = positive_duration("--check-timeout", optarg);
		break;
	case OPT_STATUS_INTERVAL:
		ctl->status_ms = positive_duration("--status-interval", optarg);
		ctl->status_set = true;
		break;
	case OPT_NODES_FROM:
		ctl->nodes_from = optarg;
		break;
	case 'o':
		if (strcmp(optarg, "json"))
			kt_usage_error("invalid value '%s' for --output: expected json", optarg);
		ctl->json_out = true;
		break;
	default:
		if (!kt_api_option(c, optarg, &ctl->api_opts))
			kt_common_option(c, usage);
	}
}

static void parse_args(struct ping_ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "lease-duration", required_argument, NULL, OPT_LEASE_DURATION },
		{ "holder-identity", required_argument, NULL, OPT_HOLDER },
		{ "check", required_argument, NULL, OPT_CHECK },
		{ "check-timeout", required_argument, NULL, OPT_CHECK_TIMEOUT },
		{ "status-interval", required_argument, NULL, OPT_STATUS_INTERVAL },
		{ "nodes-from", required_argument, NULL, OPT_NODES_FROM },
		{ "output", required_argument, NULL, 'o' },
		KT_LONGOPTS_API,
		KT_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 }
	};
	int c;

	ctl->duration_s = KT_LEASE_DURATION_DEFAULT;
	ctl->check_timeout_ms = 5000;
	while ((c = getopt_long(argc, argv, "o:" KT_SHORTOPTS_COMMON, longopts, NULL)) != -1)
		parse_option(ctl, c);
	for (int i = optind; i < argc; i++)
		add_name(ctl, argv[i], NULL);
	if (ctl->nodes_from)
		read_names(ctl, ctl->nodes_from);
	/* sorted, so duplicates sit side by side and a LIST can be matched */
	if (ctl->n > 1)
		qsort(ctl->names, ctl->n, sizeof(*ctl->names), cmp_names);
	for (size_t i = 1; i < ctl->n; i++)
		if (!strcmp(ctl->names[i - 1], ctl->names[i]))
			kt_usage_error("node '%s' is given twice", ctl->names[i]);
	check_args(ctl);
}

int main(int argc, char **argv)
{
	struct ping_ctl ctl = { 0 };
	struct kt_err err = { 0 };
	int rc;

	kt_init(argv);
	parse_args(&ctl, argc, argv);
	ping_open(&ctl);
	ping_start(&ctl);
	if (kt_loop_run(ctl.loop, &err) < 0) {
		kt_errmsg("%s", err.msg);
		ctl.broken = true;
	}
	troubles_flush(&ctl);
	rc = ctl.broken || (ctl.once && ctl.failed) ? KT_EXIT_FAILURE : KT_EXIT_OK;
	ping_close(&ctl);
	return rc;
}
