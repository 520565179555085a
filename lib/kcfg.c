/* SPDX-License-Identifier: Apache-2.0 */
/* kcfg: kubeconfig, in-cluster config and API flags resolved to server, TLS and auth */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "kt_err.h"
#include "core.h"
#include "fsio.h"
#include "json.h"
#include "kcfg.h"
#include "log.h"
#include "kt_spawn.h"
#include "timeutil.h"
#include "url.h"

#define KCFG_FILE_MAX ((size_t)16 << 20)
#define EXEC_OUT_MAX ((size_t)1 << 20)
#define EXEC_EXPIRY_SLACK_US (10 * 1000000LL)

extern char **environ;

struct kt_kcfg_exec {
	char *api_version;
	char *command;
	char **argv;	   /* command, args..., NULL */
	char **env;	   /* "NAME=value" from the kubeconfig, NULL-terminated */
	char *info;	   /* KUBERNETES_EXEC_INFO */
	char *hint;	   /* installHint, on one line; NULL when none */
	bool have;	   /* a credential is cached */
	int64_t expiry_us; /* 0: no expiry */

	/* a run on the loop and the calls waiting for it (kt_kcfg_refresh_async) */
	struct kt_kcfg *cfg;
	struct kt_spawn *run;
	char **run_envp, *run_info;
	int64_t run_timeout_ms;
	struct kt_kcfg_wait *waiters;
	struct kt_kcfg_wait *told; /* the ended run's waiters not told yet */
	bool run_forced;	   /* the run is for a credential the server refused */
	/* a refused credential the plugin gave back unchanged: it stays refused,
	 * and another 401 with it runs the plugin no more */
	bool refused;
	unsigned refused_gen;
};

struct kt_kcfg_wait {
	struct kt_kcfg_wait *next;
	kt_kcfg_fresh_fn *fn;
	void *arg;
};

/* ------------------------------------------------------------ small helpers */

/* "a" sep "b" (sep one character: dir/file, NAME=value), malloc'd; NULL when out of memory */
static char *str_join(const char *a, char sep, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s%c%s", a, sep, b);
	return p;
}

/* reads a whole file for kcfg; what names the file in the message.  A file
 * kcfg cannot read is a failure (exit 1), not bad input */
static int read_all(const char *what, const char *path, size_t max, char **buf,
		    size_t *len, struct kt_err *err)
{
	if (kt_file_read(path, what, max, buf, len, err) == 0)
		return 0;
	if (err)
		err->kind = KT_ERR_FAIL;
	return -1;
}

static bool pem_has(const char *pem, size_t len, const char *begin)
{
	const char *p = memmem(pem, len, begin, strlen(begin));

	return p && memmem(p, len - (size_t)(p - pem), "-----END ", 9);
}

static bool pem_is_cert(const char *pem, size_t len)
{
	return pem_has(pem, len, "-----BEGIN CERTIFICATE-----");
}

static bool pem_is_key(const char *pem, size_t len)
{
	return memmem(pem, len, "PRIVATE KEY-----", 16) &&
	       pem_has(pem, len, "-----BEGIN ");
}

enum pem_kind { PEM_CA, PEM_CERT, PEM_KEY };

static const char *pem_what[] = {
	[PEM_CA] = "certificate authority",
	[PEM_CERT] = "client certificate",
	[PEM_KEY] = "client key",
};

static bool pem_ok(enum pem_kind kind, const char *pem, size_t len)
{
	return kind == PEM_KEY ? pem_is_key(pem, len) : pem_is_cert(pem, len);
}

/* loads PEM from a file into *pem; the message never shows the content */
static int pem_from_file(enum pem_kind kind, const char *path, char **pem, size_t *len,
			 struct kt_err *err)
{
	char *buf = NULL;
	size_t n = 0;

	if (read_all(pem_what[kind], path, KCFG_FILE_MAX, &buf, &n, err) < 0)
		return -1;
	if (!pem_ok(kind, buf, n)) {
		free(buf);
		return kt_error(err, "%s '%s' is not PEM", pem_what[kind], path);
	}
	free(*pem);
	*pem = buf;
	*len = n;
	return 0;
}

/* loads PEM from a kubeconfig -data field (base64) */
static int pem_from_data(enum pem_kind kind, const char *src, const char *field,
			 const char *data, char **pem, size_t *len, struct kt_err *err)
{
	size_t n = 0;
	char *buf = kt_base64_decode(data, strlen(data), &n);

	if (!buf || !pem_ok(kind, buf, n)) {
		free(buf);
		return kt_error(err, "%s: %s is not base64-encoded PEM", src, field);
	}
	free(*pem);
	*pem = buf;
	*len = n;
	return 0;
}

/* ------------------------------------------ the values API options take */

bool kt_kcfg_server_ok(const char *url)
{
	struct kt_err err = { 0 };
	struct kt_url u;

	if (kt_url_parse(url, &u, &err) < 0)
		return false;
	kt_url_release(&u);
	return true;
}

