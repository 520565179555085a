/* SPDX-License-Identifier: Apache-2.0 */
/* history_git: node-history's repository through libgit2, the only module that links it */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <dirent.h>

#include <cJSON.h>
#include <git2.h>
#include <git2/sys/odb_backend.h>

#include "history.h"
#include "history_git.h"
#include "json.h"

#define MAX_RECORD ((size_t)64 << 20)

struct kt_hrepo {
	git_repository *repo;
	int lock_fd;
	cJSON *known; /* names that ever had a commit, once asked for: a set */
};

/* err from libgit2's last error, prefixed with what we were doing */
static int git_fail(struct kt_err *err, const char *what)
{
	const git_error *e = git_error_last();

	return kt_error(err, "%s: %s", what, e && e->message ? e->message : "libgit2 failed");
}

static int take_lock(struct kt_hrepo *r, const char *dir, struct kt_err *err)
{
	char path[4096], pid[32] = "";
	ssize_t n;
	int len;

	snprintf(path, sizeof(path), "%snode-history.lock", git_repository_path(r->repo));
	r->lock_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (r->lock_fd < 0)
		return kt_error(err, "cannot open '%s': %s", path, strerror(errno));
	if (flock(r->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			return kt_error(err, "cannot lock '%s': %s", path, strerror(errno));
		n = pread(r->lock_fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		return kt_error_kind(err, KT_ERR_INPUT,
				     "repository '%s' is in use by node-history (pid %s)", dir,
				     *pid ? pid : "unknown");
	}
	len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(r->lock_fd, 0) < 0 || pwrite(r->lock_fd, pid, (size_t)len, 0) != len)
		return kt_error(err, "cannot write '%s': %s", path, strerror(errno));
	return 0;
}

struct kt_hrepo *kt_hrepo_open(const char *dir, bool lock, struct kt_err *err)
{
	struct kt_hrepo *r = calloc(1, sizeof(*r));
	git_repository_init_options init;
	int rc;

	if (!r) {
		kt_error(err, "out of memory");
		return NULL;
	}
	r->lock_fd = -1;
	git_libgit2_init();
	rc = git_repository_open_ext(&r->repo, dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc == GIT_ENOTFOUND && lock) {
		git_repository_init_options_init(&init, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
		init.flags = GIT_REPOSITORY_INIT_MKPATH;
		rc = git_repository_init_ext(&r->repo, dir, &init);
	}
	if (rc < 0) {
		if (rc == GIT_ENOTFOUND)
			kt_error_kind(err, KT_ERR_INPUT, "'%s' is not a git repository", dir);
		else
			git_fail(err, dir);
		kt_hrepo_close(r);
		return NULL;
	}
	if (lock && take_lock(r, dir, err) < 0) {
		kt_hrepo_close(r);
		return NULL;
	}
	return r;
}

void kt_hrepo_close(struct kt_hrepo *r)
{
	if (!r)
		return;
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	git_repository_free(r->repo);
	cJSON_Delete(r->known);
	free(r);
	git_libgit2_shutdown();
}

/* HEAD's commit, or NULL (no error) on a repository with no commit yet */
static int head_commit(struct kt_hrepo *r, git_commit **out, struct kt_err *err)
{
	git_reference *head = NULL;
	git_object *obj = NULL;
	int rc;

	*out = NULL;
	rc = git_repository_head(&head, r->repo);
	if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND)
		return 0;
	if (rc < 0)
		return git_fail(err, "cannot read HEAD");
	rc = git_reference_peel(&obj, head, GIT_OBJECT_COMMIT);
	git_reference_free(head);
	if (rc < 0)
		return git_fail(err, "cannot read HEAD");
	*out = (git_commit *)obj;
	return 0;
}

static void file_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "nodes/%s.yaml", name);
}

/* the blob id of nodes/NAME.yaml in commit c; false when it is not there */
static bool blob_of(git_commit *c, const char *name, git_oid *id)
{
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	char path[512];
	bool found;

	if (!c || git_commit_tree(&tree, c) < 0)
		return false;
	file_path(path, sizeof(path), name);
	found = git_tree_entry_bypath(&e, tree, path) == 0;
	if (found)
		git_oid_cpy(id, git_tree_entry_id(e));
	git_tree_entry_free(e);
	git_tree_free(tree);
	return found;
}

