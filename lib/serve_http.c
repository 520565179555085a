/* SPDX-License-Identifier: Apache-2.0 */
/* serve_http: the kubelet API on evhttp over TLS */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api.h"
#include "core.h"
#include "crilog.h"
#include "json.h"
#include "kt_err.h"
#include "log.h"
#include "channel.h"
#include "podstats.h"
#include "rcmd.h"
#include "rcmd_run.h"
#include "serve.h"
#include "serve_http.h"
#include "timeutil.h"
#include "tls.h"

#define OUT_HIGH   (256 * 1024) /* a follow stops reading while more waits to go out */
#define READ_CHUNK (64 * 1024)
#define CARRY_MAX  (4 * 1024 * 1024) /* a log line longer than this is cut */

struct conn {
	struct srv *s;
	bool over_cap;
};

struct follow {
	struct srv *s;
	struct follow *next;
	struct evhttp_request *req;
	int dfd, fd;	     /* the container's directory; its log */
	int wd_dir, wd_file; /* inotify watches; -1 none */
	const char *fname;   /* "log" or "log.previous" */
	bool follow, ending;
	bool paused;  /* waiting for the output to drain */
	bool rotated; /* a new log file waits, read once this one ends */
	struct kt_cri_opts opts;
	int64_t sent;
	struct kt_sb carry; /* the start of a line not yet ended */
};

/* a webhook's answer, kept for its time */
struct cached {
	struct cached *next;
	char *key;
	bool ok;
	char user[256], groups[512];
	int64_t until_ms;
};

#define CACHE_MAX 4096

struct srv {
	const struct kt_serve_http_opts *o;
	struct cached *tokens, *reviews;
	int ntokens, nreviews;
	struct event_base *base;
	struct evhttp *http;
	int ino;
	struct event *ino_ev;
	struct follow *follows;
	int conns;
	char *rbuf; /* READ_CHUNK bytes for pump, unless one is running */
	bool rbuf_busy;
	struct session *sessions;
};

/* an exec, attach or port-forward connection after its 101 */
struct session {
	struct session *next;
	struct kt_rcmd_run *run;
};


/* ------------------------------------------------------------------ replies */

static void reply(struct evhttp_request *req, int status, const char *ctype, const char *body,
		  size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", ctype);
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	if (b)
		evbuffer_add(b, body, len);
	evhttp_send_reply(req, status, kt_http_reason(status), b);
	if (b)
		evbuffer_free(b);
}

/* as Go's http.Error: the text and a newline */
static void reply_text(struct evhttp_request *req, int status, const char *text)
{
	struct kt_sb sb = { 0 };

	kt_sb_printf(&sb, "%s\n", text);
	reply(req, status, "text/plain; charset=utf-8", kt_sb_str(&sb), sb.len);
	kt_sb_release(&sb);
}


/* GET /stats/summary and /metrics/resource: the CPU and memory of the first
 * state directory's node and pods (podstats), read at each request */
static void serve_stats(struct srv *s, struct evhttp_request *req, bool prometheus)
{
	struct kt_podstats st;
	struct kt_err err = { 0 };
	char *body = NULL;

	kt_podstats_init(&st);
	if (kt_podstats_read(s->o->state_dirs[0], NULL, &st, &err) == 0)
		body = prometheus ? kt_podstats_prometheus(&st) : kt_podstats_summary(&st);
	if (body)
		reply(req, 200,
		      prometheus ? "text/plain; version=0.0.4; charset=utf-8" : "application/json",
		      body, strlen(body));
	else
		reply_text(req, 500, err.msg[0] ? err.msg : "out of memory");
	free(body);
	kt_podstats_release(&st);
}

/* ---------------------------------------------------------------- the pods */

/* the first line of dirfd/name, without following a symlink; -1 if none */
static int read_small(int dirfd, const char *name, char *buf, size_t size)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

typedef int pod_fn(int podfd, const char *uid, void *arg);

/* calls fn for each pod directory of each state directory until it returns
 * non-zero, which is returned */
