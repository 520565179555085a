/* SPDX-License-Identifier: Apache-2.0 */
/* podstore: a pod worker state as a directory of files, committed through a journal */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "podstore.h"

#define PS_PATH_MAX 4096
#define PS_NAME_CUT 160		/* a pod file name longer than this ends with a hash */
#define PS_NAME_MAX 200
#define PS_FILE_MAX (64u << 20)	/* one pod's status, the node line */
#define PS_OLD_MAX (1u << 31)	/* a single-file state to convert */
#define PS_BULK 8		/* more files than this in a commit: one syncfs, not an fsync each */
#define PS_JOURNAL_MAGIC "podstore-journal 1\n"

/* one file a commit writes (text) or removes (text NULL) */
struct ps_put {
	char name[PS_NAME_MAX + 8];	/* "node" or "pods/NAME" */
	char *text;			/* owned */
	size_t len;
};

struct kt_podstore {
	char path[PS_PATH_MAX];
	struct kt_lock lock;
	char *node;		/* the node line on disk, NULL when none */
	struct ps_put *puts;	/* the commit being built */
	size_t nputs, cap;
};

/* ------------------------------------------------------------ helpers */

/* a file of the state: one that is there and cannot be read is the state's
 * trouble (podworker-step calls it damaged), not a path the caller gave */
static int read_state(const char *path, size_t max, char **buf, size_t *len,
		      struct kt_err *err)
{
	if (kt_file_read(path, NULL, max, buf, len, err) == 0)
		return 0;
	err->about = KT_ERR_ABOUT_NONE;
	return -1;
}

static int ps_path(char *out, const char *dir, const char *name, struct kt_err *err)
{
	if ((size_t)snprintf(out, PS_PATH_MAX, "%s/%s", dir, name) >= PS_PATH_MAX)
		return kt_error_file(err, KT_ERR_INPUT, "path too long: '%s/%s'", dir, name);
	return 0;
}

static int sync_dir(const char *dir, struct kt_err *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd < 0 ? -1 : fsync(fd);

	if (fd >= 0)
		close(fd);
	if (rc < 0)
		return kt_error(err, "cannot sync '%s': %s", dir, strerror(errno));
	return 0;
}

static int sync_parent(const char *path, struct kt_err *err)
{
	char dir[PS_PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return sync_dir(".", err);
	slash[slash == dir] = '\0';
	return sync_dir(dir, err);
}

/* the file name of a pod: see podstore.h */
static void pod_name(const char *uid, char *out)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t h = 1469598103934665603ULL;
	size_t n = 0;
	const unsigned char *u;

	for (u = (const unsigned char *)uid; *u && n + 3 <= PS_NAME_CUT; u++) {
		bool keep = (*u >= 'a' && *u <= 'z') || (*u >= 'A' && *u <= 'Z') ||
			    (*u >= '0' && *u <= '9') || *u == '_' || *u == '-' ||
			    (*u == '.' && n > 0);

		if (keep) {
			out[n++] = (char)*u;
			continue;
		}
		out[n++] = '%';
		out[n++] = hex[*u >> 4];
		out[n++] = hex[*u & 15];
	}
	if (*u) {
		for (u = (const unsigned char *)uid; *u; u++)
			h = (h ^ *u) * 1099511628211ULL;
		n += (size_t)sprintf(out + n, "~%016llx", (unsigned long long)h);
	}
	out[n] = '\0';
}

/* the mode a new file gets: 0600 less the umask, as open(2) would give it */
static mode_t file_mode(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return 0600 & ~mask;
}