static cJSON *read_blob(struct kt_hrepo *r, const git_oid *id, const char *name,
			struct kt_err *err)
{
	git_blob *blob = NULL;
	char path[512];
	cJSON *doc;

	if (git_blob_lookup(&blob, r->repo, id) < 0) {
		git_fail(err, "cannot read a record");
		return NULL;
	}
	file_path(path, sizeof(path), name);
	if ((size_t)git_blob_rawsize(blob) > MAX_RECORD) {
		git_blob_free(blob);
		kt_error(err, "%s: record larger than 64 MiB", path);
		return NULL;
	}
	doc = kt_json_parse(path, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), err);
	git_blob_free(blob);
	return doc;
}

/*
 * The names of the nodes that ever had a commit, from one walk of the
 * history reading commit messages only ("NAME: ..." is every commit's first
 * line), so that a node coming back is told from a new one without reading
 * a tree per commit.  Kept up to date by kt_hrepo_commit.
 */
static int load_known(struct kt_hrepo *r)
{
	git_revwalk *walk = NULL;
	git_oid id;

	r->known = cJSON_CreateObject();
	if (!r->known)
		return -1;
	if (git_revwalk_new(&walk, r->repo) < 0 || git_revwalk_push_head(walk) < 0) {
		git_revwalk_free(walk);
		return 0; /* no commit yet */
	}
	while (git_revwalk_next(&id, walk) == 0) {
		git_commit *c = NULL;
		const char *msg, *colon;
		char name[256];

		if (git_commit_lookup(&c, r->repo, &id) < 0)
			continue;
		msg = git_commit_summary(c);
		colon = msg ? strchr(msg, ':') : NULL;
		if (colon && (size_t)(colon - msg) < sizeof(name)) {
			memcpy(name, msg, (size_t)(colon - msg));
			name[colon - msg] = '\0';
			if (!kt_json_get(r->known, name))
				cJSON_AddTrueToObject(r->known, name);
		}
		git_commit_free(c);
	}
	git_revwalk_free(walk);
	return 0;
}

int kt_hrepo_read(struct kt_hrepo *r, const char *name, cJSON **rec, bool *known,
		  struct kt_err *err)
{
	git_commit *head = NULL;
	git_oid id;
	int rc = 0;

	*rec = NULL;
	if (known)
		*known = false;
	if (head_commit(r, &head, err) < 0)
		return -1;
	if (blob_of(head, name, &id)) {
		*rec = read_blob(r, &id, name, err);
		rc = *rec ? 0 : -1;
		if (known)
			*known = true;
	} else if (known && head) {
		if (!r->known && load_known(r) < 0)
			rc = kt_error(err, "out of memory");
		*known = kt_json_get(r->known, name) != NULL;
	}
	git_commit_free(head);
	return rc;
}

/* the tree of parent (may be NULL) with nodes/NAME.yaml set to blob or removed */
static int new_tree(struct kt_hrepo *r, git_commit *parent, const char *name,
		    const git_oid *blob, git_oid *out)
{
	git_tree *root = NULL, *nodes = NULL;
	git_treebuilder *tb = NULL, *rb = NULL;
	const git_tree_entry *e;
	char file[300];
	git_oid nodes_id;
	int rc = -1;

	snprintf(file, sizeof(file), "%s.yaml", name);
	if (parent && git_commit_tree(&root, parent) < 0)
		goto out;
	e = root ? git_tree_entry_byname(root, "nodes") : NULL;
	if (e && git_tree_lookup(&nodes, r->repo, git_tree_entry_id(e)) < 0)
		goto out;
	if (git_treebuilder_new(&tb, r->repo, nodes) < 0 ||
	    git_treebuilder_new(&rb, r->repo, root) < 0)
		goto out;
	if (blob ? git_treebuilder_insert(NULL, tb, file, blob, GIT_FILEMODE_BLOB) < 0
		 : git_treebuilder_get(tb, file) && git_treebuilder_remove(tb, file) < 0)
		goto out;
	if (git_treebuilder_entrycount(tb) == 0) {
		if (git_treebuilder_get(rb, "nodes") && git_treebuilder_remove(rb, "nodes") < 0)
			goto out;
	} else if (git_treebuilder_write(&nodes_id, tb) < 0 ||
		   git_treebuilder_insert(NULL, rb, "nodes", &nodes_id, GIT_FILEMODE_TREE) < 0) {
		goto out;
	}
	rc = git_treebuilder_write(out, rb);
out:
	git_treebuilder_free(rb);
	git_treebuilder_free(tb);
	git_tree_free(nodes);
	git_tree_free(root);
	return rc;
}