bool kt_kcfg_token_ok(const char *token)
{
	for (const unsigned char *p = (const unsigned char *)token; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

int kt_kcfg_field_manager_check(const char *name, struct kt_err *err)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t len = strlen(name);

	if (!len)
		return kt_error_kind(err, KT_ERR_INPUT, "invalid --field-manager: it is empty");
	if (len > KT_FIELD_MANAGER_MAX)
		return kt_error_kind(err, KT_ERR_INPUT,
				     "invalid --field-manager: %zu bytes long, the API server "
				     "takes at most %d", len, KT_FIELD_MANAGER_MAX);
	for (; *p; p++)
		/* C0 and DEL; C1 (U+0080 to U+009F) is 0xc2 0x80-0x9f in UTF-8 */
		if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return kt_error_kind(err, KT_ERR_INPUT,
					     "invalid --field-manager: it has a control character");
	return 0;
}

/* ------------------------------------------------------------ kubeconfig */

/* one kubeconfig file of the merged list */
struct kc_file {
	char *path;
	char *dir;
	cJSON *doc;
};

struct kc_set {
	struct kc_file *files;
	size_t n;
	char *source; /* the paths joined with ':' */
};

static void kc_set_release(struct kc_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		free(set->files[i].path);
		free(set->files[i].dir);
		cJSON_Delete(set->files[i].doc);
	}
	free(set->files);
	free(set->source);
	memset(set, 0, sizeof(*set));
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\n' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/* reads one kubeconfig; missing_ok skips a file that does not exist */
static int kc_add(struct kc_set *set, const char *path, bool missing_ok,
		  struct kt_err *err)
{
	struct kc_file *nf, f = { 0 };
	char *text = NULL, *slash;
	size_t len = 0;
	int rc = -1;

	if (missing_ok && access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	if (read_all("kubeconfig", path, KCFG_FILE_MAX, &text, &len, err) < 0)
		goto out;
	if (!blank(text, len)) {
		f.doc = kt_json_parse(path, text, len, err);
		if (!f.doc) {
			if (err)
				err->kind = KT_ERR_FAIL;
			kt_err_prefix(err, "invalid kubeconfig");
			goto out;
		}
		if (!cJSON_IsObject(f.doc)) {
			kt_error(err, "kubeconfig '%s' is not a mapping", path);
			goto out;
		}
	}
	f.path = strdup(path);
	slash = strrchr(path, '/');
	f.dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path))
		      : strdup(".");
	if (!f.path || !f.dir) {
		kt_error(err, "out of memory");
		goto out;
	}
	/* the array is the set's as soon as realloc moved it: never dangling */
	nf = realloc(set->files, (set->n + 1) * sizeof(*nf));
	if (!nf) {
		kt_error(err, "out of memory");
		goto out;
	}
	set->files = nf;
	set->files[set->n++] = f;
	memset(&f, 0, sizeof(f));
	rc = 0;
out:
	free(f.path);
	free(f.dir);
	cJSON_Delete(f.doc);
	free(text);
	return rc;
}

/* the first entry named name in section ("clusters") over the files, and its file */
static const cJSON *kc_find(const struct kc_set *set, const char *section,
			    const char *name, const char *inner,
			    const struct kc_file **from)
{
	for (size_t i = 0; i < set->n; i++) {
		const cJSON *e;

		cJSON_ArrayForEach (e, kt_json_get_array(set->files[i].doc, section)) {
			const char *en = kt_json_get_string(e, "name");

			if (en && !strcmp(en, name)) {
				const cJSON *body = kt_json_get_object(e, inner);

				*from = &set->files[i];
				return body ? body : e;
			}
		}
	}
	return NULL;
}

static const char *kc_current_context(const struct kc_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		const char *cc = kt_json_get_string(set->files[i].doc, "current-context");

		if (cc && *cc)
			return cc;
	}
	return NULL;
}

/* the files to read: --kubeconfig, else $KUBECONFIG, else ~/.kube/config */
static int kc_load_files(struct kc_set *set, const char *explicit_path,
			 struct kt_err *err)
{
	const char *env = getenv("KUBECONFIG");
	char *list = NULL, *p, *next;
	size_t srclen = 0;
	int rc = -1;

	if (explicit_path) {
		if (kc_add(set, explicit_path, false, err) < 0)
			goto out;
	} else if (env && *env) {
		list = strdup(env);
		if (!list)
			goto oom;
		for (p = list; p; p = next) {
			bool dup = !*p;

			next = strchr(p, ':');
			if (next)
				*next++ = '\0';
			for (size_t i = 0; i < set->n; i++)
				dup = dup || !strcmp(set->files[i].path, p);
			if (!dup && kc_add(set, p, true, err) < 0)
				goto out;
		}
	} else {
		const char *home = getenv("HOME");
		char *path;

		if (home && *home) {
			path = str_join(home, '/', ".kube/config");
			if (!path)
				goto oom;
			rc = kc_add(set, path, true, err);
			free(path);
			if (rc < 0)
				goto out;
			rc = -1;
		}
	}
	for (size_t i = 0; i < set->n; i++)
		srclen += strlen(set->files[i].path) + 1;
	set->source = calloc(1, srclen + 1);
	if (!set->source)
		goto oom;
	for (size_t i = 0; i < set->n; i++) {
		size_t cur = strlen(set->source);

		snprintf(set->source + cur, srclen + 1 - cur, "%s%s", i ? ":" : "",
			 set->files[i].path);
	}
	rc = 0;
	goto out;
oom:
	kt_error(err, "out of memory");
out:
	free(list);
	return rc;
}

/* a path field of an entry, made absolute against the file's directory; caller frees */
static char *kc_path(const cJSON *entry, const char *key, const struct kc_file *from)
{
	const char *v = kt_json_get_string(entry, key);

	if (!v || !*v)
		return NULL;
	if (v[0] == '/' || !from)
		return strdup(v);
	return str_join(from->dir, '/', v);
}

static bool kc_bool(const cJSON *obj, const char *key)
{
	const cJSON *v = kt_json_get(obj, key);

	if (cJSON_IsTrue(v))
		return true;
	return cJSON_IsString(v) && !strcmp(v->valuestring, "true");
}

static const char *kc_str(const cJSON *obj, const char *key)
{
	const char *s = kt_json_get_string(obj, key);

	return s && *s ? s : NULL;
}

/* ------------------------------------------------------------ exec plugin */

static void exec_free(struct kt_kcfg_exec *ex)
{
	if (!ex)
		return;
	kt_spawn_cancel(ex->run);
	free(ex->run_envp);
	free(ex->run_info);
	while (ex->waiters) {
		struct kt_kcfg_wait *w = ex->waiters;

		ex->waiters = w->next;
		free(w);
	}
	while (ex->told) {
		struct kt_kcfg_wait *w = ex->told;

		ex->told = w->next;
		free(w);
	}
	free(ex->api_version);
	free(ex->command);
	for (size_t i = 0; ex->argv && ex->argv[i]; i++)
		free(ex->argv[i]);
	free(ex->argv);
	for (size_t i = 0; ex->env && ex->env[i]; i++)
		free(ex->env[i]);
	free(ex->env);
	free(ex->info);
	free(ex->hint);
	free(ex);
}

