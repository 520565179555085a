/* SPDX-License-Identifier: Apache-2.0 */
/* kcfg: kubeconfig, in-cluster config and API flags resolved to server, TLS and auth */
#ifndef KT_KCFG_H
#define KT_KCFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <getopt.h>

#include "fsio.h"
#include "kt_err.h"

/* ------------------------------------------------------------ API options */

/*
 * The API options every cluster tool shares (SPEC section 1).  A tool puts
 * KT_LONGOPTS_API in its option table, KT_USAGE_API in its usage text, keeps
 * a zeroed struct kt_api_opts in its ctl and offers every option character
 * to kt_api_option (cli.h) before kt_common_option:
 *
 *	default:
 *		if (!kt_api_option(c, optarg, &ctl.api))
 *			kt_common_option(c, usage);
 *
 * The strings are borrowed from argv.
 */
enum {
	KT_OPT_KUBECONFIG = 0x180,
	KT_OPT_CONTEXT,
	KT_OPT_SERVER,
	KT_OPT_TOKEN,
	KT_OPT_TOKEN_FILE,
	KT_OPT_CA_FILE,
	KT_OPT_CERT_FILE,
	KT_OPT_KEY_FILE,
	KT_OPT_INSECURE,
	KT_OPT_REQUEST_TIMEOUT,
	KT_OPT_FIELD_MANAGER,
};

#define KT_LONGOPTS_API                                                                 \
	{ "kubeconfig", required_argument, NULL, KT_OPT_KUBECONFIG },                   \
	{ "context", required_argument, NULL, KT_OPT_CONTEXT },                         \
	{ "server", required_argument, NULL, KT_OPT_SERVER },                           \
	{ "token", required_argument, NULL, KT_OPT_TOKEN },                             \
	{ "token-file", required_argument, NULL, KT_OPT_TOKEN_FILE },                   \
	{ "certificate-authority", required_argument, NULL, KT_OPT_CA_FILE },           \
	{ "client-certificate", required_argument, NULL, KT_OPT_CERT_FILE },            \
	{ "client-key", required_argument, NULL, KT_OPT_KEY_FILE },                     \
	{ "insecure-skip-tls-verify", no_argument, NULL, KT_OPT_INSECURE },             \
	{ "request-timeout", required_argument, NULL, KT_OPT_REQUEST_TIMEOUT }

#define KT_USAGE_API                                                                    \
	"      --kubeconfig=<file>  the kubeconfig (default $KUBECONFIG)\n"             \
	"      --context=<name>     the kubeconfig context to use\n"                    \
	"      --server=<url>       the API server's URL, overriding the kubeconfig\n"  \
	"      --token=<token>      bearer token for the API server\n"                  \
	"      --token-file=<file>  read the bearer token from <file>\n"                \
	"      --certificate-authority=<file>\n"                                        \
	"                           verify the server with the CAs in <file> (PEM)\n"   \
	"      --client-certificate=<file>\n"                                           \
	"                           authenticate with the certificate in <file>\n"      \
	"      --client-key=<file>  the client certificate's key (PEM)\n"               \
	"      --insecure-skip-tls-verify\n"                                            \
	"                           do not verify the server's certificate\n"           \
	"      --request-timeout=<duration>\n"                                          \
	"                           limit for a call with its retries (default 30s)\n"

struct kt_api_opts {
	const char *kubeconfig;
	const char *context;
	const char *server;
	const char *token;
	const char *token_file;
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	bool insecure;
	bool timeout_set;	/* --request-timeout given */
	int64_t timeout_ms;	/* its value; 0 means no limit */
	/* the largest reply body the client takes (the tools pass --max-input);
	 * below KT_JSON_MAX_INPUT_DEFAULT, 0 included, it is that default */
	size_t max_reply;
	/* who the requests say they come from: the tool's name in User-Agent
	 * (NULL: "kubelet-tools"), and the ?fieldManager= every write carries
	 * (--field-manager; NULL: program) */
	const char *program;
	const char *field_manager;
};

/*
 * --field-manager, for the tools that write: after KT_LONGOPTS_API in the
 * option table and KT_USAGE_API in the usage text; kt_api_option takes it.
 */