/* the work tree's copy of nodes/NAME.yaml as HEAD has it */
static int update_work_tree(struct kt_hrepo *r, const char *name, struct kt_err *err)
{
	git_checkout_options opts;
	char path[512];
	char *paths[] = { path };

	if (git_repository_is_bare(r->repo))
		return 0;
	file_path(path, sizeof(path), name);
	git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
	opts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
	opts.paths.strings = paths;
	opts.paths.count = 1;
	if (git_checkout_head(r->repo, &opts) < 0)
		return git_fail(err, "cannot update the work tree");
	return 0;
}

/* what libgit2 trims from both ends of a name (its \"crud\") */
static bool git_crud(unsigned char c)
{
	return c <= ' ' || strchr(".,:;<>\"\\'", c);
}

/*
 * A field manager as a git name: the API allows '<', '>', control characters
 * and names of spaces or dots, which libgit2 refuses; they become '?', and a
 * name with nothing left once trimmed is "unknown".  True when it changed.
 */
static bool git_name(char *out, size_t size, const char *manager)
{
	bool left = false;

	kt_plain_text(out, size, manager);
	for (char *p = out; *p; p++) {
		if (*p == '<' || *p == '>')
			*p = '?';
		left = left || !git_crud((unsigned char)*p);
	}
	if (!left)
		snprintf(out, size, "unknown");
	return strcmp(out, manager) != 0;
}

int kt_hrepo_commit(struct kt_hrepo *r, const char *name, const char *text,
		    const char *author, int64_t when_us, int64_t now_us, const char *message,
		    struct kt_err *err)
{
	git_commit *head = NULL;
	git_tree *tree = NULL;
	git_signature *who = NULL, *by = NULL;
	git_oid blob, tree_id, commit_id;
	char email[320], who_name[300], raw[300];
	char *full = NULL;
	const git_commit *parents[1];
	int rc = -1;

	if (head_commit(r, &head, err) < 0)
		return -1;
	/* the manager as it is stays in the message, for attribution */
	if (git_name(who_name, sizeof(who_name), author)) {
		kt_plain_text(raw, sizeof(raw), author);
		if (asprintf(&full, "%s\nField manager: %s\n", message, raw) < 0) {
			git_commit_free(head);
			return kt_error(err, "out of memory");
		}
		message = full;
	}
	author = who_name;
	snprintf(email, sizeof(email), "%s@node-history", author);
	if ((text && git_blob_create_from_buffer(&blob, r->repo, text, strlen(text)) < 0) ||
	    new_tree(r, head, name, text ? &blob : NULL, &tree_id) < 0 ||
	    git_tree_lookup(&tree, r->repo, &tree_id) < 0 ||
	    git_signature_new(&who, author, email, (git_time_t)(when_us / 1000000), 0) < 0 ||
	    git_signature_new(&by, "node-history", "node-history@node-history",
			      (git_time_t)(now_us / 1000000), 0) < 0) {
		git_fail(err, "cannot write a commit");
		goto out;
	}
	parents[0] = head;
	if (git_commit_create(&commit_id, r->repo, "HEAD", who, by, NULL, message, tree,
			      head ? 1 : 0, parents) < 0) {
		git_fail(err, "cannot write a commit");
		goto out;
	}
	if (r->known && !kt_json_get(r->known, name))
		cJSON_AddTrueToObject(r->known, name);
	rc = update_work_tree(r, name, err);
out:
	free(full);
	git_signature_free(by);
	git_signature_free(who);
	git_tree_free(tree);
	git_commit_free(head);
	return rc;
}