static char *exec_info(const struct kt_kcfg *cfg, const char *api_version,
		       bool cluster_info)
{
	cJSON *doc = cJSON_CreateObject(), *spec = cJSON_CreateObject(), *cl = NULL;
	char *out = NULL;

	if (!doc || !spec)
		goto fail;
	cJSON_AddStringToObject(doc, "apiVersion", api_version);
	cJSON_AddStringToObject(doc, "kind", "ExecCredential");
	if (cluster_info) {
		cl = cJSON_CreateObject();
		if (!cl)
			goto fail;
		cJSON_AddStringToObject(cl, "server", cfg->server);
		if (cfg->tls_server_name)
			cJSON_AddStringToObject(cl, "tls-server-name",
						cfg->tls_server_name);
		if (cfg->insecure)
			cJSON_AddTrueToObject(cl, "insecure-skip-tls-verify");
		if (cfg->ca_pem) {
			char *b = kt_base64_encode(cfg->ca_pem, cfg->ca_len);

			if (!b)
				goto fail;
			cJSON_AddStringToObject(cl, "certificate-authority-data", b);
			free(b);
		}
		if (cfg->proxy_url)
			cJSON_AddStringToObject(cl, "proxy-url", cfg->proxy_url);
		cJSON_AddItemToObject(spec, "cluster", cl);
		cl = NULL;
	}
	cJSON_AddBoolToObject(spec, "interactive", false);
	cJSON_AddItemToObject(doc, "spec", spec);
	spec = NULL;
	out = kt_json_print(doc, KT_JSON_NO_NEWLINE);
fail:
	cJSON_Delete(cl);
	cJSON_Delete(spec);
	cJSON_Delete(doc);
	return out;
}

/* the exec section of a user; src names the user for messages */
static int exec_parse(struct kt_kcfg *cfg, const cJSON *ec, const struct kc_file *from,
		      const char *src, struct kt_err *err)
{
	struct kt_kcfg_exec *ex = calloc(1, sizeof(*ex));
	const char *cmd = kc_str(ec, "command"), *ver = kc_str(ec, "apiVersion"), *mode;
	const cJSON *args = kt_json_get_array(ec, "args"),
		    *env = kt_json_get_array(ec, "env");
	const cJSON *e;
	size_t n = 0;
	int rc = -1;

	if (!ex)
		return kt_error(err, "out of memory");
	if (!cmd) {
		kt_error(err, "%s: exec has no command", src);
		goto out;
	}
	if (!ver || (strcmp(ver, "client.authentication.k8s.io/v1") &&
		     strcmp(ver, "client.authentication.k8s.io/v1beta1"))) {
		kt_error(err, "%s: exec apiVersion '%s' is not supported "
			 "(client.authentication.k8s.io/v1 or v1beta1)", src,
			 ver ? ver : "");
		goto out;
	}
	/* the plugin's stdin is never a terminal here */
	mode = kc_str(ec, "interactiveMode");
	if (mode && !strcmp(mode, "Always")) {
		kt_error(err, "%s: exec plugin needs a terminal (interactiveMode "
			 "Always)", src);
		goto out;
	}
	if (kc_str(ec, "installHint")) {
		ex->hint = strdup(kc_str(ec, "installHint"));
		if (!ex->hint)
			goto oom;
		for (char *p = ex->hint; *p; p++)
			*p = *p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p;
		for (size_t l = strlen(ex->hint); l && ex->hint[l - 1] == ' '; l--)
			ex->hint[l - 1] = '\0';
	}
	ex->api_version = strdup(ver);
	ex->command = strchr(cmd, '/') ? kc_path(ec, "command", from) : strdup(cmd);
	ex->argv = calloc((size_t)cJSON_GetArraySize(args) + 2, sizeof(char *));
	ex->env = calloc((size_t)cJSON_GetArraySize(env) + 1, sizeof(char *));
	if (!ex->api_version || !ex->command || !ex->argv || !ex->env)
		goto oom;
	ex->argv[n++] = strdup(ex->command);
	cJSON_ArrayForEach (e, args) {
		if (!cJSON_IsString(e)) {
			kt_error(err, "%s: exec args must be strings", src);
			goto out;
		}
		ex->argv[n] = strdup(e->valuestring);
		if (!ex->argv[n++])
			goto oom;
	}
	n = 0;
	cJSON_ArrayForEach (e, env) {
		const char *name = kc_str(e, "name"),
			   *value = kt_json_get_string(e, "value");

		if (!name || !value || strchr(name, '=')) {
			kt_error(err, "%s: exec env entries need a name and a value",
				 src);
			goto out;
		}
		ex->env[n] = str_join(name, '=', value);
		if (!ex->env[n++])
			goto oom;
	}
	ex->info = exec_info(cfg, ver, kc_bool(ec, "provideClusterInfo"));
	if (!ex->info)
		goto oom;
	cfg->exec = ex;
	ex = NULL;
	rc = 0;
	goto out;
oom:
	kt_error(err, "out of memory");
out:
	exec_free(ex);
	return rc;
}

/* environ with the plugin's variables replacing same-named ones; caller frees it */
static char **exec_envp(const struct kt_kcfg_exec *ex, char *info_kv)
{
	size_t n = 0, m = 0, k = 0;
	char **envp;

	while (environ && environ[n])
		n++;
	while (ex->env[m])
		m++;
	envp = calloc(n + m + 2, sizeof(char *));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t nl = strcspn(environ[i], "=");
		bool over = !strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21);

		for (size_t j = 0; j < m && !over; j++)
			over = !strncmp(environ[i], ex->env[j], nl + 1);
		if (!over)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		envp[k++] = ex->env[j];
	envp[k++] = info_kv;
	return envp;
}

