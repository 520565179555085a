/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-kcfg: kubeconfig loading from bytes.  Byte 0 sets flags the way a
 * tool would (bit 0 --context=fuzz, bit 1 --server, bit 2 --token, bit 3
 * --insecure-skip-tls-verify); the rest is the kubeconfig.
 *
 * kcfg reads files, so this harness compiles kcfg.c itself with its few
 * file calls (kt_file_read, access, kt_file_id_get) routed here: the kubeconfig comes
 * from the fuzzer's bytes and every other file (certificates, token files,
 * whatever a path names) does not exist.  No file is touched, and no exec plugin runs: loading only
 * parses the plugin's stanza; plugins run on refresh, which is not called.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsio.h"
#include "fuzz.h"

#define FUZZ_KUBECONFIG "fuzz/kubeconfig"

static const uint8_t *kubeconfig;
static size_t kubeconfig_len;

/* kt_file_read as kcfg calls it: the kubeconfig is the fuzzer's bytes */
static int sandbox_file_read(const char *path, const char *what, size_t max, char **buf,
			     size_t *len, struct kt_err *err)
{
	if (strcmp(path, FUZZ_KUBECONFIG) != 0)
		return kt_error_file(err, KT_ERR_INPUT, "cannot read %s '%s': %s",
				     what ? what : "file", path, strerror(ENOENT));
	if (kubeconfig_len > max)
		return kt_error(err, "%s '%s' is larger than %zu bytes", what ? what : "file",
				path, max);
	*buf = malloc(kubeconfig_len + 1);
	if (!*buf)
		return kt_error(err, "out of memory");
	memcpy(*buf, kubeconfig, kubeconfig_len);
	(*buf)[kubeconfig_len] = '\0';
	*len = kubeconfig_len;
	return 0;
}

static int sandbox_access(const char *path, int mode)
{
	if (!strcmp(path, FUZZ_KUBECONFIG) && !(mode & W_OK))
		return 0;
	errno = ENOENT;
	return -1;
}

/* kt_file_id_get as kcfg calls it: no token or certificate file can be seen */
static int sandbox_file_id_get(const char *path, struct kt_file_id *id)
{
	(void)path;
	id->dev = id->ino = id->size = id->mtime_ns = -1;
	errno = ENOENT;
	return -1;
}

/* kcfg.c opens nothing else today; should it start to, this keeps the harness shut */
__attribute__((unused)) static int sandbox_open(const char *path, int flags, ...)
{
	errno = ENOENT;
	return -1;
}

#define kt_file_read sandbox_file_read
#define access(path, mode) sandbox_access(path, mode)
#define kt_file_id_get sandbox_file_id_get
#define open(path, ...) sandbox_open(path, __VA_ARGS__)
#include "kcfg.c"
#undef kt_file_read
#undef access
#undef kt_file_id_get
#undef open

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_api_opts opts = { .kubeconfig = FUZZ_KUBECONFIG };
	struct kt_err err = { 0 };
	struct kt_kcfg cfg;

	if (size < 1)
		return 0;
	if (data[0] & 1)
		opts.context = "fuzz";
	if (data[0] & 2)
		opts.server = "https://127.0.0.1:6443";
	if (data[0] & 4)
		opts.token = "fuzz-token";
	opts.insecure = data[0] & 8;
	kubeconfig = data + 1;
	kubeconfig_len = size - 1;
	if (kt_kcfg_load(&cfg, &opts, &err) == 0) {
		kt_kcfg_can_refresh(&cfg);
		kt_kcfg_release(&cfg);
	}
	return 0;
}