#define KT_LONGOPTS_FIELD_MANAGER \
	{ "field-manager", required_argument, NULL, KT_OPT_FIELD_MANAGER }
#define KT_USAGE_FIELD_MANAGER                                                          \
	"      --field-manager=<name>\n"                                                 \
	"                           the manager named for each write (default: the\n"   \
	"                           tool's name)\n"

/* the API server's limit on a field manager's length, in bytes */
#define KT_FIELD_MANAGER_MAX 128


/* ---------------------------------------------------- resolved configuration */

#define KT_KCFG_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KT_KCFG_TIMEOUT_DEFAULT_MS 30000

struct kt_kcfg_exec;	/* an exec credential plugin and its cached credential */

/*
 * Everything needed to reach one API server.  All strings and blobs are owned
 * by the struct and freed by kt_kcfg_release.  The TLS material is PEM in
 * memory (for CURLOPT_CAINFO_BLOB, CURLOPT_SSLCERT_BLOB, CURLOPT_SSLKEY_BLOB),
 * so nothing is read from disk after loading except the token file.
 */
struct kt_kcfg {
	char *source;		/* where it came from, for messages: kubeconfig path(s),
				 * "in-cluster" or "flags" */
	char *context;		/* context, cluster and user names; NULL when none */
	char *cluster;
	char *user;

	char *server;		/* "https://host:port[/prefix]", no trailing slash */
	char *tls_server_name;	/* name to verify the server certificate against */
	char *proxy_url;
	bool insecure;		/* insecure-skip-tls-verify */
	char *ca_pem;		/* NULL: the system's CAs */
	size_t ca_len;
	char *cert_pem;		/* client certificate, NULL when none */
	size_t cert_len;
	char *key_pem;		/* its key; never logged, never in a message */
	size_t key_len;

	char *token;		/* the bearer token in use, NULL if none; never logged */
	char *token_file;	/* re-read by kt_kcfg_refresh whenever it changes */
	int64_t timeout_ms;	/* --request-timeout; 0 means no limit */

	/* bumped each time token or client certificate/key change, so a client
	 * knows to set them again on its handles */
	unsigned generation;

	/* private */
	struct kt_kcfg_exec *exec;
	struct kt_file_id token_id; /* the token file as last read */
	/* the files cert_pem and key_pem came from (NULL for -data, a plugin or
	 * none), read again by kt_kcfg_refresh when they change, and what they
	 * were when last read */
	char *cert_file, *key_file;
	struct kt_file_id cert_id, key_id;
};

/* zeroes cfg; a zeroed struct is valid to release */
void kt_kcfg_init(struct kt_kcfg *cfg);

/*
 * Resolves the configuration as kubectl does (SPEC section 1).  The
 * kubeconfig is opts->kubeconfig, else $KUBECONFIG (a colon-separated list
 * merged as kubectl merges it: the first file to define a cluster, user or
 * context name wins, current-context comes from the first file that sets it;
 * missing files in the list are skipped), else ~/.kube/config when it
 * exists, else the in-cluster service account when KUBERNETES_SERVICE_HOST
 * is set.  opts (may be NULL) overrides: --context picks the context,
 * --server needs no kubeconfig at all, --token/--token-file replace the
 * user's credentials, --certificate-authority/--client-* replace the files.
 * Relative paths in a kubeconfig are relative to that file's directory.
 *
 * cfg must be zeroed (kt_kcfg_init); on success the caller releases it with
 * kt_kcfg_release, on failure it is left zeroed.  Credentials from an exec
 * plugin are not fetched here but on first use (kt_kcfg_refresh).  Errors
 * (kind KT_ERR_FAIL) name the file and what is wrong in it:
 * "kubeconfig 'x': context 'y' not found".  Logs source, context and server
 * at -v 1.
 */
int kt_kcfg_load(struct kt_kcfg *cfg, const struct kt_api_opts *opts, struct kt_err *err);