/* the plugin's spawn options; *envp and *info_kv are the caller's to free */
static int exec_opts(const struct kt_kcfg_exec *ex, int64_t timeout_ms,
		     struct kt_spawn_opts *o, char ***envp, char **info_kv,
		     struct kt_err *err)
{
	*info_kv = str_join("KUBERNETES_EXEC_INFO", '=', ex->info);
	*envp = *info_kv ? exec_envp(ex, *info_kv) : NULL;
	if (!*envp) {
		free(*info_kv);
		*info_kv = NULL;
		return kt_error(err, "out of memory");
	}
	memset(o, 0, sizeof(*o));
	o->argv = ex->argv;
	o->envp = *envp;
	o->output = KT_SPAWN_STDOUT;
	o->over = KT_SPAWN_OVER_KILL;
	o->out_max = EXEC_OUT_MAX;
	o->timeout_ms = timeout_ms;
	return 0;
}

static int exec_start_error(const struct kt_kcfg_exec *ex, int e, struct kt_err *err)
{
	return kt_error(err, "exec plugin '%s': cannot run it: %s%s%s", ex->command,
			strerror(e), ex->hint ? ": " : "", ex->hint ? ex->hint : "");
}

/* how the run ended: 0 when the plugin exited 0, else -1 with err */
static int exec_outcome(const struct kt_kcfg_exec *ex, int64_t timeout_ms,
			const struct kt_spawn_result *res, struct kt_err *err)
{
	char tmo[32];

	if (res->timed_out)
		return kt_error(err, "exec plugin '%s' did not finish within %s",
				ex->command,
				kt_duration_format(timeout_ms, tmo, sizeof(tmo)));
	if (res->too_big)
		return kt_error(err,
				"exec plugin '%s' printed more than %zu bytes (1 MiB)",
				ex->command, EXEC_OUT_MAX);
	/* posix_spawnp reports an exec failure before the child runs; a shell
	 * wrapper's "not found" comes back as 127 */
	if (WIFSIGNALED(res->status))
		return kt_error(err, "exec plugin '%s' was killed by signal %d",
				ex->command, WTERMSIG(res->status));
	if (WEXITSTATUS(res->status) != 0)
		return kt_error(err, "exec plugin '%s' failed with exit status %d",
				ex->command, WEXITSTATUS(res->status));
	return 0;
}

/* runs the plugin, blocking, its stdout into res; -1 with err naming the command */
static int exec_run(const struct kt_kcfg_exec *ex, int64_t timeout_ms,
		    struct kt_spawn_result *res, struct kt_err *err)
{
	struct kt_spawn_opts o;
	char **envp = NULL, *info_kv = NULL;
	int rc = -1, e = 0;

	memset(res, 0, sizeof(*res));
	if (exec_opts(ex, timeout_ms, &o, &envp, &info_kv, err) < 0)
		return -1;
	if (kt_spawn_run(&o, res, &e, err) < 0)
		exec_start_error(ex, e, err);
	else
		rc = exec_outcome(ex, timeout_ms, res, err);
	free(envp);
	free(info_kv);
	return rc;
}

static void secret_free(char *s, size_t n)
{
	if (s)
		memset(s, 0, n);
	free(s);
}

/* takes the credential out of the plugin's ExecCredential */
static int exec_apply(struct kt_kcfg *cfg, const cJSON *doc, struct kt_err *err)
{
	struct kt_kcfg_exec *ex = cfg->exec;
	const cJSON *st = kt_json_get_object(doc, "status");
	const char *ver = kt_json_get_string(doc, "apiVersion");
	const char *kind = kt_json_get_string(doc, "kind");
	const char *tok = kc_str(st, "token"), *crt = kc_str(st, "clientCertificateData");
	const char *key = kc_str(st, "clientKeyData"),
		   *exp = kc_str(st, "expirationTimestamp");
	int64_t expiry = 0;

	if (!cJSON_IsObject(doc) || !kind || strcmp(kind, "ExecCredential")) {
		return kt_error(err,
				"exec plugin '%s' printed something that is not an "
				"ExecCredential",
				ex->command);
	}
	if (!ver || strcmp(ver, ex->api_version)) {
		return kt_error(err,
				"exec plugin '%s' answered with apiVersion '%s', "
				"expected '%s'",
				ex->command, ver ? ver : "", ex->api_version);
	}
	if (!tok && !crt)
		return kt_error(err, "exec plugin '%s': ExecCredential has neither "
				"status.token nor status.clientCertificateData",
				ex->command);
	if (!crt != !key)
		return kt_error(err,
				"exec plugin '%s': ExecCredential needs both "
				"clientCertificateData and clientKeyData",
				ex->command);
	if (crt && (!pem_is_cert(crt, strlen(crt)) || !pem_is_key(key, strlen(key))))
		return kt_error(err,
				"exec plugin '%s': ExecCredential certificate or key "
				"is not PEM",
				ex->command);
	if (exp && kt_time_parse(exp, &expiry, NULL) < 0)
		return kt_error(err, "exec plugin '%s': invalid expirationTimestamp '%s'",
				ex->command, exp);
	if (tok && !kt_kcfg_token_ok(tok))
		return kt_error(err,
				"exec plugin '%s': status.token has a control "
				"character and cannot go in a header",
				ex->command);
	ex->have = true;
	ex->expiry_us = expiry;
	if ((!tok || (cfg->token && !strcmp(cfg->token, tok))) &&
	    (!crt || (cfg->cert_pem && !strcmp(cfg->cert_pem, crt) && cfg->key_pem &&
		      !strcmp(cfg->key_pem, key))))
		return 0;	/* the same credential: no new generation */
	if (tok) {
		char *t = strdup(tok);

		if (!t)
			return kt_error(err, "out of memory");
		secret_free(cfg->token, cfg->token ? strlen(cfg->token) : 0);
		cfg->token = t;
	}
	if (crt) {
		char *c = strdup(crt), *k = strdup(key);

		if (!c || !k) {
			free(c);
			free(k);
			return kt_error(err, "out of memory");
		}
		free(cfg->cert_pem);
		secret_free(cfg->key_pem, cfg->key_len);
		cfg->cert_pem = c;
		cfg->cert_len = strlen(c);
		cfg->key_pem = k;
		cfg->key_len = strlen(k);
	}
	cfg->generation++;
	return 1;
}

