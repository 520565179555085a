/* SPDX-License-Identifier: Apache-2.0 */
/* cli: what every tool shares: start-up, common options, usage errors, output mode */
#ifndef KT_CLI_H
#define KT_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "kt_err.h"	/* KT_EXIT_OK, KT_EXIT_FAILURE, KT_EXIT_USAGE */

/* the tool's name (basename of argv[0]), set by kt_init */
extern const char *kt_prog;

/*
 * Call first in main: sets kt_prog, logs to stderr at level 0, output mode
 * from isatty(stdout), registers the stdout close check (a write error at
 * exit turns the exit status into 1).
 */
void kt_init(char **argv);

/*
 * Common options.  Tools put KT_LONGOPTS_COMMON last in their option table
 * (it ends the table) and KT_SHORTOPTS_COMMON in their short string, and
 * pass every unknown option character to kt_common_option.  Long-only options use values >= 0x100:
 * tools number their own from KT_OPT_TOOL up.
 */
enum {
	KT_OPT_LOG_FILE = 0x100,
	KT_OPT_MAX_INPUT,
	KT_OPT_TRACE_FILE,
	KT_OPT_TOOL = 0x200,
};
#define KT_SHORTOPTS_COMMON "hVv:pc"
#define KT_LONGOPTS_COMMON                                                  \
	{ "help", no_argument, NULL, 'h' },                                 \
	{ "version", no_argument, NULL, 'V' },                              \
	{ "v", required_argument, NULL, 'v' },                              \
	{ "pretty", no_argument, NULL, 'p' },                               \
	{ "compact", no_argument, NULL, 'c' },                              \
	{ "log-file", required_argument, NULL, KT_OPT_LOG_FILE },           \
	{ "max-input", required_argument, NULL, KT_OPT_MAX_INPUT },         \
	{ NULL, 0, NULL, 0 }

/* -o, --output=<format>: one spelling, what it takes is the tool's (kt_opt_choice) */
#define KT_LONGOPT_OUTPUT { "output", required_argument, NULL, 'o' }

/* the usage text of the common options, for each tool's usage() */
#define KT_USAGE_COMMON                                                                   \
	"  -p, --pretty             indent output by two spaces\n"                          \
	"  -c, --compact            one line per document (default when not a terminal)\n" \
	"  -v, --v=<level>          log verbosity, 0-9 (default 0)\n"                        \
	"      --log-file=<file>    write logs to <file> instead of standard error\n"        \
	"      --max-input=<size>   refuse documents larger than <size> (default 64Mi)\n"   \
	"  -h, --help               show this help and exit\n"                              \
	"  -V, --version            show version and exit\n"

/*
 * Handles -h -V -v -p -c --log-file --max-input; anything else (the '?' from
 * getopt) is a usage error.  usage(stdout) is called for --help, then exit 0.
 */
void kt_common_option(int c, void (*usage)(FILE *));

/* output flags for kt_json_write (KT_JSON_PRETTY or 0), as the options left them */
unsigned kt_output_flags(void);
/* the --max-input value (default 64 MiB) */
size_t kt_max_input(void);

/* "tool: message" + "Try 'tool --help' for more information." then exit 2 */
void kt_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* "tool: message" on stderr, exit status code */
void kt_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* "tool: message" on stderr, no exit */
void kt_errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "tool: warning: message" on stderr */
void kt_warnmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* the exit code for an error: 2 for KT_ERR_INPUT, 1 for the rest */
int kt_exit_code(const struct kt_err *err);

/* -o yaml: kt_emit writes block YAML documents, "---" between two */
void kt_output_set_yaml(bool yaml);

/*
 * Writes doc to stdout in the chosen mode (flags may add KT_JSON_SORTED; YAML
 * takes none); on a write error prints it and returns -1.  A reader that went
 * away (EPIPE) ends the tool by SIGPIPE, quietly, as it ends any filter.
 */
int kt_emit(const cJSON *doc, unsigned extra_flags);

/*
 * A list (an object with kind and items) as its items, one document each,
 * those that are objects given the list's apiVersion and the kind it implies
 * (PodList -> Pod) first, where they have none; doc's items are changed.
 * Any other document as kt_emit writes it.  -1 after saying why.
 */
int kt_emit_items(cJSON *doc, unsigned extra_flags);

/* numbers in option values: an error names the option, exit 2 */
long kt_opt_long(const char *opt, const char *arg, long min, long max);
/* a kubectl duration ("500ms", "10s", "1m30s", "0") as milliseconds; a usage
 * error (exit 2) if bad */
int64_t kt_opt_duration_ms(const char *opt, const char *arg);
/* a timeout: the same, never negative (a usage error), and a bare whole
 * number is seconds, as kubectl's --request-timeout takes it ("5" is 5s) */
int64_t kt_opt_timeout_ms(const char *opt, const char *arg);

/*
 * The one way to say a bad option value, exit 2: "invalid value 'ARG' for
 * OPT: " and what fmt says.
 */
void kt_opt_invalid(const char *opt, const char *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
/* the index of arg in choices (NULL-terminated); else kt_opt_invalid with
 * "expected A, B or C" */
int kt_opt_choice(const char *opt, const char *arg, const char *const *choices);
/* a duration (as kt_opt_duration_ms) of at least min_ms: "must be more
 * than 0" for min_ms 1, else "must be at least <min_ms as Go writes it>" */
int64_t kt_opt_duration_min_ms(const char *opt, const char *arg, int64_t min_ms);
/*
 * The one way to say two options exclude each other, exit 2, when both
 * given_a and given_b: "A and B cannot be used together", then ": why"
 * when why is not NULL.
 */
void kt_opt_exclusive(bool given_a, const char *a, bool given_b, const char *b, const char *why);

/*
 * The API options (KT_LONGOPTS_API, struct kt_api_opts in kcfg.h): stores
 * option c (with its argument) in opts and returns true when c is one of
 * them, false otherwise.  A bad value (--server that is not an http(s) URL,
 * --token with a control character, --request-timeout that is not a
 * duration) is a usage error: it prints the two usage lines and exits 2, as
 * kt_usage_error does.  Option parsing is cli's: kcfg only checks values.
 */
struct kt_api_opts;
bool kt_api_option(int c, const char *arg, struct kt_api_opts *opts);

#endif