static int each_pod(struct srv *s, pod_fn *fn, void *arg)
{
	for (const char *const *d = s->o->state_dirs; *d; d++) {
		int pfd, rc = 0;
		DIR *dir;
		struct dirent *e;
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/pods", *d);
		pfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			continue;
		dir = fdopendir(pfd);
		if (!dir) {
			close(pfd);
			continue;
		}
		while (rc == 0 && (e = readdir(dir))) {
			int podfd;

			if (e->d_name[0] == '.')
				continue;
			podfd = openat(dirfd(dir), e->d_name,
				       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (podfd < 0)
				continue;
			rc = fn(podfd, e->d_name, arg);
			close(podfd);
		}
		closedir(dir);
		if (rc)
			return rc;
	}
	return 0;
}

static cJSON *read_pod_json(int podfd)
{
	int fd = openat(podfd, "pod.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct kt_sb sb = { 0 };
	char buf[8192];
	ssize_t n;
	cJSON *pod;

	if (fd < 0)
		return NULL;
	while ((n = read(fd, buf, sizeof(buf))) > 0 && sb.len < 16 * 1024 * 1024)
		kt_sb_put(&sb, buf, (size_t)n);
	close(fd);
	pod = sb.oom ? NULL : cJSON_ParseWithLength(kt_sb_str(&sb), sb.len);
	kt_sb_release(&sb);
	if (pod && !cJSON_IsObject(pod)) {
		cJSON_Delete(pod);
		pod = NULL;
	}
	return pod;
}

struct find {
	const char *ns, *name;
	int podfd; /* a dup of the found pod's directory */
};

static int find_one(int podfd, const char *uid, void *arg)
{
	struct find *f = arg;
	char ns[128], name[300];

	(void)uid;
	if (read_small(podfd, "ns", ns, sizeof(ns)) < 0 ||
	    read_small(podfd, "name", name, sizeof(name)) < 0)
		return 0;
	if (strcmp(ns, f->ns) != 0 || strcmp(name, f->name) != 0)
		return 0;
	f->podfd = dup(podfd);
	return 1;
}

static bool has_container(const cJSON *pod, const char *name)
{
	static const char *const lists[] = { "containers", "initContainers",
					     "ephemeralContainers" };
	const cJSON *spec = kt_json_get_object(pod, "spec"), *c;

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		cJSON_ArrayForEach (c, kt_json_get_array(spec, lists[i])) {
			const char *n = kt_json_get_string(c, "name");

			if (n && strcmp(n, name) == 0)
				return true;
		}
	return false;
}

static int list_one(int podfd, const char *uid, void *arg)
{
	cJSON *items = arg, *pod = read_pod_json(podfd);

	(void)uid;
	if (pod)
		cJSON_AddItemToArray(items, pod);
	return 0;
}

static bool alive(int cfd)
{
	char pid[32];
	long p;
	struct stat st;

	if (fstatat(cfd, "exit", &st, AT_SYMLINK_NOFOLLOW) == 0)
		return false;
	if (read_small(cfd, "pid", pid, sizeof(pid)) < 0 || (p = strtol(pid, NULL, 10)) <= 0)
		return false;
	return kill((pid_t)p, 0) == 0 || errno == EPERM;
}

/* a running pod as the runtime knows it: names, uid and its running
 * containers, which is what the kubelet's /runningpods/ gives */
static int running_one(int podfd, const char *uid, void *arg)
{
	cJSON *items = arg, *pod = read_pod_json(podfd), *out, *meta, *cs, *c;
	const cJSON *spec;
	struct stat st;

	(void)uid;
	if (!pod || fstatat(podfd, "terminated", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		cJSON_Delete(pod);
		return 0;
	}
	out = cJSON_CreateObject();
	meta = cJSON_AddObjectToObject(out, "metadata");
	meta = meta ? meta : out;
	cJSON_AddItemToObject(meta, "name", kt_json_dup(kt_json_path(pod, "metadata.name")));
	cJSON_AddItemToObject(meta, "namespace",
			      kt_json_dup(kt_json_path(pod, "metadata.namespace")));
	cJSON_AddItemToObject(meta, "uid", kt_json_dup(kt_json_path(pod, "metadata.uid")));
	cJSON_AddNullToObject(meta, "creationTimestamp");
	cs = cJSON_AddArrayToObject(cJSON_AddObjectToObject(out, "spec"), "containers");
	spec = kt_json_get_object(pod, "spec");
	cJSON_ArrayForEach (c, kt_json_get_array(spec, "containers")) {
		const char *name = kt_json_get_string(c, "name");
		int cfd;
		cJSON *o;

		if (!name || kt_serve_dns_label(name, strlen(name)) < 0)
			continue;
		cfd = openat(podfd, "containers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd >= 0) {
			int nfd =
			    openat(cfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			close(cfd);
			cfd = nfd;
		}
		if (cfd < 0)
			continue;
		if (alive(cfd)) {
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", name);
			if (kt_json_get_string(c, "image"))
				cJSON_AddStringToObject(o, "image", kt_json_get_string(c, "image"));
			cJSON_AddObjectToObject(o, "resources");
			cJSON_AddItemToArray(cs, o);
		}
		close(cfd);
	}
	cJSON_AddObjectToObject(out, "status");
	cJSON_Delete(pod);
	if (cJSON_GetArraySize(cs) > 0)
		cJSON_AddItemToArray(items, out);
	else
		cJSON_Delete(out);
	return 0;
}

static void serve_pods(struct srv *s, struct evhttp_request *req, bool running)
{
	cJSON *list = cJSON_CreateObject(), *items;
	char *text;

	cJSON_AddStringToObject(list, "kind", "PodList");
	cJSON_AddStringToObject(list, "apiVersion", "v1");
	cJSON_AddObjectToObject(list, "metadata");
	items = cJSON_AddArrayToObject(list, "items");
	if (items)
		each_pod(s, running ? running_one : list_one, items);
	text = cJSON_PrintUnformatted(list);
	if (text)
		reply(req, 200, "application/json", text, strlen(text));
	else
		reply_text(req, 500, "out of memory");
	free(text);
	cJSON_Delete(list);
}

/* ----------------------------------------------------------------- the logs */

static void follow_free(struct follow *f)
{
	struct follow **pp;

	for (pp = &f->s->follows; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	/* a watch shared by another follow of the same file stays */
	for (struct follow *o = f->s->follows; o; o = o->next) {
		if (o->wd_file == f->wd_file)
			f->wd_file = -1;
		if (o->wd_dir == f->wd_dir)
			f->wd_dir = -1;
	}
	if (f->wd_file >= 0)
		inotify_rm_watch(f->s->ino, f->wd_file);
	if (f->wd_dir >= 0)
		inotify_rm_watch(f->s->ino, f->wd_dir);
	if (f->fd >= 0)
		close(f->fd);
	if (f->dfd >= 0)
		close(f->dfd);
	kt_sb_release(&f->carry);
	free(f);
}

/* the watch of the file goes when no other follow has it */
static void unwatch_file(struct follow *f)
{
	int wd = f->wd_file;

	f->wd_file = -1;
	if (wd < 0)
		return;
	for (struct follow *o = f->s->follows; o; o = o->next)
		if (o->wd_file == wd)
			return;
	inotify_rm_watch(f->s->ino, wd);
}

static void on_client_close(struct evhttp_connection *evcon, void *arg)
{
	struct follow *f = arg;

	(void)evcon;
	/* a reply the client left before its end: evhttp has taken the request
	 * off the connection and leaves it to us, to be freed by ending it */
	if (f->req && !evhttp_request_get_connection(f->req))
		evhttp_send_reply_end(f->req);
	f->req = NULL;
	follow_free(f);
}

static void finish(struct follow *f)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(f->req);

	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	struct timeval t = { f->s->o->header_timeout_s, 0 };

	/* the connection waits for its next request with the timeout again */
	if (f->follow && bev)
		bufferevent_set_timeouts(bev, &t, &t);
	evhttp_connection_set_closecb(evcon, NULL, NULL);
	evhttp_send_reply_end(f->req);
	f->req = NULL;
	follow_free(f);
}

static int pump(struct follow *f);
static int switch_file(struct follow *f);

static void on_drained(struct evhttp_connection *evcon, void *arg)
{
	struct follow *f = arg;

	(void)evcon;
	if (f->paused) {
		f->paused = false;
		pump(f);
	}
}

static size_t out_pending(struct follow *f)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(f->req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;

	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

/* lines of buf through the options into out; 1 when the limit is reached.  Whole
 * lines are read where they are; only a line the read cut is kept, in carry */
static int emit_lines(struct follow *f, const char *buf, size_t n, struct kt_sb *out, bool eof)
{
	const char *p = buf, *end = buf + n, *nl;

	if (f->carry.len) {
		nl = n ? memchr(p, '\n', n) : NULL;
		kt_sb_put(&f->carry, p, nl ? (size_t)(nl - p) : n);
		p = nl ? nl + 1 : end;
		if (nl) {
			int lim = kt_cri_emit(&f->opts, f->carry.buf, f->carry.len, out, &f->sent);

			kt_sb_trunc(&f->carry, 0);
			if (lim)
				return 1;
		}
	}
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		if (kt_cri_emit(&f->opts, p, (size_t)(nl - p), out, &f->sent))
			return 1;
		p = nl + 1;
	}
	if (p < end)
		kt_sb_put(&f->carry, p, (size_t)(end - p));
	if (eof && f->carry.len) {
		int lim = kt_cri_emit(&f->opts, f->carry.buf, f->carry.len, out, &f->sent);

		kt_sb_trunc(&f->carry, 0);
		if (lim)
			return 1;
	}
	if (f->carry.len > CARRY_MAX)
		kt_sb_trunc(&f->carry, 0);
	return 0;
}

static void send_out(struct follow *f, struct kt_sb *out)
{
	struct evbuffer *b;

	if (out->len == 0)
		return;
	b = evbuffer_new();
	if (b) {
		evbuffer_add(b, out->buf, out->len);
		evhttp_send_reply_chunk_with_cb(f->req, b, on_drained, f);
		evbuffer_free(b);
	}
	kt_sb_trunc(out, 0);
}

/* reads what the log has and sends it, until the output is full (then on
 * drain again), the file's end (then on inotify, or the end of the reply:
 * 1, f is freed) */
static int pump_with(struct follow *f, char *buf);

static int pump(struct follow *f)
{
	struct srv *s = f->s;
	int rc;

	/* the server's buffer, unless a pump is running below this one */
	if (s->rbuf && !s->rbuf_busy) {
		s->rbuf_busy = true;
		rc = pump_with(f, s->rbuf);
		s->rbuf_busy = false;
	} else {
		char *buf = malloc(READ_CHUNK);

		if (!buf)
			return 0;
		rc = pump_with(f, buf);
		free(buf);
	}
	return rc;
}

static int pump_with(struct follow *f, char *buf)
{
	struct kt_sb out = { 0 };

	for (;;) {
		ssize_t n;
		int lim;

		if (out_pending(f) > OUT_HIGH) {
			f->paused = true;
			break;
		}
		n = read(f->fd, buf, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			n = 0;
		/* rotated: the rest of the old file was read, the new one next */
		if (n == 0 && f->rotated) {
			f->rotated = false;
			if (switch_file(f))
				continue;
		}
		lim = emit_lines(f, buf, (size_t)n, &out, n == 0 && (!f->follow || f->ending));
		send_out(f, &out);
		if (lim || (n == 0 && (!f->follow || f->ending))) {
			kt_sb_release(&out);
			finish(f);
			return 1;
		}
		if (n == 0)
			break;
	}
	kt_sb_release(&out);
	return 0;
}

static int watch(struct follow *f, int fd, uint32_t mask)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return inotify_add_watch(f->s->ino, path, mask);
}

/* the log was rotated (a new "log" in the directory) and the old one is read
 * to its end: the new one from its start, as the kubelet follows; 1 when
 * there is a new one */
static int switch_file(struct follow *f)
{
	int fd = openat(f->dfd, f->fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat a, b;

	if (fd < 0)
		return 0;
	if (fstat(fd, &a) == 0 && fstat(f->fd, &b) == 0 && a.st_ino == b.st_ino) {
		close(fd);
		return 0;
	}
	close(f->fd);
	f->fd = fd;
	kt_sb_trunc(&f->carry, 0);
	unwatch_file(f);
	f->wd_file = watch(f, fd, IN_MODIFY);
	return 1;
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
	struct srv *s = arg;
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	(void)what;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *e = (struct inotify_event *)p;
			struct follow *f, *next;

			p += sizeof(*e) + e->len;
			for (f = s->follows; f; f = next) {
				next = f->next;
				if (!f->req)
					continue;
				if (e->wd == f->wd_file && (e->mask & IN_MODIFY) && !f->paused) {
					struct stat st;

					/* truncated in place: from the start again */
					if (fstat(f->fd, &st) == 0 &&
					    lseek(f->fd, 0, SEEK_CUR) > st.st_size)
						lseek(f->fd, 0, SEEK_SET);
					pump(f);
				} else if (e->wd == f->wd_dir && e->len &&
					   strcmp(e->name, f->fname) == 0) {
					f->rotated = true;
					if (!f->paused)
						pump(f);
				} else if (e->wd == f->wd_dir &&
					   ((e->len && strcmp(e->name, "exit") == 0) ||
					    (e->mask & (IN_DELETE_SELF | IN_IGNORED)))) {
					/* the container ended: what is left, then the end */
					f->ending = true;
					if (!f->paused)
						pump(f);
				}
			}
		}
	}
}

/* the path's directory of the container, by names already checked */
static int container_dir(int podfd, const char *name)
{
	int cfd = openat(podfd, "containers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int nfd;

	if (cfd < 0)
		return -1;
	nfd = openat(cfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(cfd);
	return nfd;
}

/* where tailLines lines from the end start in the file */
static off_t tail_offset(int fd, long lines)
{
	struct stat st;
	size_t win = 64 * 1024;

	if (lines < 0 || fstat(fd, &st) < 0)
		return 0;
	for (;;) {
		size_t len = (size_t)st.st_size < win ? (size_t)st.st_size : win;
		off_t base = st.st_size - (off_t)len;
		char *buf = malloc(len ? len : 1);
		size_t at;
		ssize_t n;

		if (!buf)
			return 0;
		n = pread(fd, buf, len, base);
		if (n < 0)
			n = 0;
		at = kt_cri_tail_start(buf, (size_t)n, lines);
		free(buf);
		/* within the window, unless its first line may be cut */
		if (at > 0 || base == 0)
			return base + (off_t)at;
		win *= 4;
	}
}

#define FOLLOW_STUCK_S 300

static void quiet_follow(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	struct timeval w = { FOLLOW_STUCK_S, 0 };

	if (bev)
		bufferevent_set_timeouts(bev, NULL, &w);
}

static void serve_logs(struct srv *s, struct evhttp_request *req, const struct kt_serve_req *r)
{
	struct find fp = { .ns = r->ns, .name = r->pod, .podfd = -1 };
	struct follow *f = NULL;
	struct kt_sb msg = { 0 };
	cJSON *pod = NULL;
	int cfd = -1, fd = -1;
	struct stat st;
	bool ended;

	each_pod(s, find_one, &fp);
	if (fp.podfd < 0) {
		kt_sb_printf(&msg, "pod \"%s\" does not exist", r->pod);
		reply_text(req, 404, kt_sb_str(&msg));
		goto out;
	}
	pod = read_pod_json(fp.podfd);
	if (!pod || !has_container(pod, r->container)) {
		kt_sb_printf(&msg, "container \"%s\" not found in pod \"%s\"", r->container,
			     r->pod);
		reply_text(req, 404, kt_sb_str(&msg));
		goto out;
	}
	cfd = container_dir(fp.podfd, r->container);
	if (cfd >= 0)
		fd = openat(cfd, r->log.previous ? "log.previous" : "log",
			    O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (r->log.previous)
			kt_sb_printf(&msg,
				     "previous terminated container \"%s\" in pod \"%s\" not found",
				     r->container, r->pod);
		else
			kt_sb_printf(&msg,
				     "container \"%s\" in pod \"%s\" is waiting to start: "
				     "ContainerCreating",
				     r->container, r->pod);
		reply_text(req, 400, kt_sb_str(&msg));
		goto out;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		reply_text(req, 500, "out of memory");
		goto out;
	}
	ended = fstatat(cfd, "exit", &st, AT_SYMLINK_NOFOLLOW) == 0;
	*f = (struct follow){ .s = s,
			      .req = req,
			      .dfd = cfd,
			      .fd = fd,
			      .wd_dir = -1,
			      .wd_file = -1,
			      .fname = r->log.previous ? "log.previous" : "log",
			      .follow = r->log.follow && !r->log.previous && !ended };
	cfd = fd = -1;
	f->opts.limit_bytes = r->log.limit_bytes;
	f->opts.timestamps = r->log.timestamps;
	if (r->log.since_time_ns)
		f->opts.since_ns = r->log.since_time_ns;
	else if (r->log.since_seconds)
		f->opts.since_ns = kt_now_us() * 1000 - r->log.since_seconds * 1000000000LL;
	lseek(f->fd, tail_offset(f->fd, r->log.tail_lines), SEEK_SET);
	if (f->follow) {
		/* watched before the first read, so no line falls between */
		f->wd_dir = watch(f, f->dfd, IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_ONLYDIR);
		f->wd_file = watch(f, f->fd, IN_MODIFY);
		/* a follow is quiet for as long as the container is: no read
		 * timeout (evhttp's own would close it), and a write timeout
		 * only for a client that takes nothing for FOLLOW_STUCK_S */
		quiet_follow(req);
		KT_V(2, "following", "namespace=\"%s\" pod=\"%s\" container=\"%s\"", r->ns, r->pod,
		     r->container);
	}
	f->next = s->follows;
	s->follows = f;
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain");
	evhttp_send_reply_start(req, 200, "OK");
	evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_close, f);
	pump(f);
out:
	kt_sb_release(&msg);
	cJSON_Delete(pod);
	if (fp.podfd >= 0)
		close(fp.podfd);
	if (cfd >= 0)
		close(cfd);
	if (fd >= 0)
		close(fd);
}


/* ------------------------------------------------ exec, attach, port-forward */

static void session_done(void *arg, struct kt_rcmd_run *run)
{
	struct srv *s = arg;

	for (struct session **pp = &s->sessions; *pp; pp = &(*pp)->next)
		if ((*pp)->run == run) {
			struct session *n = *pp;

			*pp = n->next;
			free(n);
			break;
		}
	kt_rcmd_run_free(run);
}

/* every value of a header, joined with commas; "" when none (NULL then) */
static const char *joined(struct evhttp_request *req, const char *name, struct kt_sb *sb)
{
	struct evkeyval *kv;

	for (kv = evhttp_request_get_input_headers(req)->tqh_first; kv; kv = kv->next.tqe_next)
		if (!strcasecmp(kv->key, name))
			kt_sb_printf(sb, "%s%s", sb->len ? "," : "", kv->value);
	return sb->len ? kt_sb_str(sb) : NULL;
}

struct find_stream {
	const char *ns, *name;
	char uid[128];
	cJSON *pod;
};

static int find_stream_one(int podfd, const char *uid, void *arg)
{
	struct find_stream *f = arg;
	char ns[128], name[300];

	if (read_small(podfd, "ns", ns, sizeof(ns)) < 0 ||
	    read_small(podfd, "name", name, sizeof(name)) < 0 || strcmp(ns, f->ns) != 0 ||
	    strcmp(name, f->name) != 0)
		return 0;
	snprintf(f->uid, sizeof(f->uid), "%s", uid);
	f->pod = read_pod_json(podfd);
	return 1;
}

static void serve_stream(struct srv *s, struct evhttp_request *req, const struct kt_serve_req *r)
{
	struct kt_rcmd_run_opts o = { 0 };
	struct kt_chan_upgrade up;
	struct kt_chan_refusal no;
	struct kt_sb versions = { 0 }, protos = { 0 }, head = { 0 }, msg = { 0 };
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct find_stream f = { .ns = r->ns, .name = r->pod };
	const char *state_dir = NULL;
	struct session *sess = NULL;
	struct kt_err err = { 0 };

	if (!s->o->provider) {
		reply_text(req, 501,
			   "kubelet-serve runs no --provider: exec, attach and portForward are not "
			   "served");
		return;
	}
	for (const char *const *d = s->o->state_dirs; *d && !state_dir; d++) {
		const char *only[2] = { *d, NULL };
		const struct kt_serve_http_opts one = { .state_dirs = only };
		struct srv tmp = { .o = &one };

		if (each_pod(&tmp, find_stream_one, &f))
			state_dir = *d;
	}
	if (!state_dir || (r->uid[0] && strcmp(r->uid, f.uid) != 0)) {
		reply_text(req, 404, "pod does not exist");
		goto out;
	}
	if (r->route != KT_SERVE_PORTFORWARD && (!f.pod || !has_container(f.pod, r->container))) {
		kt_sb_printf(&msg, "container not found (\"%s\")", r->container);
		reply_text(req, 404, kt_sb_str(&msg));
		goto out;
	}
	if (r->route == KT_SERVE_PORTFORWARD) {
		const char *v = joined(req, "X-Stream-Protocol-Version", &versions);
		const char *upg = evhttp_find_header(in, "Upgrade");
		const char *conn = evhttp_find_header(in, "Connection");

		if (!upg || !conn || !strcasestr(conn, "upgrade") || strcasecmp(upg, "SPDY/3.1")) {
			reply_text(req, 400,
				   "unable to upgrade: missing upgrade headers in request");
			goto out;
		}
		if (!v || !strstr(v, "portforward.k8s.io")) {
			evhttp_add_header(evhttp_request_get_output_headers(req),
					  "X-Accepted-Stream-Protocol-Versions",
					  "portforward.k8s.io");
			kt_sb_printf(
			    &msg,
			    "unable to upgrade: unable to negotiate protocol: client supports "
			    "[%.200s], server accepts [portforward.k8s.io]",
			    v ? v : "");
			reply_text(req, 403, kt_sb_str(&msg));
			goto out;
		}
		up = (struct kt_chan_upgrade){ .transport = KT_CHAN_SPDY, .version = 1 };
		snprintf(up.protocol, sizeof(up.protocol), "portforward.k8s.io");
	} else if (kt_chan_negotiate(
		       evhttp_find_header(in, "Connection"), evhttp_find_header(in, "Upgrade"),
		       joined(req, "X-Stream-Protocol-Version", &versions),
		       joined(req, "Sec-WebSocket-Protocol", &protos), &up, &no) < 0) {
		if (no.accepted[0])
			evhttp_add_header(evhttp_request_get_output_headers(req),
					  "X-Accepted-Stream-Protocol-Versions", no.accepted);
		reply_text(req, no.status, no.body);
		goto out;
	}
	if (up.transport == KT_CHAN_WEBSOCKET) {
		const char *key = evhttp_find_header(in, "Sec-WebSocket-Key");
		char accept[29];

		if (!key || strlen(key) != 24) {
			reply_text(req, 400,
				   "websocket: not a websocket handshake: "
				   "'Sec-WebSocket-Key' header is missing or blank");
			goto out;
		}
		kt_tls_ws_accept(key, accept);
		kt_sb_printf(&head,
			     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
			     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n",
			     accept);
		if (up.protocol[0])
			kt_sb_printf(&head, "Sec-WebSocket-Protocol: %s\r\n", up.protocol);
		kt_sb_puts(&head, "\r\n");
	} else {
		kt_sb_printf(&head,
			     "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
			     "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: %s\r\n\r\n",
			     up.protocol);
	}
	o.r = (struct kt_rcmd_opts){ .kind = r->route == KT_SERVE_EXEC	   ? KT_RCMD_EXEC
					     : r->route == KT_SERVE_ATTACH ? KT_RCMD_ATTACH
									   : KT_RCMD_PORTFORWARD,
				     .up = up,
				     .in = r->st.in,
				     .out = r->st.out,
				     .err = r->st.err,
				     .tty = r->st.tty,
				     .max_frame = 1 << 20,
				     .max_headers = 64 * 1024 };
	o.provider = s->o->provider;
	o.state_dir = state_dir;
	o.uid = f.uid;
	o.container = r->container;
	o.argv = r->st.argv;
	o.argc = r->st.argc;
	o.create_timeout_ms = s->o->stream_create_ms;
	o.idle_timeout_ms = s->o->stream_idle_ms;
	sess = calloc(1, sizeof(*sess));
	if (!sess || head.oom) {
		reply_text(req, 500, "out of memory");
		goto out;
	}
	bufferevent_write(evhttp_connection_get_bufferevent(evcon), head.buf, head.len);
	evhttp_connection_set_closecb(evcon, NULL, NULL);
	sess->run = kt_rcmd_run_start(s->base, evcon, &o, session_done, s, &err);
	if (!sess->run) {
		KT_V(0, "stream session not started", "err=\"%s\"", err.msg);
		evhttp_connection_free(evcon);
		goto out;
	}
	KT_V(2, "stream session", "namespace=\"%s\" pod=\"%s\" protocol=\"%s\"", r->ns, r->pod,
	     up.protocol);
	sess->next = s->sessions;
	s->sessions = sess;
	sess = NULL;
out:
	free(sess);
	cJSON_Delete(f.pod);
	kt_sb_release(&versions);
	kt_sb_release(&protos);
	kt_sb_release(&head);
	kt_sb_release(&msg);
}

/* ---------------------------------------------------------------- webhooks */

static struct cached *cache_get(struct cached *c, const char *key)
{
	int64_t now = kt_mono_ms();

	for (; c; c = c->next)
		if (c->until_ms > now && strcmp(c->key, key) == 0)
			return c;
	return NULL;
}

static void cache_free(struct cached *c)
{
	while (c) {
		struct cached *next = c->next;

		free(c->key);
		free(c);
		c = next;
	}
}

/* keeps an answer; the expired ones go first, and all when it is full */
static void cache_put(struct cached **head, int *n, const char *key, bool ok, const char *user,
		      const char *groups, int64_t ttl_ms)
{
	int64_t now = kt_mono_ms();
	struct cached **pp = head, *c;

	while (*pp) {
		c = *pp;
		if (c->until_ms <= now || strcmp(c->key, key) == 0) {
			*pp = c->next;
			free(c->key);
			free(c);
			(*n)--;
		} else {
			pp = &c->next;
		}
	}
	if (*n >= CACHE_MAX) {
		cache_free(*head);
		*head = NULL;
		*n = 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->key = strdup(key))) {
		free(c);
		return;
	}
	c->ok = ok;
	snprintf(c->user, sizeof(c->user), "%s", user);
	snprintf(c->groups, sizeof(c->groups), "%s", groups);
	c->until_ms = now + ttl_ms;
	c->next = *head;
	*head = c;
	(*n)++;
}

/* POSTs doc to path: the reply's status object, or NULL */
static cJSON *review(struct srv *s, const char *path, cJSON *doc)
{
	struct kt_api_req req = { .method = "POST", .path = path };
	struct kt_api_resp resp = { 0 };
	struct kt_err err = { 0 };
	char *body = cJSON_PrintUnformatted(doc);
	cJSON *status = NULL;

	if (!body)
		return NULL;
	req.body = body;
	req.body_len = strlen(body);
	if (kt_api_do(s->o->api, &req, &resp, &err) == 0 && resp.json)
		status = cJSON_DetachItemFromObjectCaseSensitive(resp.json, "status");
	else
		KT_V(0, "review failed", "path=\"%s\" err=\"%s\"", path, err.msg);
	kt_api_resp_release(&resp);
	free(body);
	return status;
}

/* the bearer token of the request, or NULL */
static const char *bearer(struct evhttp_request *req)
{
	const char *a = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");

	if (!a || strncasecmp(a, "Bearer ", 7) != 0)
		return NULL;
	a += 7;
	while (*a == ' ')
		a++;
	return *a ? a : NULL;
}

/* a token through a TokenReview (its answer kept 2 min): 1 with user and
 * groups when the API server says who it is, else 0 */
static int token_review(struct srv *s, const char *token, char *user, size_t us, char *groups,
			size_t gs)
{
	struct cached *c = cache_get(s->tokens, token);
	cJSON *doc, *spec, *st, *g;
	struct kt_sb gsb = { 0 };
	bool ok;

	if (c) {
		snprintf(user, us, "%s", c->user);
		snprintf(groups, gs, "%s", c->groups);
		return c->ok;
	}
	doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "apiVersion", "authentication.k8s.io/v1");
	cJSON_AddStringToObject(doc, "kind", "TokenReview");
	spec = cJSON_AddObjectToObject(doc, "spec");
	cJSON_AddStringToObject(spec, "token", token);
	st = review(s, "/apis/authentication.k8s.io/v1/tokenreviews", doc);
	cJSON_Delete(doc);
	if (!st)
		return 0; /* not kept: the next request asks again */
	ok = cJSON_IsTrue(kt_json_get(st, "authenticated")) && kt_json_path(st, "user.username") &&
	     cJSON_IsString(kt_json_path(st, "user.username"));
	snprintf(user, us, "%s", ok ? kt_json_path(st, "user.username")->valuestring : "");
	cJSON_ArrayForEach (g, kt_json_path(st, "user.groups")) {
		if (!cJSON_IsString(g) || strchr(g->valuestring, '\n'))
			continue;
		kt_sb_printf(&gsb, "%s%s", gsb.len ? "\n" : "", g->valuestring);
	}
	snprintf(groups, gs, "%s", ok ? kt_sb_str(&gsb) : "");
	kt_sb_release(&gsb);
	cJSON_Delete(st);
	cache_put(&s->tokens, &s->ntokens, token, ok, user, groups, KT_SERVE_TOKEN_TTL_MS);
	return ok;
}

/* the kubelet's webhook authorization: 1 allowed, 0 denied, -1 no answer */
static int access_review(struct srv *s, const char *user, const char *groups, const char *verb,
			 const char *sub)
{
	struct kt_sb key = { 0 };
	struct cached *c;
	cJSON *doc, *spec, *gs, *ra, *st;
	const char *p = groups;
	int rc;

	kt_sb_printf(&key, "%s\n%s\n%s\n%s", user, groups, verb, sub);
	c = cache_get(s->reviews, kt_sb_str(&key));
	if (c) {
		kt_sb_release(&key);
		return c->ok;
	}
	doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "apiVersion", "authorization.k8s.io/v1");
	cJSON_AddStringToObject(doc, "kind", "SubjectAccessReview");
	spec = cJSON_AddObjectToObject(doc, "spec");
	cJSON_AddStringToObject(spec, "user", user);
	gs = cJSON_AddArrayToObject(spec, "groups");
	while (*p) {
		size_t n = strcspn(p, "\n");

		cJSON_AddItemToArray(gs, kt_json_string_from_bytes(p, n));
		p += n + (p[n] == '\n');
	}
	ra = cJSON_AddObjectToObject(spec, "resourceAttributes");
	cJSON_AddStringToObject(ra, "verb", verb);
	cJSON_AddStringToObject(ra, "resource", "nodes");
	cJSON_AddStringToObject(ra, "subresource", sub);
	cJSON_AddStringToObject(ra, "name", s->o->node_name ? s->o->node_name : "");
	st = review(s, "/apis/authorization.k8s.io/v1/subjectaccessreviews", doc);
	cJSON_Delete(doc);
	if (!st) {
		kt_sb_release(&key);
		return -1;
	}
	rc = cJSON_IsTrue(kt_json_get(st, "allowed")) && !cJSON_IsTrue(kt_json_get(st, "denied"));
	cJSON_Delete(st);
	cache_put(&s->reviews, &s->nreviews, kt_sb_str(&key), rc, "", "",
		  rc ? KT_SERVE_ALLOW_TTL_MS : KT_SERVE_DENY_TTL_MS);
	kt_sb_release(&key);
	return rc;
}

/* every authenticated user is in system:authenticated, as the kubelet adds it */
static void add_authenticated(char *groups, size_t gs)
{
	const char *g = "system:authenticated";
	const char *p = groups;

	while (*p) {
		size_t n = strcspn(p, "\n");

		if (n == strlen(g) && strncmp(p, g, n) == 0)
			return;
		p += n + (p[n] == '\n');
	}
	if (strlen(groups) + strlen(g) + 2 < gs)
		snprintf(groups + strlen(groups), gs - strlen(groups), "%s%s", *groups ? "\n" : "",
			 g);
}

/* ------------------------------------------------------------ the requests */

static const char *method_name(enum evhttp_cmd_type c)
{
	switch (c) {
	case EVHTTP_REQ_GET:
		return "GET";
	case EVHTTP_REQ_HEAD:
		return "HEAD";
	case EVHTTP_REQ_POST:
		return "POST";
	case EVHTTP_REQ_PUT:
		return "PUT";
	case EVHTTP_REQ_DELETE:
		return "DELETE";
	case EVHTTP_REQ_PATCH:
		return "PATCH";
	default:
		return "OTHER";
	}
}

/* who asks: 1 with user, 0 anonymous, -1 a certificate that is not valid */
static int authenticate(struct evhttp_request *req, char *user, size_t us, char *groups, size_t gs)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	void *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;

	user[0] = groups[0] = '\0';
	return ssl ? kt_tls_peer(ssl, user, us, groups, gs) : 0;
}