/* the ExecCredential the plugin printed, into cfg: 1, or -1 with err */
static int exec_take(struct kt_kcfg *cfg, const char *out, size_t len, struct kt_err *err)
{
	cJSON *doc = cJSON_ParseWithLength(out ? out : "", len);
	int rc = -1;

	if (!doc) {
		kt_error(err, "exec plugin '%s' printed something that is not JSON",
			 cfg->exec->command);
		return -1;
	}
	rc = exec_apply(cfg, doc, err);
	{
		/* the credential is copied out; wipe the parsed copy */
		cJSON *st = kt_json_get_object(doc, "status"), *f;

		cJSON_ArrayForEach (f, st)
			if (cJSON_IsString(f))
				memset(f->valuestring, 0, strlen(f->valuestring));
	}
	cJSON_Delete(doc);
	return rc;
}

static bool exec_fresh(const struct kt_kcfg_exec *ex)
{
	return ex->have &&
	       (ex->expiry_us == 0 || kt_now_us() + EXEC_EXPIRY_SLACK_US < ex->expiry_us);
}

/* a run for a refused credential that gave it back unchanged marks it */
static void exec_refused(struct kt_kcfg *cfg, bool forced, int rc)
{
	if (forced && rc == 0) {
		cfg->exec->refused = true;
		cfg->exec->refused_gen = cfg->generation;
	}
}

static int exec_refresh(struct kt_kcfg *cfg, bool force, struct kt_err *err)
{
	struct kt_kcfg_exec *ex = cfg->exec;
	struct kt_spawn_result res;
	int rc = -1;

	if (!force && exec_fresh(ex))
		return 0;
	/* blocking calls go one at a time: the 401 came with the current one */
	if (force && ex->refused && ex->refused_gen == cfg->generation)
		return 0;
	KT_V(4, "running exec credential plugin", "command=\"%s\"", ex->command);
	if (exec_run(ex, cfg->timeout_ms, &res, err) == 0)
		rc = exec_take(cfg, res.out, res.out_len, err);
	kt_spawn_result_release(&res);
	exec_refused(cfg, force, rc);
	return rc;
}

/* the run on the loop ended: every call waiting for it goes on */
static void on_plugin_done(struct kt_spawn *sp, struct kt_spawn_result *res, void *arg)
{
	struct kt_kcfg_exec *ex = arg;
	struct kt_kcfg_wait *w;
	struct kt_err err = { 0 };
	int rc = -1;

	ex->run = NULL;
	ex->told = ex->waiters;
	ex->waiters = NULL;
	free(ex->run_envp);
	free(ex->run_info);
	ex->run_envp = NULL;
	ex->run_info = NULL;
	if (exec_outcome(ex, ex->run_timeout_ms, res, &err) == 0)
		rc = exec_take(ex->cfg, res->out, res->out_len, &err);
	exec_refused(ex->cfg, ex->run_forced, rc);
	ex->run_forced = false;
	KT_V(4, "exec credential plugin ended", "command=\"%s\" ok=%s", ex->command,
	     rc < 0 ? "false" : "true");
	/* one at a time off the list: a callback may cancel a later waiter */
	while (ex->told) {
		w = ex->told;
		ex->told = w->next;
		w->fn(w->arg, rc, rc < 0 ? &err : NULL);
		free(w);
	}
}

int kt_kcfg_refresh_async(struct kt_kcfg *cfg, struct kt_loop *loop, bool force,
			  unsigned stale_generation, kt_kcfg_fresh_fn *fn, void *arg,
			  struct kt_kcfg_wait **wait, struct kt_err *err)
{
	struct kt_kcfg_exec *ex = cfg->exec;
	struct kt_kcfg_wait *w;
	struct kt_spawn_opts o;
	int e = 0;

	*wait = NULL;
	if (!ex)
		return kt_kcfg_refresh(cfg, force, err);
	/* client-go's rule: a 401 refreshes only the credential that got it */
	if (force && cfg->generation != stale_generation)
		return 1;
	/* ... and once: a credential the plugin gave back unchanged stays refused */
	if (force && ex->refused && ex->refused_gen == stale_generation)
		return 0;
	if (!force && exec_fresh(ex))
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return kt_error(err, "out of memory");
	w->fn = fn;
	w->arg = arg;
	if (!ex->run) {
		KT_V(4, "running exec credential plugin", "command=\"%s\"", ex->command);
		ex->cfg = cfg;
		ex->run_timeout_ms = cfg->timeout_ms;
		if (exec_opts(ex, cfg->timeout_ms, &o, &ex->run_envp, &ex->run_info,
			      err) < 0) {
			free(w);
			return -1;
		}
		ex->run = kt_spawn_start(loop, &o, on_plugin_done, ex, &e, err);
		if (!ex->run) {
			free(ex->run_envp);
			free(ex->run_info);
			ex->run_envp = NULL;
			ex->run_info = NULL;
			free(w);
			return e ? exec_start_error(ex, e, err) : -1;
		}
	}
	ex->run_forced |= force;
	w->next = ex->waiters;
	ex->waiters = w;
	*wait = w;
	return 2;
}

void kt_kcfg_refresh_cancel(struct kt_kcfg *cfg, struct kt_kcfg_wait *wait)
{
	struct kt_kcfg_wait **pp;

	struct kt_kcfg_exec *ex = cfg->exec;

	if (!wait || !ex)
		return;
	for (int i = 0; i < 2; i++) {
		for (pp = i ? &ex->told : &ex->waiters; *pp && *pp != wait; pp = &(*pp)->next)
			;
		if (*pp) {
			*pp = wait->next;
			free(wait);
			break;
		}
	}
	/* nobody waits any more: the run goes, before its loop may */
	if (ex->run && !ex->waiters && !ex->told) {
		kt_spawn_cancel(ex->run);
		ex->run = NULL;
		free(ex->run_envp);
		free(ex->run_info);
		ex->run_envp = NULL;
		ex->run_info = NULL;
	}
}

