/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/runcost: what a command costs, several commands measured the same way
 * in one run.  Each command is started with posix_spawn, its output thrown
 * away, and waited for with wait4: wall time from the spawn to the reap, CPU
 * time (user+system) and peak RSS from the child's own rusage.  The commands
 * take turns, round after round, so a change in the machine's load falls on
 * all of them alike.
 *
 * usage: runcost ROUNDS LABEL[:N] CMD [ARG...] --- LABEL[:N] CMD [ARG...] --- ...
 *   N (default ROUNDS) runs that command only in the first N rounds.
 * Prints one line per command: label runs wall_ms_median cpu_ms_median
 * cpu_ms_mean maxrss_kib (the largest of its runs).  Exits 1 if a run fails.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct cmd {
	char *label;
	char **argv;
	int runs, done;
	double *wall, *cpu;
	long maxrss;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int run_once(struct cmd *c)
{
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	double t0, t1;
	pid_t pid;
	int status;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	t0 = now_ms();
	if (posix_spawnp(&pid, c->argv[0], &fa, NULL, c->argv, environ) != 0) {
		fprintf(stderr, "runcost: cannot start %s\n", c->argv[0]);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	if (wait4(pid, &status, 0, &ru) != pid)
		return -1;
	t1 = now_ms();
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "runcost: %s failed (status %d)\n", c->label, status);
		return -1;
	}
	c->wall[c->done] = t1 - t0;
	c->cpu[c->done] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			  (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	if (ru.ru_maxrss > c->maxrss)
		c->maxrss = ru.ru_maxrss;
	c->done++;
	return 0;
}

int main(int argc, char **argv)
{
	struct cmd *cmds;
	int ncmd = 0, rounds, i = 2;

	if (argc < 4 || (rounds = atoi(argv[1])) <= 0) {
		fputs("usage: runcost ROUNDS LABEL[:N] CMD [ARG...] --- ...\n", stderr);
		return 2;
	}
	cmds = calloc((size_t)argc, sizeof(*cmds));
	if (!cmds)
		return 1;
	while (i < argc) {
		struct cmd *c = &cmds[ncmd++];
		char *colon = strchr(argv[i], ':');

		c->label = argv[i++];
		c->runs = rounds;
		if (colon) {
			*colon = '\0';
			c->runs = atoi(colon + 1);
			if (c->runs <= 0 || c->runs > rounds)
				c->runs = rounds;
		}
		c->argv = argv + i;
		while (i < argc && strcmp(argv[i], "---") != 0)
			i++;
		if (i < argc)
			argv[i++] = NULL;	/* ends this command's argv */
		c->wall = calloc((size_t)c->runs, sizeof(double));
		c->cpu = calloc((size_t)c->runs, sizeof(double));
		if (!c->argv[0] || !c->wall || !c->cpu) {
			fprintf(stderr, "runcost: %s: no command\n", c->label);
			return 2;
		}
	}
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < ncmd; k++)
			if (r < cmds[k].runs && run_once(&cmds[k]) < 0)
				return 1;
	for (int k = 0; k < ncmd; k++) {
		struct cmd *c = &cmds[k];
		double sum = 0;

		for (int j = 0; j < c->runs; j++)
			sum += c->cpu[j];
		printf("%s %d %.3f %.3f %.3f %ld\n", c->label, c->runs, median(c->wall, c->runs),
		       median(c->cpu, c->runs), sum / c->runs, c->maxrss);
	}
	return 0;
}
