/* SPDX-License-Identifier: Apache-2.0 */
/* bootstrap_run: node-bootstrap's run: files, CSRs posted and watched, renewals on the loop */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "api.h"
#include "bootstrap.h"
#include "bootstrap_run.h"
#include "core.h"
#include "fsio.h"
#include "json.h"
#include "kcfg.h"
#include "kt_err.h"
#include "log.h"
#include "loop.h"
#include "reflector.h"
#include "timeutil.h"
#include "x509.h"

#define PEM_FILE_MAX (1 << 20)

struct boot;

/* one certificate: client or serving */
struct slot {
	struct boot *b;
	enum kt_boot_kind kind;
	bool wanted;
	char *file;	  /* DIR/kubelet-*-current.pem */
	bool valid;	  /* a usable certificate is in place */
	int64_t renew_at; /* with --rotate: when it is renewed */
	struct kt_x509_info info;
	/* a request under way */
	char *key; /* the new key's PEM */
	size_t key_len;
	char *csr; /* the CSR's name */
	bool said_pending;
	bool waiting; /* the reflector runs */
	struct kt_refl refl;
	struct kt_refl_run *run;
	struct kt_timer *timer; /* the wait limit, the renewal, the retry, or settle */
	/* what the watch ended with, acted on from a timer (the reflector's
	 * callbacks may not free it): 1 a certificate (cert), -1 a failure */
	int outcome;
	char *cert;
	size_t cert_len;
	struct kt_err oerr;
	struct kt_backoff backoff;
};

struct boot {
	const struct kt_boot_opts *o;
	struct kt_loop *loop;
	struct kt_api *boot_api, *node_api;
	struct kt_kcfg cluster; /* the bootstrap kubeconfig, for the server and CA */
	char *dir;		/* cert_dir made absolute */
	struct slot slots[2];
	unsigned seed;
	bool failed;
	struct kt_err err;
};

static void report(struct slot *s, enum kt_boot_event_type type, int64_t renew_at, int64_t retry_at,
		   const char *msg)
{
	struct kt_boot_event ev = {
		.type = type,
		.kind = s->kind,
		.file = s->file,
		.csr = type == KT_BOOT_REUSED ? NULL : s->csr,
		.info = &s->info,
		.renew_at = renew_at,
		.retry_at = retry_at,
		.msg = msg,
	};

	if (s->b->o->report)
		s->b->o->report(&ev, s->b->o->report_arg);
}

/* the run ends with err */
static void fail(struct boot *b, const struct kt_err *err)
{
	if (!b->failed) {
		b->failed = true;
		b->err = *err;
	}
	kt_loop_stop(b->loop);
}

/* ---------------------------------------------------------------- files */