/* ------------------------------------------------------------- token file */

static int token_file_refresh(struct kt_kcfg *cfg, struct kt_err *err)
{
	struct kt_file_id id;
	char *buf = NULL;
	size_t len = 0;

	if (kt_file_id_get(cfg->token_file, &id) < 0)
		return kt_error(err, "cannot read token file '%s': %s", cfg->token_file,
				strerror(errno));
	if (cfg->token && kt_file_id_same(&id, &cfg->token_id))
		return 0;
	if (read_all("token file", cfg->token_file, 1 << 20, &buf, &len, err) < 0)
		return -1;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
		       buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		buf[--len] = '\0';
	if (len == 0) {
		free(buf);
		return kt_error(err, "token file '%s' is empty", cfg->token_file);
	}
	if (!kt_kcfg_token_ok(buf)) {
		secret_free(buf, len);
		return kt_error(err,
				"token file '%s' has a control character (a line "
				"break?) before its end; only trailing whitespace is "
				"trimmed",
				cfg->token_file);
	}
	cfg->token_id = id;
	if (cfg->token && !strcmp(cfg->token, buf)) {
		secret_free(buf, len);
		return 0;
	}
	secret_free(cfg->token, cfg->token ? strlen(cfg->token) : 0);
	cfg->token = buf;
	cfg->generation++;
	return 1;
}

/* ------------------------------------------ client certificate and key files */

/*
 * A rotation replaces the files by rename (or the one file holding both):
 * when either changed, both are read again and the pair is taken only when
 * both read as PEM.  A pair caught half rotated (two files, one renamed)
 * is taken now and again when the second rename lands; the server then
 * refuses the handshake of the one request in between, which its retry
 * answers.
 */
static int cert_files_refresh(struct kt_kcfg *cfg)
{
	struct kt_file_id cid, kid;
	char *cert = NULL, *key = NULL;
	size_t clen = 0, klen = 0;
	struct kt_err rerr = { 0 };
	bool same;

	kt_file_id_get(cfg->cert_file, &cid);
	kt_file_id_get(cfg->key_file, &kid);
	if (kt_file_id_same(&cid, &cfg->cert_id) && kt_file_id_same(&kid, &cfg->key_id))
		return 0;
	if ((cfg->cert_file &&
	     pem_from_file(PEM_CERT, cfg->cert_file, &cert, &clen, &rerr) < 0) ||
	    (cfg->key_file && pem_from_file(PEM_KEY, cfg->key_file, &key, &klen, &rerr) < 0)) {
		/* said once for this state of the files; a later change is tried */
		cfg->cert_id = cid;
		cfg->key_id = kid;
		KT_WARN("client certificate not reloaded, the one loaded stays in use",
			"error=\"%s\"", rerr.msg);
		free(cert);
		secret_free(key, klen);
		return 0;
	}
	cfg->cert_id = cid;
	cfg->key_id = kid;
	same = (!cert || (clen == cfg->cert_len && !memcmp(cert, cfg->cert_pem, clen))) &&
	       (!key || (klen == cfg->key_len && !memcmp(key, cfg->key_pem, klen)));
	if (same) {
		free(cert);
		secret_free(key, klen);
		return 0;
	}
	if (cert) {
		free(cfg->cert_pem);
		cfg->cert_pem = cert;
		cfg->cert_len = clen;
	}
	if (key) {
		secret_free(cfg->key_pem, cfg->key_len);
		cfg->key_pem = key;
		cfg->key_len = klen;
	}
	cfg->generation++;
	KT_V(1, "client certificate reloaded", "file=\"%s\"",
	     cfg->cert_file ? cfg->cert_file : cfg->key_file);
	return 1;
}

int kt_kcfg_refresh(struct kt_kcfg *cfg, bool force, struct kt_err *err)
{
	int certs = cfg->cert_file || cfg->key_file ? cert_files_refresh(cfg) : 0;
	int r;

	if (cfg->exec)
		r = exec_refresh(cfg, force, err);
	else if (cfg->token_file)
		r = token_file_refresh(cfg, err);
	else
		r = 0;
	return r < 0 ? -1 : (r || certs);
}

bool kt_kcfg_can_refresh(const struct kt_kcfg *cfg)
{
	return cfg->exec || cfg->token_file;
}

/* ------------------------------------------------------------ resolving */

static int set_server(struct kt_kcfg *cfg, const char *url, const char *src,
		      struct kt_err *err)
{
	size_t n;

	if (!kt_kcfg_server_ok(url))
		return kt_error(err, "%s: server '%s' is not an http(s) URL", src, url);
	cfg->server = strdup(url);
	if (!cfg->server)
		return kt_error(err, "out of memory");
	n = strlen(cfg->server);
	while (n > 0 && cfg->server[n - 1] == '/')
		cfg->server[--n] = '\0';
	return 0;
}

/* the cluster part: server, CA, TLS name, proxy */
static int apply_cluster(struct kt_kcfg *cfg, const cJSON *cl, const struct kc_file *from,
			 const char *src, struct kt_err *err)
{
	const char *data = kc_str(cl, "certificate-authority-data");
	char *path = NULL;
	int rc = -1;

	if (!cfg->server) {
		const char *server = kc_str(cl, "server");

		if (!server) {
			kt_error(err, "%s has no server", src);
			goto out;
		}
		if (set_server(cfg, server, src, err) < 0)
			goto out;
	}
	cfg->insecure = cfg->insecure || kc_bool(cl, "insecure-skip-tls-verify");
	if (kc_str(cl, "tls-server-name"))
		cfg->tls_server_name = strdup(kc_str(cl, "tls-server-name"));
	if (kc_str(cl, "proxy-url"))
		cfg->proxy_url = strdup(kc_str(cl, "proxy-url"));
	if (!cfg->ca_pem && data &&
	    pem_from_data(PEM_CA, src, "certificate-authority-data", data, &cfg->ca_pem,
			  &cfg->ca_len, err) < 0)
		goto out;
	path = kc_path(cl, "certificate-authority", from);
	if (!cfg->ca_pem && path &&
	    pem_from_file(PEM_CA, path, &cfg->ca_pem, &cfg->ca_len, err) < 0)
		goto out;
	rc = 0;
out:
	free(path);
	return rc;
}

