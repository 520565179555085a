/* SPDX-License-Identifier: Apache-2.0 */
/* history: a node's status as git history: what to keep, how to show it, who changed it */
#ifndef KT_HISTORY_H
#define KT_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "err.h"

/*
 * The pure half of node-history (no I/O, no clock): the record of a node
 * that goes into the repository, the changes between two records, the words
 * of a commit message and the field manager to blame.  lib/history_git.c is
 * the half that talks to libgit2; only it links libgit2.
 */

/*
 * A copy of node without what changes on every heartbeat (metadata
 * resourceVersion and managedFields, each condition's lastHeartbeatTime), or
 * the whole node with keep_heartbeats.  The caller frees it with cJSON_Delete;
 * NULL when out of memory.
 */
cJSON *kt_history_record(const cJSON *node, bool keep_heartbeats);

/*
 * The record as text for nodes/NAME.yaml: block YAML (kt_yaml_print) with
 * keys sorted, one scalar a line, so that `git diff` shows one changed field
 * as one changed line; the text reads back as the same document.  The caller frees it with free; NULL when out of memory.
 */
char *kt_history_render(const cJSON *record);

/*
 * The changes from old to new (either may be NULL: first seen, deleted) as
 * an array of change objects, in the order conditions, taints, labels, then
 * every other changed field:
 *   {"kind":"node","change":"seen"|"created"|"deleted"}
 *   {"kind":"condition","type":T,"from":S|null,"to":S|null,"reason":R,"message":M}
 *   {"kind":"taint","change":"added"|"removed","taint":"key=value:Effect"}
 *   {"kind":"label","key":K,"from":V|null,"to":V|null}
 *   {"kind":"field","path":"status.capacity.cpu","from":X|null,"to":Y|null}
 * Conditions appear only when their status changes (or they come or go);
 * their reason and message changes stay in "field" entries.  created tells a
 * node that existed before, was deleted and came back from a first sighting.
 * An empty array means nothing changed.  The caller frees the array; NULL
 * when out of memory.
 */
cJSON *kt_history_changes(const cJSON *old, const cJSON *new, bool created);

/*
 * The commit message for changes of node name: a first line in words
 * ("vk-1: Ready True -> False (KubeletNotReady: PLEG is not healthy)",
 * "vk-1: +taint node.kubernetes.io/unreachable:NoExecute", "vk-1: label
 * tier=gold removed"), shortened past about 100 columns with "and N more",
 * a blank line, then one line for every change.  The caller frees it.
 */
char *kt_history_message(const char *name, const cJSON *changes);

/* one change as the words of a message or log line ("Ready True -> False
 * (KubeletNotReady: ...)"); the caller frees it */
char *kt_history_change_text(const cJSON *change);

/*
 * The field manager that made the changes, read from node's
 * metadata.managedFields: of the entries whose fieldsV1 owns a changed field
 * (or a parent of it), the one with the latest time; else the latest entry of
 * all; NULL when the node has no managedFields.  Borrowed from node.
 */
const char *kt_history_author(const cJSON *node, const cJSON *changes);

/* ------------------------------------------------ the repository (libgit2) */

/*
 * A repository that records nodes, one file nodes/NAME.yaml each, held by
 * one recorder at a time.  kt_hrepo_open creates DIR as a git repository
 * when it is missing, and with lock takes DIR/.git/node-history.lock (flock;
 * the holder's pid inside): when another process holds it, NULL with a
 * KT_ERR_INPUT error naming that pid.  kt_hrepo_free releases the lock.
 */
struct kt_hrepo;

struct kt_hrepo *kt_hrepo_open(const char *dir, bool lock, struct kt_err *err);
void kt_hrepo_free(struct kt_hrepo *r);

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