/*
 * The in-cluster configuration: https://$KUBERNETES_SERVICE_HOST:
 * $KUBERNETES_SERVICE_PORT, CA from SA_DIR/ca.crt, token from SA_DIR/token
 * (re-read when it changes).  sa_dir NULL means KT_KCFG_SA_DIR; tests pass
 * their own directory.  cfg must be zeroed; release with kt_kcfg_release.
 */
int kt_kcfg_load_incluster(struct kt_kcfg *cfg, const char *sa_dir, struct kt_err *err);

/*
 * Brings the credentials up to date before a request: re-reads the client
 * certificate and key files (client-certificate, client-key, or the flags)
 * when either one's inode, size or mtime changed, so a certificate rotated
 * by a rename (node-bootstrap --rotate) is used from the next request on
 * (files that cannot be read, or hold no PEM, keep the pair in use, with one
 * warning, until they change again); re-reads the token file
 * when its inode, size or mtime changed, and runs the exec plugin when there
 * is no cached credential, it has expired (expirationTimestamp, with 10 s to
 * spare), or force is true (the server answered 401, and the plugin did not
 * already hand the same refused credential back).  Returns 1 when the
 * token or client certificate changed (generation was bumped), 0 when not,
 * -1 with err when the file cannot be read or the plugin fails.  The plugin
 * runs synchronously (kt_spawn_run) with stdin from /dev/null, its stderr
 * inherited, its output capped at 1 MiB (past it, or at the request timeout,
 * it is killed with its process group).
 */
int kt_kcfg_refresh(struct kt_kcfg *cfg, bool force, struct kt_err *err);

/* true when token can go in an Authorization header: no byte below 0x20 and no
 * DEL (a CR or LF would start a header of its own), as Go's net/http checks */
bool kt_kcfg_token_ok(const char *token);

/* true when url is "http(s)://host[:port][/path]" as kt_url_parse reads it:
 * an http or https scheme, a host, a port from 1 to 65535, no user name */
bool kt_kcfg_server_ok(const char *url);

/* 0 when name can be a field manager as the API server takes one: not
 * empty, at most KT_FIELD_MANAGER_MAX bytes, no control character (C0, DEL
 * or C1); else -1 with err (KT_ERR_INPUT) saying which */
int kt_kcfg_field_manager_check(const char *name, struct kt_err *err);

struct kt_loop;
struct kt_kcfg_wait;

/* a refresh on the loop ended: rc and err as kt_kcfg_refresh's (err NULL
 * unless rc is -1, and borrowed for the call) */
typedef void kt_kcfg_fresh_fn(void *arg, int rc, const struct kt_err *err);

/*
 * kt_kcfg_refresh for a call on loop, never blocking it on the exec plugin.
 * Returns at once (0 unchanged, 1 changed, -1 with err) when no plugin run
 * is needed: no plugin (a token file is re-read here, it costs a stat), a
 * cached credential still valid and not forced, or, with force, a
 * credential already replaced since the one that got the 401
 * (stale_generation is the generation the failed request carried: as
 * client-go, a 401 refreshes only the credential that got it), or a
 * credential a forced run already gave back unchanged (it stays refused:
 * 0, and the plugin runs no more for it).  Otherwise
 * it starts the plugin on loop, or joins the run already going, so that
 * any number of calls waiting cause one run; it sets *wait and returns 2,
 * and fn is called once on the loop when the run ends.  The plugin runs
 * with its output capped at 1 MiB and killed with its process group at the
 * request timeout.
 */
int kt_kcfg_refresh_async(struct kt_kcfg *cfg, struct kt_loop *loop, bool force,
			  unsigned stale_generation, kt_kcfg_fresh_fn *fn, void *arg,
			  struct kt_kcfg_wait **wait, struct kt_err *err);

/* stops waiting (fn is not called); the run goes on for the others, and is
 * killed when nobody waits for it any more */
void kt_kcfg_refresh_cancel(struct kt_kcfg *cfg, struct kt_kcfg_wait *wait);

/* true when the credentials can change by kt_kcfg_refresh(force) after a 401 */
bool kt_kcfg_can_refresh(const struct kt_kcfg *cfg);

/* frees everything and zeroes cfg; NULL and a zeroed struct are fine */
void kt_kcfg_release(struct kt_kcfg *cfg);

#endif
