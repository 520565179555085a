/* SPDX-License-Identifier: Apache-2.0 */
/* history_git: node-history's repository and recorder (libgit2); in libkt-git.a, not libkt.a */
#ifndef KT_HISTORY_GIT_H
#define KT_HISTORY_GIT_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"
#include "history.h"

/*
 * A repository that records nodes, one file nodes/NAME.yaml each, held by
 * one recorder at a time.  kt_hrepo_open creates DIR as a git repository
 * when it is missing, and with lock takes DIR/.git/node-history.lock (flock;
 * the holder's pid inside): when another process holds it, NULL with a
 * KT_ERR_INPUT error naming that pid.  kt_hrepo_close releases the lock.
 */
struct kt_hrepo;

struct kt_hrepo *kt_hrepo_open(const char *dir, bool lock, struct kt_err *err);
void kt_hrepo_close(struct kt_hrepo *r);

/*
 * The record of node name at HEAD, read back from its file: *rec is the
 * caller's (cJSON_Delete), NULL when the file is not there; *known tells
 * whether the file was there in any earlier commit (so a node that comes
 * back is "created", not "first seen").  known may be NULL.
 */
int kt_hrepo_read(struct kt_hrepo *r, const char *name, cJSON **rec, bool *known,
		  struct kt_err *err);

/*
 * Commits text as nodes/NAME.yaml (text NULL: removes the file) on HEAD's
 * branch, with author "AUTHOR <AUTHOR@node-history>" at when_us, the
 * committer node-history at now_us, and message; then brings the file in
 * the work tree up to date.  The branch moves only once the commit is
 * written, so a crash before leaves HEAD as it was.
 */
int kt_hrepo_commit(struct kt_hrepo *r, const char *name, const char *text,
		    const char *author, int64_t when_us, int64_t now_us, const char *message,
		    struct kt_err *err);

/*
 * A recorder: a repository and, in memory, each node's record as last
 * committed, so that a heartbeat costs a comparison and not a read of the
 * repository.  repo is borrowed and must outlive it.  kt_hrec_free frees
 * what it holds (NULL is fine).
 */
struct kt_hrec;

struct kt_hrec *kt_hrec_new(struct kt_hrepo *repo, bool keep_heartbeats, struct kt_err *err);
void kt_hrec_free(struct kt_hrec *h);

/*
 * Node name is now node (NULL: it is gone), seen at now_us.  When its record
 * differs from the last one committed, commits it (kt_hrepo_commit, with
 * the message, author and time from the functions above) and returns 1
 * with *commit set to {"node","author","summary"} (the caller's:
 * cJSON_Delete); 0 when nothing changed; -1 with err.
 */
int kt_hrec_observe(struct kt_hrec *h, const char *name, const cJSON *node, int64_t now_us,
		    cJSON **commit, struct kt_err *err);

/*
 * Moves the objects written since the last pack (refs/node-history/packed
 * marks it) into a pack and deletes their loose copies, as `git gc` would:
 * a recorder writes thousands of small loose files an hour that deltas
 * shrink some thirty times.  Does nothing when fewer than min_commits were
 * made since.  node-history packs every KT_HREC_PACK_EVERY commits and at
 * exit when KT_HREC_PACK_AT_EXIT were made.
 */
int kt_hrepo_pack(struct kt_hrepo *r, long min_commits, struct kt_err *err);
#define KT_HREC_PACK_EVERY 1000
#define KT_HREC_PACK_AT_EXIT 100

/* the names of the nodes HEAD has a file for, as a JSON array of strings
 * (the caller's: cJSON_Delete); NULL with err on failure */
cJSON *kt_hrepo_names(struct kt_hrepo *r, struct kt_err *err);

/* called for each commit that changed nodes/NAME.yaml, oldest first: changes
 * as kt_history_changes gives them, borrowed; a nonzero return stops the walk
 * (kt_hrepo_log then returns 0) */
typedef int kt_hrepo_log_fn(int64_t when_us, const char *author, const cJSON *changes,
			    void *arg);

/* the history of node name from since_us (0: all) */
int kt_hrepo_log(struct kt_hrepo *r, const char *name, int64_t since_us, kt_hrepo_log_fn *fn,
		 void *arg, struct kt_err *err);

#endif