cJSON *kt_hrepo_names(struct kt_hrepo *r, struct kt_err *err)
{
	git_commit *head = NULL;
	git_tree *root = NULL, *nodes = NULL;
	git_tree_entry *e = NULL;
	cJSON *names = cJSON_CreateArray();

	if (!names || head_commit(r, &head, err) < 0)
		goto fail;
	if (!head)
		return names;
	if (git_commit_tree(&root, head) < 0)
		goto git;
	if (git_tree_entry_bypath(&e, root, "nodes") == 0 &&
	    git_tree_lookup(&nodes, r->repo, git_tree_entry_id(e)) < 0)
		goto git;
	for (size_t i = 0; nodes && i < git_tree_entrycount(nodes); i++) {
		const char *file = git_tree_entry_name(git_tree_entry_byindex(nodes, i));
		size_t len = strlen(file);
		char name[256];

		if (len <= 5 || len - 5 >= sizeof(name) || strcmp(file + len - 5, ".yaml"))
			continue;
		memcpy(name, file, len - 5);
		name[len - 5] = '\0';
		if (!cJSON_AddItemToArray(names, cJSON_CreateString(name)))
			goto fail;
	}
	goto out;
git:
	git_fail(err, "cannot read HEAD's tree");
fail:
	cJSON_Delete(names);
	names = NULL;
out:
	git_tree_free(nodes);
	git_tree_entry_free(e);
	git_tree_free(root);
	git_commit_free(head);
	return names;
}

#define PACKED_REF "refs/node-history/packed"

/*
 * Makes the packs durable before their loose copies go, as git does: each
 * pack and index, then the directory that names them.  libgit2 writes them
 * without fsync by default.
 */
static int sync_packs(struct kt_hrepo *r)
{
	char dir[4096];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	snprintf(dir, sizeof(dir), "%sobjects/pack", git_repository_path(r->repo));
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		int fd;

		if (n < 5 || (strcmp(e->d_name + n - 5, ".pack") && strcmp(e->d_name + n - 4, ".idx")))
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fsync(fd) < 0)
			rc = -1;
		if (fd >= 0)
			close(fd);
	}
	if (fsync(dirfd(d)) < 0)
		rc = -1;
	closedir(d);
	return rc;
}

/* deletes the loose objects that the packs now hold */
static int prune_loose(struct kt_hrepo *r)
{
	char dir[4096], hex[GIT_OID_HEXSZ + 1];
	const char *objects = git_repository_path(r->repo);
	git_odb_backend *packs = NULL;
	git_odb *odb = NULL;
	int rc = -1;

	snprintf(dir, sizeof(dir), "%sobjects", objects);
	if (git_odb_new(&odb) < 0 || git_odb_backend_pack(&packs, dir) < 0 ||
	    git_odb_add_backend(odb, packs, 1) < 0) {
		if (packs && !odb)
			packs->free(packs);
		goto out;
	}
	for (int i = 0; i < 256; i++) {
		DIR *d;
		struct dirent *e;

		snprintf(dir, sizeof(dir), "%sobjects/%02x", objects, i);
		d = opendir(dir);
		while (d && (e = readdir(d))) {
			git_oid id;

			if (strlen(e->d_name) != GIT_OID_HEXSZ - 2)
				continue;
			snprintf(hex, sizeof(hex), "%02x%s", i, e->d_name);
			if (git_oid_fromstr(&id, hex) == 0 && git_odb_exists(odb, &id))
				unlinkat(dirfd(d), e->d_name, 0);
		}
		if (d)
			closedir(d);
	}
	rc = 0;
out:
	git_odb_free(odb);
	return rc;
}

