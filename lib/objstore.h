/* SPDX-License-Identifier: Apache-2.0 */
/* objstore: a followed collection kept as a directory, one file per object under its uid */
#ifndef KT_OBJSTORE_H
#define KT_OBJSTORE_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * A store is a directory DIR holding DIR/<metadata.uid>/<FILE> for each
 * object: the object as last reported, one compact JSON document.  The
 * directory of an object is shared: other files in it belong to others, and
 * the store touches only FILE.  Nothing here removes a file.
 */

#define KT_OBJSTORE_FILE    "object.json" /* FILE when none is given */
#define KT_OBJSTORE_UID_MAX 64		  /* the longest uid that names a directory */

/*
 * 0 when obj can be stored and named on one line: its uid is 1 to
 * KT_OBJSTORE_UID_MAX ASCII letters, digits and '-', not starting with '-',
 * and its namespace and name hold no control character, space or '/'.
 * Otherwise -1 with err (KT_ERR_INPUT): which object ("pod/web (default)")
 * and what is wrong, on one line (control characters of the object's own
 * strings shown as '?', no tab, no newline).
 */
int kt_objstore_check(const cJSON *obj, struct kt_err *err);

/*
 * 0 when name can be FILE: not empty, no '/', not "." or "..", no control
 * character.  -1 with err (KT_ERR_INPUT) saying what is wrong.
 */
int kt_objstore_check_file(const char *name, struct kt_err *err);

/*
 * Writes obj (borrowed; kt_objstore_check passed) to dir/<uid>/<file>: the
 * directory is made when missing (mode 0700 less the umask), the file is
 * written whole under a temporary name beside it and renamed over
 * (kt_file_replace_nosync, mode 0600 less the umask: no fsync, the next
 * start lists again), so a reader sees the old or the new object, never a
 * part.  -1 with err (KT_ERR_FAIL) naming the path
 * and strerror when a step fails.
 */
int kt_objstore_write(const char *dir, const char *file, const cJSON *obj, struct kt_err *err);

/*
 * Called by kt_objstore_load for each dir/<entry>/<file>, entries in byte
 * order.  path is the file (borrowed).  obj (taken: the callee frees it) is
 * the object when the file parses as a JSON object whose metadata.uid is the
 * entry's name; otherwise obj is NULL and bad says why (borrowed).  Return 0
 * to go on, -1 to stop the load (it then returns -1, err untouched).
 */
typedef int kt_objstore_load_fn(const char *path, cJSON *obj, const struct kt_err *bad, void *arg);

/*
 * The objects the store holds: every dir/<entry>/<file>, entries whose
 * name starts with '.' and entries without file left out, each file read
 * up to max bytes (a larger one is bad).  0 when done;
 * -1 with err (KT_ERR_INPUT, naming dir) when dir cannot be read, or when fn
 * stopped it.
 */
int kt_objstore_load(const char *dir, const char *file, size_t max, kt_objstore_load_fn *fn,
		     void *arg, struct kt_err *err);

/*
 * Whether a and b (borrowed) are the same object but for what the kubelet's
 * pod config source ignores when it decides a pod changed: status,
 * metadata.resourceVersion, metadata.managedFields, kind and apiVersion.
 * Compared as Go's DeepEqual (kt_go_equal).  false when out of memory.
 */
bool kt_objstore_same_spec(const cJSON *a, const cJSON *b);

#endif