/* text to dir/name by a temporary file in dir and a rename; no fsync when bulk */
static int put_file(const char *dir, const char *name, const char *text, size_t len,
		    bool bulk, struct kt_err *err)
{
	char tmp[PS_PATH_MAX], dst[PS_PATH_MAX];
	ssize_t w = 0;
	int fd, e;

	if (ps_path(tmp, dir, "pod.tmp.XXXXXX", err) < 0 || ps_path(dst, dir, name, err) < 0)
		return -1;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return kt_error(err, "cannot create a file in '%s': %s", dir, strerror(errno));
	if (fchmod(fd, file_mode()) < 0)
		w = -1;
	for (size_t off = 0; w >= 0 && off < len; off += (size_t)w) {
		w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			w = 0;
	}
	if (w < 0 || (!bulk && fsync(fd) < 0) || close(fd) < 0) {
		e = errno;
		unlink(tmp);
		return kt_error(err, "cannot write '%s': %s", dst, strerror(e));
	}
	if (rename(tmp, dst) < 0) {
		e = errno;
		unlink(tmp);
		return kt_error(err, "cannot replace '%s': %s", dst, strerror(e));
	}
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* a mkdir that leaves the directory ours to write, whatever the umask, and lasting */
static int make_dir(const char *path, struct kt_err *err)
{
	if (mkdir(path, 0700) == 0)
		return chmod(path, 0700) < 0 ? kt_error(err, "cannot create '%s': %s", path,
							 strerror(errno))
					     : sync_parent(path, err);
	if (errno != EEXIST)
		return kt_error(err, "cannot create '%s': %s", path, strerror(errno));
	return 0;
}

/*
 * What a killed writer left: its temporary files (PATH/ *.tmp.XXXXXX, and
 * PATH.tmp.XXXXXX from the single-file layout).  Every writer holds the
 * lock, so while we hold it they are orphans.
 */
static void clear_orphans(const char *path, const char *suffix)
{
	char pat[PS_PATH_MAX];
	glob_t g = { 0 };
	size_t n = 0;
	const char *p;

	/* the path is literal: a *, ?, [ or backslash in it matches only itself */
	for (p = path; *p && n + 2 + strlen(suffix) < sizeof(pat); p++) {
		if (strchr("*?[\\", *p))
			pat[n++] = '\\';
		pat[n++] = *p;
	}
	if (*p)
		return;
	memcpy(pat + n, suffix, strlen(suffix) + 1);
	if (glob(pat, GLOB_NOSORT, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		unlink(g.gl_pathv[i]);
	globfree(&g);
}

/* ------------------------------------------------------------- commits */

static void puts_clear(struct kt_podstore *ps)
{
	for (size_t i = 0; i < ps->nputs; i++)
		free(ps->puts[i].text);
	ps->nputs = 0;
}

/* takes text (NULL: remove the file) */
static int puts_add(struct kt_podstore *ps, const char *name, char *text, size_t len,
		    struct kt_err *err)
{
	struct ps_put *pp;

	if (ps->nputs == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 16;

		pp = realloc(ps->puts, cap * sizeof(*pp));
		if (!pp) {
			free(text);
			return kt_error(err, "out of memory");
		}
		ps->puts = pp;
		ps->cap = cap;
	}
	pp = &ps->puts[ps->nputs++];
	snprintf(pp->name, sizeof(pp->name), "%s", name);
	pp->text = text;
	pp->len = len;
	return 0;
}

static int pod_changed(void *ctx, const char *uid, const char *text, size_t len,
		       struct kt_err *err)
{
	char name[PS_NAME_MAX + 8], *copy = NULL;

	memcpy(name, "pods/", 5);
	pod_name(uid, name + 5);
	if (text && !(copy = malloc(len + 1)))
		return kt_error(err, "out of memory");
	if (copy)
		memcpy(copy, text, len + 1);
	return puts_add(ctx, name, copy, len, err);
}

/* the journal: magic, then "put NAME LEN\n" and LEN bytes or "del NAME\n", then "end\n" */
static char *journal_text(const struct kt_podstore *ps, size_t *len)
{
	size_t cap = sizeof(PS_JOURNAL_MAGIC) + 8, n;
	char *t, *at;

	for (size_t i = 0; i < ps->nputs; i++)
		cap += ps->puts[i].len + strlen(ps->puts[i].name) + 32;
	t = malloc(cap);
	if (!t)
		return NULL;
	at = t + sprintf(t, "%s", PS_JOURNAL_MAGIC);
	for (size_t i = 0; i < ps->nputs; i++) {
		const struct ps_put *pp = &ps->puts[i];

		if (!pp->text) {
			at += sprintf(at, "del %s\n", pp->name);
			continue;
		}
		at += sprintf(at, "put %s %zu\n", pp->name, pp->len);
		memcpy(at, pp->text, pp->len);
		at += pp->len;
	}
	n = (size_t)(at - t) + (size_t)sprintf(at, "end\n");
	*len = n;
	return t;
}

/*
 * The files of the commit in ps->puts, made durable (by one syncfs when
 * bulk or when they are many); the journal is then removed.
 */
static int apply(struct kt_podstore *ps, const char *dir, bool bulk, struct kt_err *err)
{
	char path[PS_PATH_MAX], pods[PS_PATH_MAX];
	int fd;

	if (ps_path(pods, dir, "pods", err) < 0 || make_dir(pods, err) < 0)
		return -1;
	bulk = bulk || ps->nputs > PS_BULK;
	for (size_t i = 0; i < ps->nputs; i++) {
		const struct ps_put *pp = &ps->puts[i];

		if (ps_path(path, dir, pp->name, err) < 0)
			return -1;
		if (!pp->text && unlink(path) < 0 && errno != ENOENT)
			return kt_error(err, "cannot remove '%s': %s", path, strerror(errno));
		if (pp->text && put_file(dir, pp->name, pp->text, pp->len, bulk, err) < 0)
			return -1;
	}
	fd = bulk ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (bulk && (fd < 0 || syncfs(fd) < 0)) {
		if (fd >= 0)
			close(fd);
		return kt_error(err, "cannot sync '%s': %s", dir, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	if (sync_dir(pods, err) < 0 || sync_dir(dir, err) < 0)
		return -1;
	/* the journal goes for good before anything newer is acknowledged */
	if (ps_path(path, dir, "journal", err) < 0)
		return -1;
	if (unlink(path) < 0 && errno != ENOENT)
		return kt_error(err, "cannot remove '%s': %s", path, strerror(errno));
	return sync_dir(dir, err);
}

/* a commit of one file needs no journal: its rename is atomic by itself */
static int commit_one(const struct kt_podstore *ps, const char *dir, struct kt_err *err)
{
	const struct ps_put *pp = &ps->puts[0];
	char path[PS_PATH_MAX], pods[PS_PATH_MAX];

	if (ps_path(path, dir, pp->name, err) < 0 || ps_path(pods, dir, "pods", err) < 0 ||
	    make_dir(pods, err) < 0)
		return -1;
	if (!pp->text && unlink(path) < 0 && errno != ENOENT)
		return kt_error(err, "cannot remove '%s': %s", path, strerror(errno));
	if (pp->text && put_file(dir, pp->name, pp->text, pp->len, false, err) < 0)
		return -1;
	/* the temporary file was in dir, the file is in pods/ or dir */
	if (strncmp(pp->name, "pods/", 5) == 0 && sync_dir(pods, err) < 0)
		return -1;
	return sync_dir(dir, err);
}

static int commit(struct kt_podstore *ps, const char *dir, struct kt_err *err)
{
	char path[PS_PATH_MAX];
	size_t len;
	char *j;
	int rc;

	if (make_dir(dir, err) < 0 || ps_path(path, dir, "journal", err) < 0)
		return -1;
	if (ps->nputs == 1)
		return commit_one(ps, dir, err);
	j = journal_text(ps, &len);
	if (!j)
		return kt_error(err, "out of memory");
	rc = kt_file_replace(path, j, len, 0600, err);
	free(j);
	return rc < 0 ? -1 : apply(ps, dir, false, err);
}

int kt_podstore_save(struct kt_podstore *ps, struct kt_podworker *pw, size_t *files,
		     struct kt_err *err)
{
	char *node = NULL;
	size_t len;
	int rc = -1;

	if (files)
		*files = 0;
	if (kt_podworker_node_text(pw, &node, &len, err) < 0)
		return -1;
	if ((!ps->node || strcmp(ps->node, node) != 0) &&
	    puts_add(ps, "node", strdup(node), len, err) < 0)
		goto out;
	if (ps->nputs && !ps->puts[0].text) {
		kt_error(err, "out of memory");
		goto out;
	}
	if (kt_podworker_changes(pw, pod_changed, ps, err) < 0)
		goto out;
	if (ps->nputs && commit(ps, ps->path, err) < 0)
		goto out;
	if (files)
		*files = ps->nputs;
	free(ps->node);
	ps->node = node;
	node = NULL;
	rc = 0;
out:
	puts_clear(ps);
	free(node);
	return rc;
}

/* ------------------------------------------------------------- replay */

static bool name_ok(const char *name, size_t n)
{
	if (n == 4 && memcmp(name, "node", 4) == 0)
		return true;
	if (n <= 5 || n > PS_NAME_MAX || memcmp(name, "pods/", 5) != 0 || name[5] == '.')
		return false;
	for (size_t i = 5; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-%~",
			    name[i]))
			return false;
	return true;
}

/* one journal entry at *at: 1 at "end", 0 after one, -2 when malformed, -1 with err */
static int journal_entry(struct kt_podstore *ps, const char **at, const char *end,
			 struct kt_err *err)
{
	const char *nl = memchr(*at, '\n', (size_t)(end - *at)), *name, *sp;
	char nm[PS_NAME_MAX + 1], *text;
	unsigned long long len = 0;
	bool put;

	if (!nl)
		return -2;
	if (nl - *at == 3 && memcmp(*at, "end", 3) == 0)
		return nl + 1 == end ? 1 : -2;
	put = nl - *at > 4 && memcmp(*at, "put ", 4) == 0;
	if (!put && !(nl - *at > 4 && memcmp(*at, "del ", 4) == 0))
		return -2;
	name = *at + 4;
	sp = put ? memchr(name, ' ', (size_t)(nl - name)) : nl;
	if (!sp || !name_ok(name, (size_t)(sp - name)))
		return -2;
	if (put && (sscanf(sp + 1, "%llu", &len) != 1 || len > (size_t)(end - nl - 1)))
		return -2;
	memcpy(nm, name, (size_t)(sp - name));
	nm[sp - name] = '\0';
	text = put ? malloc(len + 1) : NULL;
	if (put && !text)
		return kt_error(err, "out of memory");
	if (text) {
		memcpy(text, nl + 1, len);
		text[len] = '\0';
	}
	*at = nl + 1 + len;
	return puts_add(ps, nm, text, (size_t)len, err);
}

/* a journal left by a killed writer: its commit is done again, then it goes */
static int replay(struct kt_podstore *ps, struct kt_err *err)
{
	char path[PS_PATH_MAX], *buf = NULL;
	size_t len = 0;
	const char *at, *end;
	int rc = 0;

	if (ps_path(path, ps->path, "journal", err) < 0)
		return -1;
	if (access(path, F_OK) < 0)
		return 0;
	if (read_state(path, PS_OLD_MAX, &buf, &len, err) < 0)
		return -1;
	at = buf;
	end = buf + len;
	if (len < sizeof(PS_JOURNAL_MAGIC) - 1 ||
	    memcmp(buf, PS_JOURNAL_MAGIC, sizeof(PS_JOURNAL_MAGIC) - 1) != 0)
		rc = -2;
	else
		at += sizeof(PS_JOURNAL_MAGIC) - 1;
	while (rc == 0)
		rc = journal_entry(ps, &at, end, err);
	free(buf);
	if (rc == -2)
		rc = kt_error_kind(err, KT_ERR_INPUT, "%s: not a journal this version wrote",
				   path);
	if (rc > 0)
		rc = apply(ps, ps->path, false, err);
	puts_clear(ps);
	return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------- the pods kept */

static int read_pod(const char *path, char **text, size_t *len, char **where,
		    struct kt_err *err)
{
	if (read_state(path, PS_FILE_MAX, text, len, err) < 0) {
		err->kind = KT_ERR_INPUT;
		return -1;
	}
	*where = strdup(path);
	if (!*where) {
		free(*text);
		return kt_error(err, "out of memory");
	}
	return 1;
}

static int src_get(void *ctx, const char *uid, char **text, size_t *len, char **where,
		   struct kt_err *err)
{
	const struct kt_podstore *ps = ctx;
	char name[PS_NAME_MAX + 8], path[PS_PATH_MAX];

	memcpy(name, "pods/", 5);
	pod_name(uid, name + 5);
	if (ps_path(path, ps->path, name, err) < 0)
		return -1;
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	return read_pod(path, text, len, where, err);
}

static int src_next(void *ctx, void **cursor, char **text, size_t *len, char **where,
		    struct kt_err *err)
{
	const struct kt_podstore *ps = ctx;
	char dir[PS_PATH_MAX], path[PS_PATH_MAX];
	struct dirent *de;

	if (!text || ps_path(dir, ps->path, "pods", err) < 0) {
		if (*cursor)
			closedir(*cursor);
		*cursor = NULL;
		return text ? -1 : 0;
	}
	if (!*cursor && !(*cursor = opendir(dir)))
		return errno == ENOENT ? 0 : kt_error(err, "cannot read '%s': %s", dir,
						      strerror(errno));
	while ((de = readdir(*cursor)) && de->d_name[0] == '.')
		;
	if (de && ps_path(path, dir, de->d_name, err) == 0)
		return read_pod(path, text, len, where, err);
	closedir(*cursor);
	*cursor = NULL;
	return de ? -1 : 0;
}

/* ---------------------------------------------------------- conversion */

/* the single-file state at ps->path, read whole, as files in PATH.new, synced */
static int convert_build(struct kt_podstore *ps, const char *tmpdir, struct kt_err *err)
{
	struct kt_podworker *old;
	char *buf = NULL, *node = NULL;
	size_t len = 0;
	int rc = -1;

	if (read_state(ps->path, PS_OLD_MAX, &buf, &len, err) < 0)
		return -1;
	old = len ? kt_podworker_take_text(ps->path, buf, len, err) : kt_podworker_new();
	if (!len)
		free(buf);
	if (!old)
		return err->kind == KT_ERR_INPUT ? -1 : kt_error(err, "out of memory");
	if (kt_podworker_read_all(old, err) < 0 ||
	    kt_podworker_node_text(old, &node, &len, err) < 0 ||
	    puts_add(ps, "node", node, len, err) < 0 ||
	    kt_podworker_changes(old, pod_changed, ps, err) < 0)
		goto out;
	remove_tree(tmpdir);
	if (make_dir(tmpdir, err) < 0)
		goto out;
	rc = apply(ps, tmpdir, true, err);
out:
	if (rc < 0 && kt_podworker_damaged(old))
		err->kind = KT_ERR_INPUT;
	puts_clear(ps);
	kt_podworker_free(old);
	return rc;
}

static int suffixed(char *out, const char *path, const char *suffix, struct kt_err *err)
{
	if ((size_t)snprintf(out, PS_PATH_MAX, "%s%s", path, suffix) >= PS_PATH_MAX)
		return kt_error_file(err, KT_ERR_INPUT, "path too long: '%s'", path);
	return 0;
}

/* PATH.new built, PATH to PATH.old, PATH.new to PATH, PATH.old removed */
static int convert(struct kt_podstore *ps, struct kt_err *err)
{
	char nw[PS_PATH_MAX], old[PS_PATH_MAX];

	if (suffixed(nw, ps->path, ".new", err) < 0 ||
	    suffixed(old, ps->path, ".old", err) < 0 || convert_build(ps, nw, err) < 0)
		return -1;
	if (rename(ps->path, old) < 0 || sync_parent(ps->path, err) < 0 ||
	    rename(nw, ps->path) < 0 || sync_parent(ps->path, err) < 0)
		return kt_error(err, "cannot convert '%s' to a state directory: %s", ps->path,
				strerror(errno));
	unlink(old);
	return sync_parent(ps->path, err);
}

/*
 * A conversion cut short: with PATH gone, PATH.new (complete once PATH was
 * renamed) becomes PATH; a PATH.old beside a directory is the old file,
 * converted; a PATH.new beside the old file is half built.
 */
static int recover(struct kt_podstore *ps, struct stat *st, struct kt_err *err)
{
	char nw[PS_PATH_MAX], old[PS_PATH_MAX];
	struct stat ns;

	if (suffixed(nw, ps->path, ".new", err) < 0 || suffixed(old, ps->path, ".old", err) < 0)
		return -1;
	if (lstat(ps->path, st) < 0 && errno == ENOENT && access(old, F_OK) == 0) {
		if (rename(lstat(nw, &ns) == 0 && S_ISDIR(ns.st_mode) ? nw : old, ps->path) < 0 ||
		    sync_parent(ps->path, err) < 0)
			return kt_error(err, "cannot finish converting '%s': %s", ps->path,
					strerror(errno));
	}
	if (lstat(ps->path, st) < 0) {
		if (errno != ENOENT)
			return kt_error(err, "cannot read '%s': %s", ps->path, strerror(errno));
		st->st_mode = 0;
		return 0;
	}
	if (S_ISDIR(st->st_mode))
		unlink(old);
	else if (S_ISREG(st->st_mode))
		remove_tree(nw);
	return 0;
}

static int node_load(struct kt_podstore *ps, struct kt_podworker **pw, struct kt_err *err)
{
	char path[PS_PATH_MAX], *buf = NULL;
	size_t len = 0;

	if (ps_path(path, ps->path, "node", err) < 0)
		return -1;
	if (access(path, F_OK) < 0 && errno == ENOENT) {
		*pw = kt_podworker_new();
		return *pw ? 0 : kt_error(err, "out of memory");
	}
	if (read_state(path, PS_FILE_MAX, &buf, &len, err) < 0)
		return -1;
	ps->node = strdup(buf);
	*pw = kt_podworker_take_text(path, buf, len, err);
	if (!*pw || !ps->node) {
		kt_podworker_free(*pw);
		*pw = NULL;
		return err->kind == KT_ERR_INPUT ? -1 : kt_error(err, "out of memory");
	}
	if (kt_podworker_count(*pw) > 0) {
		kt_podworker_free(*pw);
		*pw = NULL;
		return kt_error_kind(err, KT_ERR_INPUT, "%s:2: %s", path,
				     "only the node-wide line belongs here");
	}
	return 0;
}

static int open_state(struct kt_podstore *ps, struct kt_podworker **pw,
		      struct kt_err *err)
{
	struct kt_podworker_source src = { src_get, src_next, ps };
	struct stat st;

	if (kt_lock_acquire(&ps->lock, ps->path, err) < 0 || recover(ps, &st, err) < 0)
		return -1;
	clear_orphans(ps->path, ".tmp.??????");
	if (st.st_mode && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return kt_error_kind(err, KT_ERR_INPUT, "'%s' is not a state directory",
				     ps->path);
	if (S_ISREG(st.st_mode) && convert(ps, err) < 0)
		return -1;
	if (st.st_mode) {
		clear_orphans(ps->path, "/*.tmp.??????");
		if (replay(ps, err) < 0)
			return -1;
	}
	if (node_load(ps, pw, err) < 0)
		return -1;
	kt_podworker_set_source(*pw, &src);
	return 0;
}

int kt_podstore_open(const char *path, struct kt_podstore **out, struct kt_podworker **pw,
		     struct kt_err *err)
{
	struct kt_podstore *ps = calloc(1, sizeof(*ps));

	*out = NULL;
	*pw = NULL;
	if (!ps)
		return kt_error(err, "out of memory");
	ps->lock.fd = -1;
	if ((size_t)snprintf(ps->path, sizeof(ps->path), "%s", path) >= sizeof(ps->path) - 16) {
		free(ps);
		return kt_error_file(err, KT_ERR_INPUT, "path too long: '%s'", path);
	}
	if (open_state(ps, pw, err) < 0) {
		kt_podstore_close(ps);
		return -1;
	}
	*out = ps;
	return 0;
}

void kt_podstore_close(struct kt_podstore *ps)
{
	if (!ps)
		return;
	puts_clear(ps);
	free(ps->puts);
	free(ps->node);
	kt_lock_release(&ps->lock);
	free(ps);
}