/* one PEM setting of a user: -data wins over the file */
static int user_pem(enum pem_kind kind, const cJSON *u, const char *field,
		    const struct kc_file *from, const char *src, char **pem, size_t *len,
		    char **file, struct kt_err *err)
{
	char dfield[64];
	const char *data;
	char *path;
	int rc = 0;

	if (*pem)
		return 0;
	snprintf(dfield, sizeof(dfield), "%s-data", field);
	data = kc_str(u, dfield);
	if (data)
		return pem_from_data(kind, src, dfield, data, pem, len, err);
	path = kc_path(u, field, from);
	if (path)
		rc = pem_from_file(kind, path, pem, len, err);
	if (rc == 0 && path) {
		*file = path;
		return 0;
	}
	free(path);
	return rc;
}

/* the user part: token, token file, client certificate, exec */
static int apply_user(struct kt_kcfg *cfg, const cJSON *u, const struct kc_file *from,
		      const char *src, bool flag_token, struct kt_err *err)
{
	const cJSON *ap = kt_json_get_object(u, "auth-provider");

	if (user_pem(PEM_CERT, u, "client-certificate", from, src, &cfg->cert_pem,
		     &cfg->cert_len, &cfg->cert_file, err) < 0 ||
	    user_pem(PEM_KEY, u, "client-key", from, src, &cfg->key_pem, &cfg->key_len,
		     &cfg->key_file, err) < 0)
		return -1;
	if (flag_token)
		return 0;
	if (kc_str(u, "tokenFile")) {
		cfg->token_file = kc_path(u, "tokenFile", from);
		if (!cfg->token_file)
			return kt_error(err, "out of memory");
	} else if (kc_str(u, "token")) {
		if (!kt_kcfg_token_ok(kc_str(u, "token")))
			return kt_error(err, "%s: token has a control character (a line "
					"break?) and cannot go in a header", src);
		cfg->token = strdup(kc_str(u, "token"));
		if (!cfg->token)
			return kt_error(err, "out of memory");
	}
	if (kt_json_get_object(u, "exec"))
		return exec_parse(cfg, kt_json_get_object(u, "exec"), from, src, err);
	if (ap)
		return kt_error(err, "%s: auth-provider '%s' is not supported, use an "
				"exec plugin", src,
				kc_str(ap, "name") ? kc_str(ap, "name") : "");
	return 0;
}

/* the explicit flags that replace kubeconfig settings */
static int apply_flags_early(struct kt_kcfg *cfg, const struct kt_api_opts *o,
			     struct kt_err *err)
{
	if (o->server) {
		free(cfg->server);
		cfg->server = NULL;
		if (set_server(cfg, o->server, "--server", err) < 0)
			return -1;
	}
	if (o->ca_file &&
	    pem_from_file(PEM_CA, o->ca_file, &cfg->ca_pem, &cfg->ca_len, err) < 0)
		return -1;
	if (o->cert_file && (pem_from_file(PEM_CERT, o->cert_file, &cfg->cert_pem,
					   &cfg->cert_len, err) < 0 ||
			     !(cfg->cert_file = strdup(o->cert_file))))
		return cfg->cert_pem ? kt_error(err, "out of memory") : -1;
	if (o->key_file &&
	    (pem_from_file(PEM_KEY, o->key_file, &cfg->key_pem, &cfg->key_len, err) < 0 ||
	     !(cfg->key_file = strdup(o->key_file))))
		return cfg->key_pem ? kt_error(err, "out of memory") : -1;
	if (o->token || o->token_file) {
		secret_free(cfg->token, cfg->token ? strlen(cfg->token) : 0);
		free(cfg->token_file);
		cfg->token = o->token ? strdup(o->token) : NULL;
		cfg->token_file = o->token ? NULL : strdup(o->token_file);
		if (!cfg->token && !cfg->token_file)
			return kt_error(err, "out of memory");
	}
	cfg->insecure = cfg->insecure || o->insecure;
	cfg->timeout_ms = o->timeout_set ? o->timeout_ms : KT_KCFG_TIMEOUT_DEFAULT_MS;
	return 0;
}

static int resolve_context(struct kt_kcfg *cfg, const struct kc_set *set,
			   const struct kt_api_opts *o, struct kt_err *err)
{
	const struct kc_file *cf = NULL, *uf = NULL, *xf = NULL;
	const char *name = o->context ? o->context : kc_current_context(set);
	const cJSON *ctx, *cl, *u = NULL;
	const char *cname, *uname;
	char src[512];

	if (!name) {
		if (cfg->server)
			return 0;
		return kt_error(err, "kubeconfig '%s': no current-context set and no "
				"--context or --server given", set->source);
	}
	ctx = kc_find(set, "contexts", name, "context", &xf);
	if (!ctx)
		return kt_error(err, "kubeconfig '%s': context '%s' not found",
				set->source, name);
	cname = kc_str(ctx, "cluster");
	uname = kc_str(ctx, "user");
	cl = cname ? kc_find(set, "clusters", cname, "cluster", &cf) : NULL;
	if (!cl)
		return kt_error(err, "kubeconfig '%s': cluster '%s' not found for "
				"context '%s'", set->source, cname ? cname : "", name);
	if (uname) {
		u = kc_find(set, "users", uname, "user", &uf);
		if (!u)
			return kt_error(err, "kubeconfig '%s': user '%s' not found for "
					"context '%s'", set->source, uname, name);
	}
	cfg->context = strdup(name);
	cfg->cluster = strdup(cname);
	cfg->user = uname ? strdup(uname) : NULL;
	if (!cfg->context || !cfg->cluster || (uname && !cfg->user))
		return kt_error(err, "out of memory");
	snprintf(src, sizeof(src), "kubeconfig '%s': cluster '%s'", cf->path, cname);
	if (apply_cluster(cfg, cl, cf, src, err) < 0)
		return -1;
	snprintf(src, sizeof(src), "kubeconfig '%s': user '%s'", uf ? uf->path : "",
		 uname ? uname : "");
	if (u && apply_user(cfg, u, uf, src, o->token || o->token_file, err) < 0)
		return -1;
	return 0;
}

