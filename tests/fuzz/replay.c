/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay: runs a harness over files without libFuzzer, so every build (gcc
 * too) checks the corpus and old crashes stay fixed.  Each file runs in its
 * own child: a crash, a sanitizer report, a leak (LeakSanitizer reports at
 * the child's exit) or a hang fails that file's TAP line and the others
 * still run.  Arguments: files or directories; none means the harness's
 * corpus (FUZZ_CORPUS, set by the makefile).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"
#include "../unit/tap.h"

/* one input may take this long (a sanitizer build on a loaded machine) */
#define REPLAY_TIMEOUT_S 60

/* the whole file in a buffer of exactly its size, so an over-read is caught */
static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc(n ? (size_t)n : 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*size = (size_t)n;
	}
	fclose(f);
	return buf;
}

static void run_child(const char *path)
{
	size_t size = 0;
	uint8_t *data = slurp(path, &size);

	if (!data) {
		fprintf(stderr, "replay: cannot read '%s': %s\n", path, strerror(errno));
		_exit(3);
	}
	alarm(REPLAY_TIMEOUT_S);
	LLVMFuzzerTestOneInput(data, size);
	free(data);
	exit(0); /* exit, not _exit: LeakSanitizer checks at exit */
}

static void replay_file(const char *path, const char *name)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		run_child(path);
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (pid > 0 && WIFSIGNALED(status))
			printf("# %s: killed by signal %d%s\n", path, WTERMSIG(status),
			       WTERMSIG(status) == SIGALRM ? " (timed out)" : "");
		else if (pid > 0)
			printf("# %s: exit status %d\n", path, WEXITSTATUS(status));
		else
			printf("# %s: fork: %s\n", path, strerror(errno));
	}
	tap_ok(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, name);
}

static int skip_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static void replay(const char *path)
{
	struct dirent **list;
	const char *base;
	struct stat st;
	int n;

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		replay_file(path, path);
		return;
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	n = scandir(path, &list, skip_dot, alphasort);
	if (n < 0) {
		printf("# %s: %s\n", path, strerror(errno));
		tap_ok(false, path);
		return;
	}
	for (int i = 0; i < n; i++) {
		char file[4096], name[512];

		snprintf(file, sizeof(file), "%s/%s", path, list[i]->d_name);
		snprintf(name, sizeof(name), "%s/%s", base, list[i]->d_name);
		replay_file(file, name);
		free(list[i]);
	}
	free(list);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		replay(FUZZ_CORPUS);
	for (int i = 1; i < argc; i++)
		replay(argv[i]);
	if (tap_n == 0)
		tap_ok(false, "the corpus has at least one file");
	return tap_done();
}
