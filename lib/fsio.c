/* SPDX-License-Identifier: Apache-2.0 */
/* fsio: whole-file reads, atomic replacement, lock files */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"

int kt_file_read(const char *path, const char *what, size_t max, char **buf, size_t *len,
		 struct kt_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, n = 0;
	char *b = NULL, name[sizeof(err->msg)];
	int rc = -1;

	/* "kubeconfig '/x'" or "'/x'": what names the file in every message */
	snprintf(name, sizeof(name), "%s%s'%s'", what ? what : "", what ? " " : "", path);
	if (fd < 0) {
		int e = errno;

		if (what)
			return kt_error_file(err, KT_ERR_INPUT, "cannot read %s: %s", name,
					     strerror(e));
		return kt_error_file(err, KT_ERR_INPUT, "cannot open %s: %s", name, strerror(e));
	}
	b = malloc(cap + 1);
	for (;;) {
		ssize_t r;

		if (!b) {
			kt_error(err, "cannot read %s: out of memory", name);
			goto out;
		}
		if (n == cap) {
			char *nb;

			if (cap > max)
				break;
			cap *= 2;
			nb = realloc(b, cap + 1);
			if (!nb) {
				kt_error(err, "cannot read %s: out of memory", name);
				goto out;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			kt_error_file(err, KT_ERR_FAIL, "cannot read %s: %s", name,
				      strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		kt_error_kind(err, KT_ERR_INPUT, "%s is larger than %zu bytes", name, max);
		goto out;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	b = NULL;
	rc = 0;
out:
	free(b);
	close(fd);
	return rc;
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t w = write(fd, data, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

static int replace(const char *path, const char *data, size_t len, mode_t mode, bool durable,
		   struct kt_err *err)
{
	char tmp[4096], dir[4096];
	int fd, dfd, e;
	mode_t mask = umask(0);

	umask(mask);

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= sizeof(tmp))
		return kt_error_file(err, KT_ERR_INPUT, "path too long: '%s'", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return kt_error(err, "cannot create a temporary file beside '%s': %s", path,
				strerror(errno));
	/* mkostemp made it 0600; widen it to what the caller allows, as
	 * creating the file with open(mode) would, before anyone can read it */
	if (fchmod(fd, mode & ~mask & 07777) < 0 || write_all(fd, data, len) < 0 ||
	    (durable && fsync(fd) < 0)) {
		e = errno;
		close(fd);
		unlink(tmp);
		return kt_error(err, "cannot write '%s': %s", tmp, strerror(e));
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		e = errno;
		unlink(tmp);
		return kt_error(err, "cannot replace '%s': %s", path, strerror(e));
	}
	if (!durable)
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

int kt_file_replace(const char *path, const char *data, size_t len, mode_t mode, struct kt_err *err)
{
	return replace(path, data, len, mode, true, err);
}

int kt_file_replace_nosync(const char *path, const char *data, size_t len, mode_t mode,
			   struct kt_err *err)
{
	return replace(path, data, len, mode, false, err);
}

int kt_lock_acquire(struct kt_lock *lk, const char *path, struct kt_err *err)
{
	char lpath[4096];

	lk->fd = -1;
	if ((size_t)snprintf(lpath, sizeof(lpath), "%s.lock", path) >= sizeof(lpath))
		return kt_error_file(err, KT_ERR_INPUT, "path too long: '%s'", path);
	/* never through a symbolic link: in a shared directory one could make
	 * us create or lock a file elsewhere */
	lk->fd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lk->fd < 0)
		return kt_error(err, "cannot open lock file '%s': %s", lpath, strerror(errno));
	while (flock(lk->fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = errno;

			close(lk->fd);
			lk->fd = -1;
			return kt_error(err, "cannot lock '%s': %s", lpath, strerror(e));
		}
	}
	return 0;
}

void kt_lock_release(struct kt_lock *lk)
{
	if (!lk || lk->fd < 0)
		return;
	flock(lk->fd, LOCK_UN);
	close(lk->fd);
	lk->fd = -1;
}

int kt_file_id_get(const char *path, struct kt_file_id *id)
{
	struct stat st;

	id->dev = id->ino = id->size = id->mtime_ns = -1;
	if (!path) {
		errno = ENOENT;
		return -1;
	}
	if (stat(path, &st) < 0)
		return -1;
	id->dev = (long long)st.st_dev;
	id->ino = (long long)st.st_ino;
	id->size = (long long)st.st_size;
	id->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	return 0;
}

bool kt_file_id_same(const struct kt_file_id *a, const struct kt_file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void kt_dir_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int kt_dir_names(const char *dir, const char *what, bool (*keep)(const char *name), char ***names,
		 size_t *n, struct kt_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL, **more;
	size_t k = 0, cap = 0;

	*names = NULL;
	*n = 0;
	if (!d)
		return kt_error_kind(err, KT_ERR_INPUT, "cannot read %s '%s': %s", what, dir,
				     strerror(errno));
	errno = 0;
	while ((e = readdir(d))) {
		if (keep ? !keep(e->d_name) : e->d_name[0] == '.')
			continue;
		if (k == cap) {
			cap = cap ? 2 * cap : 16;
			more = realloc(v, cap * sizeof(*v));
			if (!more)
				goto oom;
			v = more;
		}
		v[k] = strdup(e->d_name);
		if (!v[k])
			goto oom;
		k++;
		errno = 0;
	}
	if (errno) {
		int e2 = errno;

		closedir(d);
		kt_dir_names_free(v, k);
		return kt_error_kind(err, KT_ERR_INPUT, "cannot read %s '%s': %s", what, dir,
				     strerror(e2));
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof(*v), name_cmp);
	*names = v;
	*n = k;
	return 0;
oom:
	closedir(d);
	kt_dir_names_free(v, k);
	return kt_error(err, "out of memory");
}