static int check_pair(struct kt_kcfg *cfg, struct kt_err *err)
{
	if (cfg->cert_pem && !cfg->key_pem)
		return kt_error(err, "%s: client certificate without a client key",
				cfg->source);
	if (cfg->key_pem && !cfg->cert_pem)
		return kt_error(err, "%s: client key without a client certificate",
				cfg->source);
	if (cfg->token_file && !cfg->exec && token_file_refresh(cfg, err) < 0)
		return -1;
	/* the files' identity as read: a later change reads them again */
	kt_file_id_get(cfg->cert_file, &cfg->cert_id);
	kt_file_id_get(cfg->key_file, &cfg->key_id);
	return 0;
}

void kt_kcfg_init(struct kt_kcfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
}

static void log_loaded(const struct kt_kcfg *cfg)
{
	KT_V(1, "config loaded",
	     "source=\"%s\" context=\"%s\" cluster=\"%s\" user=\"%s\" "
	     "server=\"%s\"",
	     cfg->source, cfg->context ? cfg->context : "",
	     cfg->cluster ? cfg->cluster : "", cfg->user ? cfg->user : "", cfg->server);
}

static bool incluster_possible(void)
{
	const char *h = getenv("KUBERNETES_SERVICE_HOST"),
		   *p = getenv("KUBERNETES_SERVICE_PORT");

	return h && *h && p && *p;
}

int kt_kcfg_load(struct kt_kcfg *cfg, const struct kt_api_opts *opts, struct kt_err *err)
{
	static const struct kt_api_opts none = { 0 };
	const struct kt_api_opts *o = opts ? opts : &none;
	struct kc_set set = { 0 };
	int rc = -1;

	kt_kcfg_init(cfg);
	if (kc_load_files(&set, o->kubeconfig, err) < 0)
		goto out;
	if (set.n == 0 && !o->server && incluster_possible()) {
		/* the service account, with the flags still overriding it */
		if (kt_kcfg_load_incluster(cfg, NULL, err) < 0 ||
		    apply_flags_early(cfg, o, err) < 0 || check_pair(cfg, err) < 0)
			goto out;
		rc = 0;
		goto out;
	}
	if (set.n == 0 && !o->server) {
		const char *env = getenv("KUBECONFIG");

		/* KUBECONFIG is set and names no file there is: say so, not "set it" */
		if (!o->kubeconfig && env && *env)
			kt_error(err, "no kubeconfig found: KUBECONFIG='%s' names no file "
				 "that exists; pass --kubeconfig or --server", env);
		else
			kt_error(err, "no kubeconfig found: set KUBECONFIG, create "
				 "~/.kube/config or pass --kubeconfig or --server");
		goto out;
	}
	cfg->source = strdup(set.n ? set.source : "flags");
	if (!cfg->source) {
		kt_error(err, "out of memory");
		goto out;
	}
	if (apply_flags_early(cfg, o, err) < 0 || resolve_context(cfg, &set, o, err) < 0)
		goto out;
	if (check_pair(cfg, err) < 0)
		goto out;
	log_loaded(cfg);
	rc = 0;
out:
	kc_set_release(&set);
	if (rc < 0)
		kt_kcfg_release(cfg);
	return rc;
}

int kt_kcfg_load_incluster(struct kt_kcfg *cfg, const char *sa_dir, struct kt_err *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *dir = sa_dir ? sa_dir : KT_KCFG_SA_DIR;
	char url[512], *ca = NULL;
	size_t n;
	int rc = -1;

	kt_kcfg_init(cfg);
	if (!host || !*host || !port || !*port) {
		kt_error(err, "in-cluster config: KUBERNETES_SERVICE_HOST and "
			      "KUBERNETES_SERVICE_PORT must be set");
		goto out;
	}
	n = (size_t)snprintf(url, sizeof(url), "https://");
	kt_url_host_port(url + n, sizeof(url) - n, host, 0);
	n = strlen(url);
	snprintf(url + n, sizeof(url) - n, ":%s", port);
	cfg->source = strdup("in-cluster");
	cfg->token_file = str_join(dir, '/', "token");
	ca = str_join(dir, '/', "ca.crt");
	if (!cfg->source || !cfg->token_file || !ca) {
		kt_error(err, "out of memory");
		goto out;
	}
	if (set_server(cfg, url, "in-cluster config", err) < 0 ||
	    pem_from_file(PEM_CA, ca, &cfg->ca_pem, &cfg->ca_len, err) < 0 ||
	    token_file_refresh(cfg, err) < 0)
		goto out;
	cfg->timeout_ms = KT_KCFG_TIMEOUT_DEFAULT_MS;
	log_loaded(cfg);
	rc = 0;
out:
	free(ca);
	if (rc < 0)
		kt_kcfg_release(cfg);
	return rc;
}

void kt_kcfg_release(struct kt_kcfg *cfg)
{
	if (!cfg)
		return;
	free(cfg->source);
	free(cfg->context);
	free(cfg->cluster);
	free(cfg->user);
	free(cfg->server);
	free(cfg->tls_server_name);
	free(cfg->proxy_url);
	free(cfg->ca_pem);
	free(cfg->cert_pem);
	secret_free(cfg->key_pem, cfg->key_len);
	secret_free(cfg->token, cfg->token ? strlen(cfg->token) : 0);
	free(cfg->token_file);
	free(cfg->cert_file);
	free(cfg->key_file);
	exec_free(cfg->exec);
	memset(cfg, 0, sizeof(*cfg));
}