static bool over_cap(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	void *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
	struct conn *c = ssl ? kt_tls_conn_arg(ssl) : NULL;

	return c && c->over_cap;
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct srv *s = arg;
	const char *method = method_name(evhttp_request_get_command(req));
	const char *target = evhttp_request_get_uri(req);
	struct kt_serve_req r;
	struct kt_serve_refusal no;
	char user[256], groups[512];
	int who;

	if (over_cap(req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		reply_text(req, 503, "too many connections: try again later");
		return;
	}
	who = authenticate(req, user, sizeof(user), groups, sizeof(groups));
	KT_V(2, "request", "method=\"%s\" path=\"%.200s\" user=\"%s\"", method, target, user);
	if (who == 0 && s->o->token_webhook && bearer(req))
		who = token_review(s, bearer(req), user, sizeof(user), groups, sizeof(groups));
	/* anonymous requests are refused, as the kubelet's with anonymous off */
	if (who <= 0) {
		reply_text(req, 401, "Unauthorized");
		return;
	}
	add_authenticated(groups, sizeof(groups));
	if (!s->o->always_allow) {
		const char *verb = kt_serve_verb(method) ? kt_serve_verb(method) : "unknown";
		struct kt_sb sb = { 0 };
		char path[1024];
		int allowed;

		snprintf(path, sizeof(path), "%.*s", (int)strcspn(target, "?"), target);
		allowed = access_review(s, user, groups, verb, kt_serve_subresource(path));
		if (allowed <= 0) {
			kt_sb_printf(&sb, "%s (user=%s, verb=%s, resource=nodes, subresource=%s)",
				     allowed < 0 ? "Authorization error" : "Forbidden", user, verb,
				     kt_serve_subresource(path));
			reply_text(req, allowed < 0 ? 500 : 403, kt_sb_str(&sb));
			kt_sb_release(&sb);
			return;
		}
	}
	if (kt_serve_parse(method, target, &r, &no) < 0) {
		reply_text(req, no.status, no.body);
		return;
	}
	switch (r.route) {
	case KT_SERVE_HEALTHZ:
		reply(req, 200, "text/plain; charset=utf-8", "ok", 2);
		break;
	case KT_SERVE_PODS:
		serve_pods(s, req, false);
		break;
	case KT_SERVE_RUNNINGPODS:
		serve_pods(s, req, true);
		break;
	case KT_SERVE_LOGS:
		serve_logs(s, req, &r);
		break;
	case KT_SERVE_STATS_SUMMARY:
		serve_stats(s, req, false);
		break;
	case KT_SERVE_METRICS_RESOURCE:
		serve_stats(s, req, true);
		break;
	case KT_SERVE_EXEC:
	case KT_SERVE_ATTACH:
	case KT_SERVE_PORTFORWARD:
		serve_stream(s, req, &r);
		break;
	}
}

/* ---------------------------------------------------------- the connections */

static void conn_gone(void *arg)
{
	struct conn *c = arg;

	c->s->conns--;
	free(c);
}

static struct bufferevent *on_accept(struct event_base *base, void *arg)
{
	struct srv *s = arg;
	struct kt_err err = { 0 };
	struct conn *c = calloc(1, sizeof(*c));
	void *ssl;

	if (!c)
		return NULL;
	/* a rotated certificate is taken by the next connection */
	if (kt_tls_reload(s->o->tls, &err) > 0)
		KT_V(1, "certificate loaded again", "%s", "");
	else if (err.msg[0])
		KT_V(0, "certificate not loaded again", "err=\"%s\"", err.msg);
	c->s = s;
	c->over_cap = s->conns >= s->o->max_conns;
	ssl = kt_tls_conn_new(s->o->tls, conn_gone, c);
	if (!ssl) {
		free(c);
		return NULL;
	}
	s->conns++;
	return bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
					      BEV_OPT_CLOSE_ON_FREE);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	event_base_loopexit(arg, NULL);
}

