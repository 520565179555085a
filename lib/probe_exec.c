/* SPDX-License-Identifier: Apache-2.0 */
/* probe_exec: an exec probe attempt: argv in its own process group, output kept to 10 KiB */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "log.h"
#include "probe_int.h"
#include "kt_spawn.h"

/* the command line for messages, as Go's %q of strings.Join(argv, " ") */
static void quoted_command(char *buf, size_t size, char *const *argv)
{
	size_t n = 0;

	n += (size_t)snprintf(buf, size, "\"");
	for (size_t i = 0; argv[i] && n < size; i++) {
		for (const char *p = argv[i]; *p && n + 5 < size; p++) {
			if (*p == '"' || *p == '\\')
				n += (size_t)snprintf(buf + n, size - n, "\\%c", *p);
			else if ((unsigned char)*p < 0x20)
				n += (size_t)snprintf(buf + n, size - n, "\\x%02x", (unsigned char)*p);
			else
				buf[n++] = *p;
		}
		if (argv[i + 1] && n + 2 < size)
			buf[n++] = ' ';
	}
	if (n + 2 > size)
		n = size - 2;
	buf[n++] = '"';
	buf[n] = '\0';
}

static void on_end(struct kt_spawn *sp, struct kt_spawn_result *res, void *arg)
{
	struct kt_probe_call *c = arg;
	enum kt_probe_result r;
	char msg[1200], cmd[1024];

	KT_V(6, "probe command ended", "pid=%d status=%d", (int)kt_spawn_pid(sp), res->status);
	c->attempt = NULL;
	if (res->timed_out) {
		quoted_command(cmd, sizeof(cmd), c->spec->argv);
		snprintf(msg, sizeof(msg), "command %s timed out", cmd);
		kt_probe_attempt_done(c, KT_PROBE_FAILURE, false, msg, strlen(msg));
		return;
	}
	r = WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0 ? KT_PROBE_SUCCESS
								      : KT_PROBE_FAILURE;
	kt_probe_attempt_done(c, r, false, res->out, res->out_len);
}

int kt_probe_exec_start(struct kt_probe_call *c, struct kt_err *err)
{
	/* stdout and stderr together; past 10 KiB read and dropped, as the kubelet */
	char **argv = c->spec->argv;
	struct kt_spawn_opts o = {
		.argv = argv,
		.output = KT_SPAWN_BOTH,
		.over = KT_SPAWN_OVER_DROP,
		.out_max = KT_PROBE_MAX_OUTPUT,
		.timeout_ms = c->timeout_ms,
	};
	struct kt_spawn *sp;
	size_t nvia = 0;
	int e = 0;

	while (c->spec->exec_via && c->spec->exec_via[nvia])
		nvia++;
	if (nvia) {
		argv = calloc(nvia + c->spec->argc + 1, sizeof(*argv));
		if (!argv)
			return kt_error(err, "out of memory");
		memcpy(argv, c->spec->exec_via, nvia * sizeof(*argv));
		memcpy(argv + nvia, c->spec->argv, c->spec->argc * sizeof(*argv));
		o.argv = argv;
	}
	sp = kt_spawn_start(c->loop, &o, on_end, c, &e, err);
	if (nvia)
		free(argv);
	if (!sp && e == 0)
		return -1;
	if (!sp && e == ENOENT && !strchr(c->spec->argv[0], '/'))
		return kt_error(err, "exec: \"%s\": executable file not found in $PATH",
				c->spec->argv[0]);
	if (!sp)
		return kt_error(err, "exec: \"%s\": %c%s", c->spec->argv[0],
				tolower((unsigned char)strerror(e)[0]), strerror(e) + 1);
	KT_V(6, "probe command started", "pid=%d argv0=\"%s\"", (int)kt_spawn_pid(sp),
	     c->spec->argv[0]);
	c->attempt = sp;
	return 0;
}

void kt_probe_exec_cancel(struct kt_loop *loop, void *attempt)
{
	(void)loop;
	kt_spawn_cancel(attempt);
}
