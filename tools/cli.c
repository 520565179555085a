/* SPDX-License-Identifier: Apache-2.0 */
/* cli: start-up, common options, usage errors and output for every tool */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "kcfg.h"
#include "log.h"
#include "object.h"
#include "timeutil.h"

const char *kt_prog = "kubelet-tools";
static unsigned output_flags;
static bool output_yaml;
static long emitted; /* documents written, for YAML's "---" between two */
static size_t max_input = KT_JSON_MAX_INPUT_DEFAULT;

#ifndef KT_VERSION
#define KT_VERSION "0"
#endif

/* a write error on stdout found at exit must not pass for success */
static void close_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		if (errno == EPIPE)
			_exit(KT_EXIT_FAILURE);
		fprintf(stderr, "%s: write error: %s\n", kt_prog, strerror(errno));
		_exit(KT_EXIT_FAILURE);
	}
}

void kt_init(char **argv)
{
	const char *slash = argv && argv[0] ? strrchr(argv[0], '/') : NULL;

	if (argv && argv[0]) {
		kt_prog = slash ? slash + 1 : argv[0];
		argv[0] = (char *)kt_prog;
	}
	kt_log_level = 0;
	kt_log_set_file(NULL);
	output_flags = isatty(STDOUT_FILENO) ? KT_JSON_PRETTY : 0;
	atexit(close_stdout);
}

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	char buf[2048];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%s: %s", kt_prog, prefix);

	if (n < sizeof(buf))
		vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	fflush(stdout);
	fprintf(stderr, "%s\n", buf);
}

void kt_errmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void kt_warnmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void kt_die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	exit(code);
}

void kt_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", kt_prog);
	exit(KT_EXIT_USAGE);
}

int kt_exit_code(const struct kt_err *err)
{
	return err && err->kind == KT_ERR_INPUT ? KT_EXIT_USAGE : KT_EXIT_FAILURE;
}

long kt_opt_long(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end)
		kt_usage_error("invalid value '%s' for %s: expected a whole number", arg, opt);
	if (v < min || v > max)
		kt_usage_error("invalid value '%s' for %s: must be from %ld to %ld", arg, opt, min,
			       max);
	return v;
}

void kt_opt_invalid(const char *opt, const char *arg, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	kt_usage_error("invalid value '%s' for %s: %s", arg, opt, why);
}

int kt_opt_choice(const char *opt, const char *arg, const char *const *choices)
{
	char want[512] = "";
	size_t n = 0, len = 0;

	for (; choices[n]; n++)
		if (!strcmp(arg, choices[n]))
			return (int)n;
	for (size_t i = 0; i < n && len < sizeof(want); i++)
		len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%s",
					!i ? "" : i + 1 == n ? " or " : ", ", choices[i]);
	kt_opt_invalid(opt, arg, "expected %s", want);
}

void kt_opt_exclusive(bool given_a, const char *a, bool given_b, const char *b, const char *why)
{
	if (given_a && given_b)
		kt_usage_error("%s and %s cannot be used together%s%s", a, b, why ? ": " : "",
			       why ? why : "");
}

int64_t kt_opt_duration_ms(const char *opt, const char *arg)
{
	struct kt_err err = { 0 };
	int64_t ms;

	if (kt_duration_parse(arg, &ms, &err) < 0)
		kt_usage_error("%s: %s", opt, err.msg);
	return ms;
}

int64_t kt_opt_duration_min_ms(const char *opt, const char *arg, int64_t min_ms)
{
	int64_t ms = kt_opt_duration_ms(opt, arg);
	char d[32];

	if (ms < min_ms && min_ms == 1)
		kt_opt_invalid(opt, arg, "must be more than 0");
	if (ms < min_ms)
		kt_opt_invalid(opt, arg, "must be at least %s",
			       kt_duration_format(min_ms, d, sizeof(d)));
	return ms;
}

int64_t kt_opt_timeout_ms(const char *opt, const char *arg)
{
	const char *d = arg + (*arg == '-' || *arg == '+'), *p = d;

	while (*p >= '0' && *p <= '9')
		p++;
	if (p == d || *p) {
		int64_t ms = kt_opt_duration_ms(opt, arg);

		if (ms < 0)
			kt_usage_error("invalid value '%s' for %s: must not be negative",
				       arg, opt);
		return ms;
	}
	if (*arg == '-' && strspn(d, "0") != strlen(d))
		kt_usage_error("invalid value '%s' for %s: must not be negative", arg,
			       opt);
	if (p - d > 9)
		kt_usage_error("invalid value '%s' for %s: too large", arg, opt);
	return (int64_t)strtol(d, NULL, 10) * 1000;
}

/* "64Mi", "1G", "1048576" */
static size_t parse_size(const char *arg)
{
	static const struct {
		const char *suffix;
		size_t mult;
	} sfx[] = { { "Ki", 1024 }, { "Mi", 1024 * 1024 }, { "Gi", (size_t)1 << 30 },
		    { "k", 1000 }, { "K", 1000 }, { "M", 1000000 }, { "G", 1000000000 },
		    { "", 1 } };
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || arg[0] == '-')
		goto bad;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
		if (!strcmp(end, sfx[i].suffix) && v > 0)
			return (size_t)v * sfx[i].mult;