static int dir_prepare(struct boot *b, struct kt_err *err)
{
	const char *d = b->o->cert_dir;
	struct stat st;
	char real[PATH_MAX];

	if (stat(d, &st) < 0) {
		if (errno != ENOENT || mkdir(d, 0700) < 0)
			return kt_error_file(err, KT_ERR_FAIL,
					     "cannot make certificate directory '%s': %s", d,
					     strerror(errno));
		if (stat(d, &st) < 0)
			return kt_error_file(err, KT_ERR_FAIL, "certificate directory '%s': %s", d,
					     strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return kt_error_kind(err, KT_ERR_INPUT,
				     "certificate directory '%s' is not a directory", d);
	if (st.st_mode & 077)
		return kt_error_kind(
		    err, KT_ERR_INPUT,
		    "certificate directory '%s' is open to group or others (mode %04o): "
		    "make it private with 'chmod 700 %s'",
		    d, (unsigned)(st.st_mode & 07777), d);
	if (!realpath(d, real))
		return kt_error(err, "certificate directory '%s': %s", d, strerror(errno));
	b->dir = strdup(real);
	return b->dir ? 0 : kt_error(err, "out of memory");
}

/* the file in place: valid (and reusable or not), missing, corrupt (warned
 * about, to be replaced) or -1 with err when its certificate is for another key */
static int slot_load(struct slot *s, struct kt_err *err)
{
	char *pem = NULL;
	size_t len = 0;
	struct kt_err rerr = { 0 };
	int rc;

	if (access(s->file, F_OK) < 0 && errno == ENOENT)
		return 0;
	if (kt_file_read(s->file, "certificate file", PEM_FILE_MAX, &pem, &len, &rerr) < 0) {
		KT_WARN("certificate file cannot be read, a new one replaces it",
			"file=\"%s\" error=\"%s\"", s->file, rerr.msg);
		return 0;
	}
	rc = kt_x509_pair_load(pem, len, &s->info, &rerr);
	kt_x509_secret_free(pem, len);
	if (rc == 0) {
		s->valid = true;
		return 0;
	}
	if (rerr.about == KT_ERR_ABOUT_EVENT)
		return kt_error_kind(err, KT_ERR_INPUT,
				     "'%s': %s; remove the file to bootstrap a new one", s->file,
				     rerr.msg);
	KT_WARN("certificate file is corrupt, a new one replaces it", "file=\"%s\" error=\"%s\"",
		s->file, rerr.msg);
	return 0;
}

/* the kubeconfig the node uses from now on, written when it differs */
static int kubeconfig_write(struct boot *b, struct kt_err *err)
{
	const struct kt_kcfg *c = &b->cluster;
	struct kt_boot_cluster cl = {
		.server = c->server,
		.ca_pem = c->ca_pem,
		.ca_len = c->ca_len,
		.tls_server_name = c->tls_server_name,
		.insecure = c->insecure,
	};
	cJSON *doc = kt_boot_kubeconfig(&cl, b->slots[KT_BOOT_CLIENT].file);
	char *text = doc ? kt_json_print(doc, KT_JSON_PRETTY) : NULL;
	char *old = NULL;
	size_t old_len = 0;
	struct kt_err rerr = { 0 };
	int rc = -1;

	if (!text) {
		kt_error(err, "out of memory");
		goto out;
	}
	if (kt_file_read(b->o->kubeconfig, NULL, PEM_FILE_MAX, &old, &old_len, &rerr) == 0 &&
	    old_len == strlen(text) && !memcmp(old, text, old_len)) {
		rc = 0;
		goto out;
	}
	rc = kt_file_replace(b->o->kubeconfig, text, strlen(text), 0600, err);
	if (rc < 0)
		kt_err_prefix(err, "kubeconfig '%s'", b->o->kubeconfig);
out:
	free(old);
	free(text);
	cJSON_Delete(doc);
	return rc;
}

/* -------------------------------------------------------------- clients */

static struct kt_api *api_for(struct boot *b, const char *kubeconfig, struct kt_err *err)
{
	struct kt_api_opts ao = b->o->api;

	ao.kubeconfig = kubeconfig;
	ao.context = NULL;
	return kt_api_open(&ao, err);
}

/* the client a slot's CSR goes with: the node's own while its client
 * certificate is valid (as the kubelet renews), else the bootstrap one */
static struct kt_api *slot_api(struct slot *s, const char **which, struct kt_err *err)
{
	struct boot *b = s->b;
	bool node = b->slots[KT_BOOT_CLIENT].valid &&
		    (int64_t)time(NULL) < b->slots[KT_BOOT_CLIENT].info.not_after;

	if (node) {
		*which = b->o->kubeconfig;
		if (!b->node_api)
			b->node_api = api_for(b, b->o->kubeconfig, err);
		return b->node_api;
	}
	*which = b->o->bootstrap_kubeconfig;
	if (!b->boot_api)
		b->boot_api = api_for(b, b->o->bootstrap_kubeconfig, err);
	return b->boot_api;
}

/* a refusal of the credentials names the kubeconfig that holds them */
static void credentials_error(struct kt_err *err, const char *which, bool boot)
{
	if (err->http_status == 401)
		kt_error(err,
			 "%s '%s': the API server refused its credentials (401 Unauthorized)%s",
			 boot ? "bootstrap kubeconfig" : "kubeconfig", which,
			 boot ? ": the bootstrap token is wrong or has expired" : "");
	else if (err->http_status == 403)
		kt_err_prefix(err, "%s '%s' may not create CertificateSigningRequests",
			      boot ? "bootstrap kubeconfig" : "kubeconfig", which);
	err->http_status = 401;
}

/* ------------------------------------------------------------- requests */

static void slot_schedule(struct slot *s);

/*
 * When the certificate in place is renewed: at a random point from 70% to
 * 90% of its lifetime.  Signers backdate what they issue (the csrsigning
 * controller by 5 minutes, against clock skew): for a certificate that
 * just came, the lifetime counts from issued_at, not from notBefore, or a
 * short one would be past its renewal point on arrival and be renewed
 * again at once, for ever.
 */
static void slot_plan(struct slot *s, int64_t issued_at)
{
	int64_t from = s->info.not_before > issued_at ? s->info.not_before : issued_at;

	s->renew_at =
	    kt_boot_renew_at(from, s->info.not_after, rand_r(&s->b->seed) / (RAND_MAX + 1.0));
}
static void slot_request_timer(struct kt_loop *loop, void *arg);
static int slot_request(struct slot *s, struct kt_err *err);

static void slot_reset(struct slot *s)
{
	if (s->timer)
		kt_timer_cancel(s->b->loop, s->timer);
	s->timer = NULL;
	if (s->run)
		kt_refl_cancel(s->run);
	s->run = NULL;
	if (s->waiting)
		kt_refl_release(&s->refl);
	s->waiting = false;
	kt_x509_secret_free(s->key, s->key_len);
	s->key = NULL;
	s->key_len = 0;
	free(s->csr);
	s->csr = NULL;
	free(s->cert);
	s->cert = NULL;
	s->cert_len = 0;
	s->outcome = 0;
	s->said_pending = false;
}

/*
 * A request ended in failure: the run ends, unless it was a renewal with a
 * certificate still in place, which is tried again later (the kubelet keeps
 * trying too).
 */
static void slot_failed(struct slot *s, const struct kt_err *err)
{
	struct boot *b = s->b;
	int64_t now = (int64_t)time(NULL), wait_ms;

	slot_reset(s);
	if (!b->o->rotate || !s->valid || now >= s->info.not_after) {
		fail(b, err);
		return;
	}
	wait_ms = kt_backoff_next(&s->backoff, kt_loop_now(b->loop));
	report(s, KT_BOOT_RETRY, 0, now + wait_ms / 1000, err->msg);
	s->timer = kt_timer_add(b->loop, wait_ms, slot_request_timer, s);
}

static int slot_write(struct slot *s, const char *cert, size_t cert_len, struct kt_err *err)
{
	bool nl = s->key_len && s->key[s->key_len - 1] != '\n';
	size_t n = s->key_len + nl + cert_len;
	char *text = malloc(n + 1);
	int rc;

	if (!text)
		return kt_error(err, "out of memory");
	memcpy(text, s->key, s->key_len);
	if (nl)
		text[s->key_len] = '\n';
	memcpy(text + s->key_len + nl, cert, cert_len);
	text[n] = '\0';
	rc = kt_file_replace(s->file, text, n, 0600, err);
	kt_x509_secret_free(text, n);
	if (rc < 0)
		kt_err_prefix(err, "certificate file '%s'", s->file);
	return rc;
}

/* the certificate came: check it is for the key, write, say so, go on */
static int slot_issued(struct slot *s, const char *cert, size_t len, struct kt_err *err)
{
	struct boot *b = s->b;
	struct kt_x509_info info;

	if (kt_x509_cert_info(cert, len, &info, err) < 0 ||
	    kt_x509_pair_check(cert, len, s->key, s->key_len, err) < 0) {
		char msg[sizeof(err->msg)];

		snprintf(msg, sizeof(msg), "%s", err->msg);
		return kt_error(err, "CSR '%s': the certificate issued cannot be used: %s", s->csr,
				msg);
	}
	if (slot_write(s, cert, len, err) < 0)
		return -1;
	s->info = info;
	s->valid = true;
	if (s->kind == KT_BOOT_CLIENT && kubeconfig_write(b, err) < 0)
		return -1;
	return 0;
}

static void slot_finished(struct slot *s)
{
	struct boot *b = s->b;

	if (b->o->rotate)
		slot_plan(s, (int64_t)time(NULL));
	report(s, KT_BOOT_ISSUED, s->renew_at, 0, NULL);
	kt_backoff_reset(&s->backoff);
	slot_reset(s);
	/* the serving CSR goes with the node's own client certificate */
	if (s->kind == KT_BOOT_CLIENT && b->slots[KT_BOOT_SERVING].wanted &&
	    !b->slots[KT_BOOT_SERVING].valid && !b->slots[KT_BOOT_SERVING].csr) {
		struct kt_err err = { 0 };

		if (slot_request(&b->slots[KT_BOOT_SERVING], &err) < 0)
			slot_failed(&b->slots[KT_BOOT_SERVING], &err);
	}
	if (b->o->rotate)
		slot_schedule(s);
	else if (!b->slots[KT_BOOT_CLIENT].csr && !b->slots[KT_BOOT_SERVING].csr)
		kt_loop_stop(b->loop);
}

static void on_settle(struct kt_loop *loop, void *arg);

/* the watch's outcome, acted on at once from a timer */
static void settle(struct slot *s, int outcome)
{
	s->outcome = outcome;
	if (s->timer)
		kt_timer_cancel(s->b->loop, s->timer);
	s->timer = kt_timer_add(s->b->loop, 0, on_settle, s);
}

static int on_event(const char *type, const cJSON *obj, void *arg)
{
	struct slot *s = arg;
	char why[400];
	enum kt_boot_csr_state st;

	if (s->outcome || !strcmp(type, "BOOKMARK"))
		return s->outcome ? -1 : 0;
	if (!strcmp(type, "DELETED")) {
		kt_error(&s->oerr, "CSR '%s' was deleted while waiting for its certificate",
			 s->csr);
		settle(s, -1);
		return -1;
	}
	st = kt_boot_csr_state(obj, &s->cert, &s->cert_len, why, sizeof(why));
	KT_V(2, "CSR", "name=\"%s\" event=\"%s\" state=%d", s->csr, type, (int)st);
	switch (st) {
	case KT_BOOT_CSR_PENDING:
		if (s->kind == KT_BOOT_SERVING && !s->said_pending) {
			s->said_pending = true;
			report(s, KT_BOOT_PENDING, 0, 0, NULL);
		}
		return 0;
	case KT_BOOT_CSR_APPROVED:
		return 0;
	case KT_BOOT_CSR_DENIED:
		kt_error(&s->oerr, "CSR '%s' was denied: %s", s->csr, why);
		break;
	case KT_BOOT_CSR_FAILED:
		kt_error(&s->oerr, "CSR '%s' failed: %s", s->csr, why);
		break;
	case KT_BOOT_CSR_INVALID:
		kt_error(&s->oerr, "CSR '%s': %s", s->csr, why);
		break;
	case KT_BOOT_CSR_ISSUED:
		settle(s, 1);
		return -1;
	}
	settle(s, -1);
	return -1;
}

static void on_refl_done(struct kt_refl *r, const struct kt_err *e, void *arg)
{
	struct slot *s = arg;

	(void)r;
	if (s->outcome)
		return;
	s->oerr = *e;
	kt_err_prefix(&s->oerr, "watching CSR '%s'", s->csr);
	settle(s, -1);
}

static void on_settle(struct kt_loop *loop, void *arg)
{
	struct slot *s = arg;
	struct kt_err err = { 0 };

	(void)loop;
	s->timer = NULL;
	if (s->outcome < 0) {
		err = s->oerr;
		slot_failed(s, &err);
		return;
	}
	if (slot_issued(s, s->cert, s->cert_len, &err) < 0) {
		slot_failed(s, &err);
		return;
	}
	slot_finished(s);
}

static void on_wait_timeout(struct kt_loop *loop, void *arg)
{
	struct slot *s = arg;
	struct kt_err err = { 0 };
	char d[32];

	(void)loop;
	s->timer = NULL;
	kt_error(&err, "CSR '%s' has no certificate after %s (--wait)%s", s->csr,
		 kt_duration_format(s->b->o->wait_ms, d, sizeof(d)),
		 s->said_pending ? ": nobody approved it" : "");
	slot_failed(s, &err);
}

/* posts the CSR; its name into s->csr */
static int slot_post(struct slot *s, struct kt_err *err)
{
	struct boot *b = s->b;
	struct kt_x509_req req;
	char cn[KT_NAME_MAX + 16], *pem = NULL;
	size_t pem_len = 0;
	const char *which = NULL, *name;
	struct kt_api *api;
	cJSON *csr = NULL, *reply = NULL;
	int rc = -1;

	kt_boot_x509_req(s->kind, b->o->node, b->o->addresses, cn, sizeof(cn), &req);
	if (kt_x509_key_new(&s->key, &s->key_len, err) < 0 ||
	    kt_x509_req_new(s->key, s->key_len, &req, &pem, &pem_len, err) < 0)
		goto out;
	csr = kt_boot_csr_new(s->kind, pem, pem_len);
	api = slot_api(s, &which, err);
	if (!csr || !api) {
		if (!csr)
			kt_error(err, "out of memory");
		goto out;
	}
	reply = kt_api_json(api, "POST", KT_BOOT_CSR_PATH, csr, NULL, 0, err);
	if (!reply) {
		if (err->http_status == 401 || err->http_status == 403)
			credentials_error(err, which, which == b->o->bootstrap_kubeconfig);
		goto out;
	}
	name = kt_json_get_string(kt_json_get_object(reply, "metadata"), "name");
	if (!name || !*name) {
		kt_error(err, "POST %s: the reply names no CSR", KT_BOOT_CSR_PATH);
		goto out;
	}
	s->csr = strdup(name);
	if (!s->csr) {
		kt_error(err, "out of memory");
		goto out;
	}
	KT_V(1, "CSR created", "name=\"%s\" certificate=\"%s\" credentials=\"%s\"", s->csr,
	     kt_boot_kind_name(s->kind), which);
	rc = 0;
out:
	cJSON_Delete(reply);
	cJSON_Delete(csr);
	free(pem);
	return rc;
}

/* a new key, its CSR, and a watch on the CSR until it has a certificate */
static int slot_request(struct slot *s, struct kt_err *err)
{
	struct boot *b = s->b;
	char path[sizeof(KT_BOOT_CSR_PATH) + KT_NAME_MAX + 2];
	struct kt_refl_opts ro = { .path = path };
	struct kt_api *api;
	const char *which;

	slot_reset(s);
	if (slot_post(s, err) < 0)
		return -1;
	api = slot_api(s, &which, err);
	snprintf(path, sizeof(path), "%s/%s", KT_BOOT_CSR_PATH, s->csr);
	if (kt_refl_init(&s->refl, &ro, on_event, s, rand_r(&b->seed), err) < 0)
		return -1;
	s->waiting = true;
	s->run = kt_refl_start(&s->refl, api, b->loop, on_refl_done, s, err);
	if (!s->run)
		return -1;
	if (b->o->wait_ms > 0)
		s->timer = kt_timer_add(b->loop, b->o->wait_ms, on_wait_timeout, s);
	return 0;
}

static void slot_request_timer(struct kt_loop *loop, void *arg)
{
	struct slot *s = arg;
	struct kt_err err = { 0 };

	(void)loop;
	s->timer = NULL;
	if (slot_request(s, &err) < 0)
		slot_failed(s, &err);
}

/* the renewal's timer, at s->renew_at */
static void slot_schedule(struct slot *s)
{
	struct boot *b = s->b;
	int64_t delay_ms = (s->renew_at - (int64_t)time(NULL)) * 1000;

	if (delay_ms < 0)
		delay_ms = 0;
	KT_V(1, "renewal scheduled", "certificate=\"%s\" in_ms=%lld", kt_boot_kind_name(s->kind),
	     (long long)delay_ms);
	s->timer = kt_timer_add(b->loop, delay_ms, slot_request_timer, s);
}

static void on_signal(struct kt_loop *loop, int signo, void *arg)
{
	(void)signo;
	(void)arg;
	kt_loop_stop(loop);
}

/* ------------------------------------------------------------------- run */

static int slot_init(struct boot *b, enum kt_boot_kind kind, struct kt_err *err)
{
	struct slot *s = &b->slots[kind];
	size_t n = strlen(b->dir) + 40;

	s->b = b;
	s->kind = kind;
	s->wanted = kind == KT_BOOT_CLIENT || b->o->serving;
	s->backoff = (struct kt_backoff){
		.first_ms = 10000, .cap_ms = 300000, .factor = 2, .jitter = 0.1, .seed = b->seed
	};
	if (!s->wanted)
		return 0;
	s->file = malloc(n);
	if (!s->file)
		return kt_error(err, "out of memory");
	snprintf(s->file, n, "%s/%s", b->dir,
		 kind == KT_BOOT_CLIENT ? KT_BOOT_CLIENT_FILE : KT_BOOT_SERVING_FILE);
	return slot_load(s, err);
}

/* what each certificate needs now: nothing, a renewal later, or a request */
static int start(struct boot *b, struct kt_err *err)
{
	int64_t now = (int64_t)time(NULL);

	for (int k = KT_BOOT_CLIENT; k <= KT_BOOT_SERVING; k++) {
		struct slot *s = &b->slots[k];

		if (!s->wanted)
			continue;
		if (s->valid && kt_boot_reusable(&s->info, now)) {
			if (k == KT_BOOT_CLIENT && kubeconfig_write(b, err) < 0)
				return -1;
			if (b->o->rotate)
				slot_plan(s, s->info.not_before);
			report(s, KT_BOOT_REUSED, s->renew_at, 0, NULL);
			if (b->o->rotate)
				slot_schedule(s);
			continue;
		}
		/* the serving CSR waits for the client certificate */
		if (k == KT_BOOT_SERVING && b->slots[KT_BOOT_CLIENT].csr)
			continue;
		if (slot_request(s, err) < 0)
			return -1;
	}
	return 0;
}

static bool busy(const struct boot *b)
{
	return b->slots[0].csr || b->slots[1].csr;
}

int kt_boot_run(const struct kt_boot_opts *o, struct kt_err *err)
{
	struct boot b = { .o = o };
	struct kt_api_opts ko = o->api;
	int rc = -1;

	b.seed = (unsigned)kt_now_us() ^ (unsigned)getpid();
	ko.kubeconfig = o->bootstrap_kubeconfig;
	ko.context = NULL;
	if (kt_kcfg_load(&b.cluster, &ko, err) < 0) {
		kt_err_prefix(err, "bootstrap kubeconfig '%s'", o->bootstrap_kubeconfig);
		return -1;
	}
	b.loop = kt_loop_new(err);
	if (!b.loop || dir_prepare(&b, err) < 0 || slot_init(&b, KT_BOOT_CLIENT, err) < 0 ||
	    slot_init(&b, KT_BOOT_SERVING, err) < 0)
		goto out;
	if (kt_loop_on_signal(b.loop, SIGTERM, on_signal, &b, err) < 0 ||
	    kt_loop_on_signal(b.loop, SIGINT, on_signal, &b, err) < 0 || start(&b, err) < 0)
		goto out;
	if ((o->rotate || busy(&b)) && kt_loop_run(b.loop, err) < 0)
		goto out;
	if (b.failed) {
		*err = b.err;
		goto out;
	}
	if (busy(&b) && !o->rotate) {
		kt_error(err, "interrupted while waiting for CSR '%s'",
			 b.slots[0].csr ? b.slots[0].csr : b.slots[1].csr);
		goto out;
	}
	rc = 0;
out:
	for (int k = 0; k < 2; k++) {
		if (b.loop)
			slot_reset(&b.slots[k]);
		free(b.slots[k].file);
	}
	kt_api_close(b.node_api);
	kt_api_close(b.boot_api);
	kt_loop_free(b.loop);
	kt_kcfg_release(&b.cluster);
	free(b.dir);
	return rc;
}