int kt_hrepo_pack(struct kt_hrepo *r, long min_commits, struct kt_err *err)
{
	git_packbuilder *pb = NULL;
	git_revwalk *walk = NULL;
	git_reference *ref = NULL;
	git_oid head, packed, id;
	long n = 0;
	int rc = -1;

	if (git_reference_name_to_id(&head, r->repo, "HEAD") < 0)
		return 0; /* nothing committed yet */
	if (git_packbuilder_new(&pb, r->repo) < 0 || git_revwalk_new(&walk, r->repo) < 0 ||
	    git_revwalk_push(walk, &head) < 0)
		goto fail;
	/* what an earlier pack holds is not packed again */
	if (git_reference_name_to_id(&packed, r->repo, PACKED_REF) == 0 &&
	    git_revwalk_hide(walk, &packed) < 0)
		goto fail;
	if (min_commits > 0) {
		while (n < min_commits && git_revwalk_next(&id, walk) == 0)
			n++;
		if (n < min_commits) {
			rc = 0;
			goto out;
		}
		git_revwalk_reset(walk);
		if (git_revwalk_push(walk, &head) < 0 ||
		    (git_reference_name_to_id(&packed, r->repo, PACKED_REF) == 0 &&
		     git_revwalk_hide(walk, &packed) < 0))
			goto fail;
	}
	if (git_packbuilder_insert_walk(pb, walk) < 0)
		goto fail;
	if (git_packbuilder_object_count(pb) > 0 &&
	    git_packbuilder_write(pb, NULL, 0, NULL, NULL) < 0)
		goto fail;
	if (git_reference_create(&ref, r->repo, PACKED_REF, &head, 1, "node-history: packed") < 0)
		goto fail;
	if (sync_packs(r) < 0) {
		rc = kt_error(err, "cannot sync the pack to disk: %s", strerror(errno));
		goto out;
	}
	rc = prune_loose(r) < 0 ? git_fail(err, "cannot prune loose objects") : 0;
	goto out;
fail:
	git_fail(err, "cannot pack the repository");
out:
	git_reference_free(ref);
	git_revwalk_free(walk);
	git_packbuilder_free(pb);
	return rc;
}

/* one commit of the walk: its changes to the node, if any, to fn */
static int log_commit(struct kt_hrepo *r, git_commit *c, const char *name, bool *known,
		      kt_hrepo_log_fn *fn, void *arg, struct kt_err *err)
{
	git_commit *parent = NULL;
	git_oid now_id, was_id;
	bool now, was;
	cJSON *a = NULL, *b = NULL, *changes = NULL;
	/* when node-history saw it: the author date of older repositories
	 * may be a time the node wrote itself */
	int64_t seen_us = (int64_t)git_commit_committer(c)->when.time * 1000000;
	int rc = -1;

	now = blob_of(c, name, &now_id);
	if (git_commit_parentcount(c) > 0 && git_commit_parent(&parent, c, 0) < 0)
		return git_fail(err, "cannot read a commit");
	was = blob_of(parent, name, &was_id);
	git_commit_free(parent);
	if (now == was && (!now || git_oid_equal(&now_id, &was_id)))
		return 0;
	if ((was && !(a = read_blob(r, &was_id, name, err))) ||
	    (now && !(b = read_blob(r, &now_id, name, err))))
		goto out;
	changes = kt_history_changes(a, b, *known);
	if (!changes) {
		kt_error(err, "out of memory");
		goto out;
	}
	*known = true;
	rc = fn(seen_us, git_commit_author(c)->name, changes, arg) ? 1 : 0;
out:
	cJSON_Delete(changes);
	cJSON_Delete(b);
	cJSON_Delete(a);
	return rc;
}

int kt_hrepo_log(struct kt_hrepo *r, const char *name, int64_t since_us, kt_hrepo_log_fn *fn,
		 void *arg, struct kt_err *err)
{
	git_revwalk *walk = NULL;
	git_commit *head = NULL;
	git_oid id;
	bool known = false;
	int rc = 0;

	if (head_commit(r, &head, err) < 0)
		return -1;
	if (!head)
		return 0;
	git_commit_free(head);
	if (git_revwalk_new(&walk, r->repo) < 0 || git_revwalk_push_head(walk) < 0 ||
	    git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE) < 0) {
		git_revwalk_free(walk);
		return git_fail(err, "cannot walk the history");
	}
	while (rc == 0 && git_revwalk_next(&id, walk) == 0) {
		git_commit *c = NULL;
		git_oid blob;

		if (git_commit_lookup(&c, r->repo, &id) < 0) {
			rc = git_fail(err, "cannot read a commit");
			break;
		}
		if ((int64_t)git_commit_committer(c)->when.time * 1000000 >= since_us)
			rc = log_commit(r, c, name, &known, fn, arg, err);
		else
			known = known || blob_of(c, name, &blob);
		git_commit_free(c);
	}
	git_revwalk_free(walk);
	return rc > 0 ? 0 : rc;
}