bad:
	kt_usage_error("invalid value '%s' for --max-input: expected a size such as 64Mi", arg);
}

void kt_common_option(int c, void (*usage)(FILE *))
{
	FILE *f;

	switch (c) {
	case 'h':
		usage(stdout);
		exit(KT_EXIT_OK);
	case 'V':
		printf("%s from kubelet-tools %s\n", kt_prog, KT_VERSION);
		exit(KT_EXIT_OK);
	case 'v':
		kt_log_level = (int)kt_opt_long("--v", optarg, 0, 9);
		break;
	case 'p':
		output_flags |= KT_JSON_PRETTY;
		break;
	case 'c':
		output_flags &= ~(unsigned)KT_JSON_PRETTY;
		break;
	case KT_OPT_LOG_FILE:
		f = fopen(optarg, "a");
		if (!f)
			kt_usage_error("cannot open log file '%s': %s", optarg, strerror(errno));
		setvbuf(f, NULL, _IONBF, 0);
		kt_log_set_file(f);
		break;
	case KT_OPT_MAX_INPUT:
		max_input = parse_size(optarg);
		break;
	default:
		/* getopt has already said what was wrong */
		fprintf(stderr, "Try '%s --help' for more information.\n", kt_prog);
		exit(KT_EXIT_USAGE);
	}
}

unsigned kt_output_flags(void)
{
	return output_flags;
}

size_t kt_max_input(void)
{
	return max_input;
}

void kt_output_set_yaml(bool yaml)
{
	output_yaml = yaml;
}

static int write_yaml(const cJSON *doc, struct kt_err *err)
{
	char *text = kt_yaml_print(doc, err);
	int rc = 0;

	if (!text)
		return -1;
	if ((emitted && fputs("---\n", stdout) == EOF) || fputs(text, stdout) == EOF ||
	    fflush(stdout) == EOF)
		rc = kt_error(err, "write error: %s", strerror(errno));
	free(text);
	return rc;
}

int kt_emit(const cJSON *doc, unsigned extra_flags)
{
	struct kt_err err = { 0 };
	int rc;

	errno = 0;
	if (output_yaml)
		rc = write_yaml(doc, &err);
	else
		rc = kt_json_write(stdout, doc, output_flags | extra_flags, &err);
	if (rc < 0) {
		/*
		 * A reader that went away (kube-request --watch | head -1): end
		 * as any filter does, by SIGPIPE, which libcurl ignores while it
		 * runs the callbacks that print.
		 */
		if (errno == EPIPE) {
			signal(SIGPIPE, SIG_DFL);
			raise(SIGPIPE);
		}
		kt_errmsg("%s", err.msg);
		return -1;
	}
	emitted++;
	return 0;
}

int kt_emit_items(cJSON *doc, unsigned extra_flags)
{
	cJSON *items = kt_json_get_array(doc, "items");

	if (!kt_json_get_string(doc, "kind") || !items)
		return kt_emit(doc, extra_flags);
	if (kt_object_type_items(doc) < 0) {
		kt_errmsg("out of memory");
		return -1;
	}
	for (cJSON *it = items->child; it; it = it->next)
		if (kt_emit(it, extra_flags) < 0)
			return -1;
	return 0;
}

/* ------------------------------------------------------------- API options */

bool kt_api_option(int c, const char *arg, struct kt_api_opts *opts)
{
	switch (c) {
	case KT_OPT_KUBECONFIG:
		opts->kubeconfig = arg;
		break;
	case KT_OPT_CONTEXT:
		opts->context = arg;
		break;
	case KT_OPT_SERVER:
		if (!kt_kcfg_server_ok(arg))
			kt_opt_invalid("--server", arg, "expected an http(s) URL");
		opts->server = arg;
		break;
	case KT_OPT_TOKEN:
		/* never echo the value: it is a secret */
		if (!*arg || !kt_kcfg_token_ok(arg))
			kt_usage_error("invalid --token: empty or with a control "
				       "character");
		opts->token = arg;
		break;
	case KT_OPT_TOKEN_FILE:
		opts->token_file = arg;
		break;
	case KT_OPT_CA_FILE:
		opts->ca_file = arg;
		break;
	case KT_OPT_CERT_FILE:
		opts->cert_file = arg;
		break;
	case KT_OPT_KEY_FILE:
		opts->key_file = arg;
		break;
	case KT_OPT_INSECURE:
		opts->insecure = true;
		break;
	case KT_OPT_REQUEST_TIMEOUT:
		opts->timeout_ms = kt_opt_timeout_ms("--request-timeout", arg);
		opts->timeout_set = true;
		break;
	case KT_OPT_FIELD_MANAGER: {
		struct kt_err err = { 0 };

		if (kt_kcfg_field_manager_check(arg, &err) < 0)
			kt_usage_error("%s", err.msg);
		opts->field_manager = arg;
		break;
	}
	default:
		return false;
	}
	return true;
}