int kt_serve_http_run(const struct kt_serve_http_opts *o, struct kt_err *err)
{
	struct srv s = { .o = o, .ino = -1 };
	struct event *sigint = NULL, *sigterm = NULL;
	struct evhttp_bound_socket *bound;
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	int rc = -1, port = o->port;

	signal(SIGPIPE, SIG_IGN);
	s.base = event_base_new();
	s.http = s.base ? evhttp_new(s.base) : NULL;
	s.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	s.rbuf = malloc(READ_CHUNK);
	if (!s.http || s.ino < 0) {
		kt_error(err, "cannot start the server: %s", strerror(errno));
		goto out;
	}
	s.ino_ev = event_new(s.base, s.ino, EV_READ | EV_PERSIST, on_inotify, &s);
	sigint = evsignal_new(s.base, SIGINT, on_signal, s.base);
	sigterm = evsignal_new(s.base, SIGTERM, on_signal, s.base);
	if (!s.ino_ev || !sigint || !sigterm) {
		kt_error(err, "cannot start the server: out of memory");
		goto out;
	}
	event_add(s.ino_ev, NULL);
	event_add(sigint, NULL);
	event_add(sigterm, NULL);
	evhttp_set_bevcb(s.http, on_accept, &s);
	evhttp_set_gencb(s.http, on_request, &s);
	evhttp_set_timeout(s.http, o->header_timeout_s);
	evhttp_set_max_headers_size(s.http, o->max_header_bytes);
	evhttp_set_max_body_size(s.http, 1024 * 1024);
	evhttp_set_allowed_methods(s.http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
					       EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
					       EVHTTP_REQ_PATCH);
	bound = evhttp_bind_socket_with_handle(s.http, o->address, (ev_uint16_t)o->port);
	if (!bound) {
		kt_error_kind(err, KT_ERR_FAIL, "cannot listen on %s:%d: %s", o->address, o->port,
			      strerror(errno));
		goto out;
	}
	/* the port the system gave when asked for 0 */
	if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&sa, &salen) == 0)
		port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
						      : ((struct sockaddr_in *)&sa)->sin_port);
	KT_V(1, "listening", "address=\"%s\" port=%d", o->address, port);
	event_base_dispatch(s.base);
	rc = 0;
out:
	/* sessions first: each frees its connection, which evhttp_free would too */
	while (s.sessions)
		session_done(&s, s.sessions->run);
	while (s.follows) {
		struct follow *f = s.follows;

		if (f->req)
			evhttp_connection_set_closecb(evhttp_request_get_connection(f->req), NULL,
						      NULL);
		follow_free(f);
	}
	if (s.http)
		evhttp_free(s.http);
	cache_free(s.tokens);
	cache_free(s.reviews);
	if (sigint)
		event_free(sigint);
	if (sigterm)
		event_free(sigterm);
	if (s.ino_ev)
		event_free(s.ino_ev);
	if (s.ino >= 0)
		close(s.ino);
	if (s.base)
		event_base_free(s.base);
	free(s.rbuf);
	return rc;
}
