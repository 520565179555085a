/* SPDX-License-Identifier: Apache-2.0 */
/* fsio: whole-file reads, locked and atomically replaced state files */
#ifndef KT_FSIO_H
#define KT_FSIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kt_err.h"

/*
 * The one whole-file reader: path (at most max bytes) into *buf, which the
 * caller frees; NUL-terminated, *len without the NUL.  what (may be NULL)
 * names the file in messages: "cannot read kubeconfig '/x': ..." with it,
 * "cannot open '/x': ..." without.  A file that cannot be opened or is too
 * large is KT_ERR_INPUT; a read error or out of memory KT_ERR_FAIL.
 */
int kt_file_read(const char *path, const char *what, size_t max, char **buf, size_t *len,
		 struct kt_err *err);

/*
 * Writes data to path atomically: a temporary file in the same directory,
 * fsync, rename over path, fsync of the directory.  Readers see the old or
 * the new content, never a mix; a crash leaves the old file intact.  The
 * file gets mode less the umask, as open(2) would give it (0600 for a file
 * that holds secrets, 0666 for one that does not); the temporary file is
 * never readable more widely than that.
 */
int kt_file_replace(const char *path, const char *data, size_t len, mode_t mode,
		    struct kt_err *err);

/*
 * The same without either fsync: readers still see the old or the new
 * content, never a mix, but a machine's crash may leave the file empty.
 * For copies that can be made again (a watch's store: the next start lists
 * again), written too often for two disk flushes each.
 */
int kt_file_replace_nosync(const char *path, const char *data, size_t len, mode_t mode,
			   struct kt_err *err);

/*
 * The names in directory dir that keep() accepts (every name but those
 * starting with '.' when keep is NULL), sorted in byte order, into *names
 * (*n of them; kt_dir_names_free frees them).  -1 with err when dir cannot
 * be read (KT_ERR_INPUT, "cannot read WHAT 'dir': ..."), or out of memory.
 */
int kt_dir_names(const char *dir, const char *what, bool (*keep)(const char *name), char ***names,
		 size_t *n, struct kt_err *err);
void kt_dir_names_free(char **names, size_t n);

/*
 * What a file is now, to tell when it was replaced or rewritten: device,
 * inode, size and modification time.  The one check behind every file read
 * again when it changes (a token file, a client certificate pair, a server's
 * certificate).  kt_file_id_get fills id and returns 0, or sets every field
 * to -1 and returns -1 (errno kept) when path is NULL or cannot be stat'ed.
 */
struct kt_file_id {
	long long dev, ino, size, mtime_ns;
};
int kt_file_id_get(const char *path, struct kt_file_id *id);
bool kt_file_id_same(const struct kt_file_id *a, const struct kt_file_id *b);

/*
 * An exclusive lock held for as long as a state file is in use: flock on
 * "PATH.lock" (created 0600 if missing, never through a symbolic link), so
 * concurrent users serialize while the file itself is replaced by rename.
 * kt_lock_release unlocks and closes.
 */
struct kt_lock {
	int fd;
};
int kt_lock_acquire(struct kt_lock *lk, const char *path, struct kt_err *err);
void kt_lock_release(struct kt_lock *lk);

#endif