/* --------------------------------------------------------------- recorder */

struct kt_hrec {
	struct kt_hrepo *repo;
	bool keep;
	cJSON *last; /* name -> {"r": record or null, "k": ever committed} */
};

struct kt_hrec *kt_hrec_new(struct kt_hrepo *repo, bool keep_heartbeats, struct kt_err *err)
{
	struct kt_hrec *h = calloc(1, sizeof(*h));

	if (h)
		h->last = cJSON_CreateObject();
	if (!h || !h->last) {
		kt_hrec_free(h);
		kt_error(err, "out of memory");
		return NULL;
	}
	h->repo = repo;
	h->keep = keep_heartbeats;
	return h;
}

void kt_hrec_free(struct kt_hrec *h)
{
	if (!h)
		return;
	cJSON_Delete(h->last);
	free(h);
}

/* the cache entry of name, read from HEAD the first time */
static cJSON *last_of(struct kt_hrec *h, const char *name, struct kt_err *err)
{
	cJSON *e = kt_json_get_object(h->last, name), *rec = NULL;
	bool known = false;

	if (e)
		return e;
	if (kt_hrepo_read(h->repo, name, &rec, &known, err) < 0)
		return NULL;
	e = cJSON_CreateObject();
	if (!e || !cJSON_AddItemToObject(e, "r", rec ? rec : cJSON_CreateNull()) ||
	    !cJSON_AddBoolToObject(e, "k", known) || kt_json_set(h->last, name, e) < 0) {
		kt_error(err, "out of memory");
		return NULL;
	}
	return e;
}

static cJSON *commit_line(const char *name, const char *author, const char *msg)
{
	cJSON *line = cJSON_CreateObject();
	size_t first = strcspn(msg, "\n");
	char *summary = strndup(msg, first);

	if (!line || !summary || !cJSON_AddStringToObject(line, "node", name) ||
	    !cJSON_AddStringToObject(line, "author", author) ||
	    !cJSON_AddStringToObject(line, "summary", summary)) {
		cJSON_Delete(line);
		line = NULL;
	}
	free(summary);
	return line;
}

int kt_hrec_observe(struct kt_hrec *h, const char *name, const cJSON *node, int64_t now_us,
		    cJSON **commit, struct kt_err *err)
{
	cJSON *e, *rec = NULL, *changes = NULL, *old;
	const char *author = NULL;
	char *text = NULL, *msg = NULL;
	int rc = -1;

	*commit = NULL;
	e = last_of(h, name, err);
	if (!e)
		return -1;
	old = kt_json_get(e, "r");
	if (cJSON_IsNull(old))
		old = NULL;
	if (node && !(rec = kt_history_record(node, h->keep)))
		goto oom;
	changes = kt_history_changes(old, rec, cJSON_IsTrue(kt_json_get(e, "k")));
	if (!changes)
		goto oom;
	if (cJSON_GetArraySize(changes) == 0) {
		rc = 0;
		goto out;
	}
	author = node ? kt_history_author(node, changes) : NULL;
	author = author ? author : "unknown";
	msg = kt_history_message(name, changes);
	if (!msg || (rec && !(text = kt_history_render(rec))))
		goto oom;
	/* dated when seen: a node's own times are data in the record, never
	 * the date --since filters on */
	if (kt_hrepo_commit(h->repo, name, text, author, now_us, now_us, msg, err) < 0)
		goto out;
	*commit = commit_line(name, author, msg);
	/* kt_json_set takes the record, even when it fails */
	if (kt_json_set(e, "r", rec ? rec : cJSON_CreateNull()) < 0) {
		rec = NULL;
		goto oom;
	}
	rec = NULL;
	if (!*commit || kt_json_set(e, "k", cJSON_CreateTrue()) < 0)
		goto oom;
	rc = 1;
	goto out;
oom:
	kt_error(err, "out of memory");
out:
	if (rc < 0) {
		cJSON_Delete(*commit);
		*commit = NULL;
	}
	free(msg);
	free(text);
	cJSON_Delete(changes);
	cJSON_Delete(rec);
	return rc;
}
