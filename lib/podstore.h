/* SPDX-License-Identifier: Apache-2.0 */
/* podstore: a pod worker state kept as a directory, a file per pod, and a journal */
#ifndef KT_PODSTORE_H
#define KT_PODSTORE_H

#include <stddef.h>

#include "kt_err.h"
#include "podworker.h"

/*
 * The layout of a state at PATH (every file 0600 less the umask):
 *   PATH.lock        the lock every user holds (lib/fsio), as before
 *   PATH/            the state, 0700
 *   PATH/node        the node-wide line (kt_podworker_node_text)
 *   PATH/pods/NAME   one pod's status line; NAME is its UID with every byte
 *                    outside [A-Za-z0-9._-] (and a leading '.') as %XX, cut
 *                    at 160 bytes and ended with ~ and a hash when longer
 *   PATH/journal     a commit not yet applied to the files above
 * A save that changes one file replaces it atomically (a temporary file in
 * PATH, fsync, rename).  One that changes more writes them all to the
 * journal (replaced atomically: the commit point), then each file, then
 * removes the journal; an open replays a journal left by a killed writer
 * first.  So a state has one pod's cost
 * per event, whatever the number of pods, and is never half written.
 *
 * A regular file at PATH is the single-file state earlier versions wrote:
 * an open converts it (PATH.new is built and synced, then PATH becomes
 * PATH.old and PATH.new becomes PATH, then PATH.old goes; an open finishes
 * or undoes a conversion that was cut short).  Nothing is created for a
 * state that is never saved.
 */
struct kt_podstore;

/*
 * Locks the state at path, recovers it (journal, conversion) and sets *pw
 * to a state that reads its pods from the directory as events need them.
 * Caller owns both (kt_podworker_free first, then kt_podstore_close).
 * -1 with err: kind KT_ERR_INPUT when the state is damaged (the message
 * names the file and line; nothing was changed), KT_ERR_FAIL otherwise.
 */
int kt_podstore_open(const char *path, struct kt_podstore **ps, struct kt_podworker **pw,
		     struct kt_err *err);

/*
 * Commits what changed in pw since the open or the last save; *files (may
 * be NULL) is the number of files written or removed.  On failure the
 * state on disk is the old or the new one, never a mix.
 */
int kt_podstore_save(struct kt_podstore *ps, struct kt_podworker *pw, size_t *files,
		     struct kt_err *err);

/* unlocks and frees; accepts NULL */
void kt_podstore_close(struct kt_podstore *ps);

#endif
