/* SPDX-License-Identifier: Apache-2.0 */
/* history: a node's status as git history: what to keep, how to show it, who changed it */
#ifndef KT_HISTORY_H
#define KT_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"

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

/* the repository and the recorder (libgit2) are in history_git.h, built into
 * libkt-git.a, which only node-history links */

#endif
