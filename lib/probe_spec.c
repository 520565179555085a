/* SPDX-License-Identifier: Apache-2.0 */
/* probe_spec: a Probe object to a validated struct kt_probe_spec, upstream defaults */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core.h"
#include "json.h"
#include "probe.h"

static const char *const result_names[] = { "success", "warning", "failure", "unknown" };
static const char *const type_names[] = { "liveness", "readiness", "startup" };

const char *kt_probe_result_name(enum kt_probe_result r)
{
	if ((unsigned)r >= sizeof(result_names) / sizeof(result_names[0]))
		return "unknown";
	return result_names[r];
}

const char *kt_probe_type_name(enum kt_probe_type t)
{
	if ((unsigned)t >= sizeof(type_names) / sizeof(type_names[0]))
		return "unknown";
	return type_names[t];
}

int kt_probe_type_parse(const char *s, enum kt_probe_type *out)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (s && strcmp(s, type_names[i]) == 0) {
			*out = (enum kt_probe_type)i;
			return 0;
		}
	}
	return -1;
}

/* "field.child: text", kind KT_ERR_INPUT, as field.ErrorList prints one entry */
static int field_error(struct kt_err *err, const char *field, const char *child,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int field_error(struct kt_err *err, const char *field, const char *child,
		       const char *fmt, ...)
{
	char text[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (child && *child)
		return kt_error_kind(err, KT_ERR_INPUT, "%s.%s: %s", field, child, text);
	return kt_error_kind(err, KT_ERR_INPUT, "%s: %s", field, text);
}

/* the item's JSON text cut to fit a message; buf of at least 96 bytes */
static const char *value_text(const cJSON *item, char *buf, size_t size)
{
	char *s = kt_json_print(item, KT_JSON_NO_NEWLINE);

	snprintf(buf, size, "%s", s ? s : "?");
	if (s && strlen(s) >= size && size > 4)
		memcpy(buf + size - 4, "...", 4);
	free(s);
	return buf;
}

/* an int32 field >= 0, 0 or absent giving def (def 0: no default) */
static int get_count(const cJSON *probe, const char *key, int64_t def, int64_t *out,
		     const char *field, struct kt_err *err)
{
	const cJSON *item = kt_json_get(probe, key);
	char buf[96];
	int64_t v = 0;

	*out = def;
	if (!item || cJSON_IsNull(item))
		return 0;
	if (!kt_json_is_number(item) || kt_json_num_int64(item, &v, NULL) < 0)
		return field_error(err, field, key, "Invalid value: %s: must be an integer",
				   value_text(item, buf, sizeof(buf)));
	if (v < 0)
		return field_error(err, field, key,
				   "Invalid value: %lld: must be greater than or equal to 0",
				   (long long)v);
	if (v > INT32_MAX)
		return field_error(err, field, key,
				   "Invalid value: %lld: must be no more than 2147483647",
				   (long long)v);
	if (v > 0 || def == 0)
		*out = v;
	return 0;
}

/* a string field; absent or null leaves *out NULL; a copy the caller owns */
static int get_str(const cJSON *obj, const char *key, char **out, const char *field,
		   struct kt_err *err)
{
	const cJSON *item = kt_json_get(obj, key);
	char buf[96];

	*out = NULL;
	if (!item || cJSON_IsNull(item))
		return 0;
	if (!cJSON_IsString(item))
		return field_error(err, field, key, "Invalid value: %s: must be a string",
				   value_text(item, buf, sizeof(buf)));
	*out = strdup(item->valuestring);
	if (!*out)
		return kt_error(err, "out of memory");
	return 0;
}

/* IANA_SVC_NAME as upstream validates a port name; NULL when valid */
static const char *svc_name_problem(const char *s)
{
	size_t n = strlen(s);
	bool letter = false;

	if (n == 0 || n > 15)
		return "must be no more than 15 characters";
	for (size_t i = 0; i < n; i++) {
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) ||
		      s[i] == '-'))
			return "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)";
		if (islower((unsigned char)s[i]))
			letter = true;
		if (s[i] == '-' && s[i + 1] == '-')
			return "must not contain consecutive hyphens";
	}
	if (!letter)
		return "must contain at least one letter (a-z)";
	if (s[0] == '-' || s[n - 1] == '-')
		return "must not begin or end with a hyphen";
	return NULL;
}

/* containerPort of the port named name in container, or 0 */
static int named_port(const cJSON *container, const char *name)
{
	const cJSON *ports = kt_json_get_array(container, "ports");
	const cJSON *p;
	int64_t v;

	cJSON_ArrayForEach(p, ports) {
		const char *pn = kt_json_get_string(p, "name");
		const cJSON *num = kt_json_get(p, "containerPort");

		if (!pn || strcmp(pn, name) != 0 || !kt_json_is_number(num))
			continue;
		if (kt_json_num_int64(num, &v, NULL) < 0 || v < 1 || v > 65535)
			continue;
		return (int)v;
	}
	return 0;
}

/* port: an int 1-65535, or (named_ok) a port name of the container */
static int get_port(const cJSON *action, bool named_ok, const cJSON *container, int *port,
		    const char *field, struct kt_err *err)
{
	const cJSON *item = kt_json_get(action, "port");
	const char *why;
	char buf[96];
	int64_t v;

	if (!item || cJSON_IsNull(item))
		return field_error(err, field, "port", "Required value");
	if (kt_json_is_number(item)) {
		if (kt_json_num_int64(item, &v, NULL) < 0)
			return field_error(err, field, "port", "Invalid value: %s: must be an integer",
					   value_text(item, buf, sizeof(buf)));
		if (v < 1 || v > 65535)
			return field_error(err, field, "port",
					   "Invalid value: %lld: must be between 1 and 65535, inclusive",
					   (long long)v);
		*port = (int)v;
		return 0;
	}
	if (!cJSON_IsString(item) || !named_ok)
		return field_error(err, field, "port", "Invalid value: %s: must be an integer",
				   value_text(item, buf, sizeof(buf)));
	why = svc_name_problem(item->valuestring);
	if (why)
		return field_error(err, field, "port", "Invalid value: %s: %s",
				   value_text(item, buf, sizeof(buf)), why);
	*port = named_port(container, item->valuestring);
	if (*port == 0)
		return field_error(err, field, "port", "Not found: %s",
				   value_text(item, buf, sizeof(buf)));
	return 0;
}

/* Go's textproto.CanonicalMIMEHeaderKey for a valid token: "x-foo" -> "X-Foo" */
static void canonical_header(char *name)
{
	bool upper = true;

	for (char *p = name; *p; p++) {
		*p = upper ? (char)toupper((unsigned char)*p) : (char)tolower((unsigned char)*p);
		upper = *p == '-';
	}
}

static bool header_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '-')
			return false;
	}
	return true;
}

static int parse_headers(struct kt_probe_spec *spec, const cJSON *hdrs, const char *field,
			 struct kt_err *err)
{
	char path[96], buf[96];
	const cJSON *h;
	size_t i = 0;
	int n;

	if (!hdrs || cJSON_IsNull(hdrs))
		return 0;
	if (!cJSON_IsArray(hdrs))
		return field_error(err, field, "httpHeaders", "Invalid value: %s: must be a list",
				   value_text(hdrs, buf, sizeof(buf)));
	n = cJSON_GetArraySize(hdrs);
	spec->headers = calloc((size_t)n + 1, sizeof(*spec->headers));
	if (!spec->headers)
		return kt_error(err, "out of memory");
	cJSON_ArrayForEach(h, hdrs) {
		struct kt_probe_header *kh = &spec->headers[i];

		snprintf(path, sizeof(path), "httpHeaders[%zu]", i);
		spec->nheaders = ++i;
		if (!cJSON_IsObject(h))
			return field_error(err, field, path, "Invalid value: %s: must be an object",
					   value_text(h, buf, sizeof(buf)));
		snprintf(path, sizeof(path), "httpHeaders[%zu].name", i - 1);
		if (get_str(h, "name", &kh->name, field, err) < 0)
			return -1;
		if (!kh->name || !header_name_ok(kh->name))
			return field_error(err, field, path,
					   "Invalid value: \"%s\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name')",
					   kh->name ? kh->name : "");
		canonical_header(kh->name);
		snprintf(path, sizeof(path), "httpHeaders[%zu].value", i - 1);
		if (get_str(h, "value", &kh->value, field, err) < 0)
			return -1;
		if (!kh->value)
			kh->value = strdup("");
		if (!kh->value)
			return kt_error(err, "out of memory");
		if (strpbrk(kh->value, "\r\n"))
			return field_error(err, field, path,
					   "Invalid value: \"%s\": must not contain a line break",
					   kh->name);
	}
	return 0;
}

static int parse_http(struct kt_probe_spec *spec, const cJSON *a, const cJSON *container,
		      const char *field, struct kt_err *err)
{
	char *scheme = NULL;
	int rc = -1;

	if (!cJSON_IsObject(a)) {
		field_error(err, field, NULL, "Invalid value: must be an object");
		goto out;
	}
	if (get_str(a, "scheme", &scheme, field, err) < 0 ||
	    get_str(a, "host", &spec->host, field, err) < 0 ||
	    get_str(a, "path", &spec->path, field, err) < 0)
		goto out;
	if (scheme && *scheme && strcmp(scheme, "HTTP") != 0 && strcmp(scheme, "HTTPS") != 0) {
		field_error(err, field, "scheme",
			    "Unsupported value: \"%s\": supported values: \"HTTP\", \"HTTPS\"",
			    scheme);
		goto out;
	}
	spec->https = scheme && strcmp(scheme, "HTTPS") == 0;
	if (!spec->path || !*spec->path) {
		free(spec->path);
		spec->path = strdup("/");
		if (!spec->path) {
			kt_error(err, "out of memory");
			goto out;
		}
	}
	if (get_port(a, true, container, &spec->port, field, err) < 0 ||
	    parse_headers(spec, kt_json_get(a, "httpHeaders"), field, err) < 0)
		goto out;
	rc = 0;
out:
	free(scheme);
	return rc;
}

/*
 * The container's env as the kubelet's map for probe commands: every entry's
 * name to its raw value (a valueFrom entry has none, so it maps to ""), the
 * last definition winning.  Values are never expanded themselves: a
 * reference inside a value stays as written, as upstream's map holds it.
 * Borrowed from the container.
 */
struct env {
	const char **names;
	const char **values;
	size_t n;
};

static void env_release(struct env *e)
{
	free(e->names);
	free(e->values);
}

static const char *env_lookup(const struct env *e, const char *name, size_t len)
{
	for (size_t i = e->n; i-- > 0;) {
		if (strlen(e->names[i]) == len && strncmp(e->names[i], name, len) == 0)
			return e->values[i];
	}
	return NULL;
}

/*
 * Kubernetes' $(VAR) expansion of a command argument: "$$" is a literal "$",
 * a defined $(VAR) is its value, an undefined one or an unclosed "$(" stays
 * as written.  *total counts the bytes of the whole command so far: over
 * KT_PROBE_MAX_COMMAND the expansion stops with -2.  -1 on allocation
 * failure; else 0 and *res (caller frees).
 */
/* over KT_PROBE_MAX_COMMAND: the argument alone, or with the command so far */
static bool too_long(size_t total, size_t n)
{
	return n + 1 > KT_PROBE_MAX_COMMAND || total + n > KT_PROBE_MAX_COMMAND;
}

static int expand(const char *s, const struct env *e, size_t *total, char **res)
{
	struct kt_sb out = { 0 };

	kt_sb_put(&out, "", 0);
	while (!out.oom && !too_long(*total, out.len) && *s) {
		const char *close = s[0] == '$' && s[1] == '(' ? strchr(s + 2, ')') : NULL;
		const char *v = close ? env_lookup(e, s + 2, (size_t)(close - s - 2)) : NULL;

		if (s[0] == '$' && s[1] == '$') {
			kt_sb_put(&out, "$", 1);
			s += 2;
		} else if (close) {
			kt_sb_put(&out, v ? v : s, v ? strlen(v) : (size_t)(close - s + 1));
			s = close + 1;
		} else {
			kt_sb_put(&out, s, 1);
			s++;
		}
	}
	if (out.oom || too_long(*total, out.len)) {
		int rc = out.oom ? -1 : -2;

		kt_sb_release(&out);
		return rc;
	}
	*total += out.len + 1;
	*res = out.buf;
	return 0;
}

static int env_load(struct env *e, const cJSON *container, struct kt_err *err)
{
	const cJSON *list = kt_json_get_array(container, "env"), *v;
	int size = cJSON_GetArraySize(list);

	memset(e, 0, sizeof(*e));
	if (size <= 0)
		return 0;
	e->names = calloc((size_t)size, sizeof(*e->names));
	e->values = calloc((size_t)size, sizeof(*e->values));
	if (!e->names || !e->values)
		return kt_error(err, "out of memory");
	cJSON_ArrayForEach(v, list) {
		const char *name = kt_json_get_string(v, "name");
		const char *value = kt_json_get_string(v, "value");

		if (!name)
			continue;
		e->values[e->n] = value ? value : "";
		e->names[e->n++] = name;
	}
	return 0;
}

static int parse_argv(struct kt_probe_spec *spec, const cJSON *cmd, const struct env *env,
		      const char *field, struct kt_err *err)
{
	const cJSON *arg;
	char path[64], buf[96];
	size_t total = 0;
	int rc;

	spec->argv = calloc((size_t)cJSON_GetArraySize(cmd) + 1, sizeof(char *));
	if (!spec->argv)
		return kt_error(err, "out of memory");
	cJSON_ArrayForEach(arg, cmd) {
		snprintf(path, sizeof(path), "command[%zu]", spec->argc);
		if (!cJSON_IsString(arg))
			return field_error(err, field, path, "Invalid value: %s: must be a string",
					   value_text(arg, buf, sizeof(buf)));
		rc = expand(arg->valuestring, env, &total, &spec->argv[spec->argc]);
		if (rc == -2)
			return field_error(err, field, "command", "Too long: with $(VAR) expanded, "
					   "must have at most %d bytes", KT_PROBE_MAX_COMMAND);
		if (rc < 0)
			return kt_error(err, "out of memory");
		spec->argc++;
	}
	return 0;
}

static int parse_exec(struct kt_probe_spec *spec, const cJSON *a, const cJSON *container,
		      const char *field, struct kt_err *err)
{
	const cJSON *cmd = kt_json_get(a, "command");
	struct env env = { 0 };
	char buf[96];
	int rc = -1;

	if (!cJSON_IsObject(a))
		return field_error(err, field, NULL, "Invalid value: must be an object");
	if (!cmd || cJSON_IsNull(cmd) || (cJSON_IsArray(cmd) && cJSON_GetArraySize(cmd) == 0))
		return field_error(err, field, "command", "Required value");
	if (!cJSON_IsArray(cmd))
		return field_error(err, field, "command", "Invalid value: %s: must be a list",
				   value_text(cmd, buf, sizeof(buf)));
	if (env_load(&env, container, err) == 0)
		rc = parse_argv(spec, cmd, &env, field, err);
	env_release(&env);
	return rc;
}

static int parse_handler(struct kt_probe_spec *spec, const cJSON *probe,
			 const cJSON *container, const char *field, struct kt_err *err)
{
	static const char *const keys[] = { "exec", "httpGet", "tcpSocket", "grpc" };
	static const enum kt_probe_kind kinds[] = { KT_PROBE_EXEC, KT_PROBE_HTTP, KT_PROBE_TCP,
						    KT_PROBE_GRPC };
	const cJSON *action = NULL;
	char sub[320];

	for (size_t i = 0; i < 4; i++) {
		const cJSON *a = kt_json_get(probe, keys[i]);

		if (!a || cJSON_IsNull(a))
			continue;
		if (action)
			return field_error(err, field, keys[i],
					   "Forbidden: may not specify more than 1 handler type");
		action = a;
		spec->kind = kinds[i];
	}
	if (!action)
		return field_error(err, field, NULL, "Required value: must specify a handler type");
	snprintf(sub, sizeof(sub), "%s.%s", field, keys[spec->kind - 1]);
	switch (spec->kind) {
	case KT_PROBE_EXEC:
		return parse_exec(spec, action, container, sub, err);
	case KT_PROBE_HTTP:
		return parse_http(spec, action, container, sub, err);
	case KT_PROBE_TCP:
		if (!cJSON_IsObject(action))
			return field_error(err, sub, NULL, "Invalid value: must be an object");
		if (get_str(action, "host", &spec->host, sub, err) < 0)
			return -1;
		return get_port(action, true, container, &spec->port, sub, err);
	default:
		if (!cJSON_IsObject(action))
			return field_error(err, sub, NULL, "Invalid value: must be an object");
		if (get_str(action, "service", &spec->service, sub, err) < 0)
			return -1;
		return get_port(action, false, container, &spec->port, sub, err);
	}
}

static int parse_numbers(struct kt_probe_spec *spec, const cJSON *probe, const char *field,
			 struct kt_err *err)
{
	const cJSON *grace = kt_json_get(probe, "terminationGracePeriodSeconds");
	char buf[96];

	if (get_count(probe, "initialDelaySeconds", 0, &spec->initial_delay_s, field, err) < 0 ||
	    get_count(probe, "timeoutSeconds", 1, &spec->timeout_s, field, err) < 0 ||
	    get_count(probe, "periodSeconds", 10, &spec->period_s, field, err) < 0 ||
	    get_count(probe, "successThreshold", 1, &spec->success_threshold, field, err) < 0 ||
	    get_count(probe, "failureThreshold", 3, &spec->failure_threshold, field, err) < 0)
		return -1;
	if (spec->type != KT_PROBE_READINESS && spec->success_threshold != 1)
		return field_error(err, field, "successThreshold", "Invalid value: %lld: must be 1",
				   (long long)spec->success_threshold);
	if (!grace || cJSON_IsNull(grace))
		return 0;
	if (spec->type == KT_PROBE_READINESS)
		return field_error(err, field, "terminationGracePeriodSeconds",
				   "Forbidden: must not be set for readinessProbes");
	if (!kt_json_is_number(grace) || kt_json_num_int64(grace, &spec->grace_s, NULL) < 0)
		return field_error(err, field, "terminationGracePeriodSeconds",
				   "Invalid value: %s: must be an integer",
				   value_text(grace, buf, sizeof(buf)));
	if (spec->grace_s <= 0)
		return field_error(err, field, "terminationGracePeriodSeconds",
				   "Invalid value: %lld: must be greater than 0",
				   (long long)spec->grace_s);
	spec->has_grace = true;
	return 0;
}

int kt_probe_spec_parse(struct kt_probe_spec *spec, const cJSON *probe,
			enum kt_probe_type type, const cJSON *container, const char *field,
			struct kt_err *err)
{
	int rc = -1;

	memset(spec, 0, sizeof(*spec));
	spec->type = type;
	if (!cJSON_IsObject(probe)) {
		field_error(err, field, NULL, "Invalid value: must be an object");
		goto out;
	}
	if (parse_numbers(spec, probe, field, err) < 0 ||
	    parse_handler(spec, probe, container, field, err) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		kt_probe_spec_release(spec);
	return rc;
}

void kt_probe_spec_release(struct kt_probe_spec *spec)
{
	if (!spec)
		return;
	for (size_t i = 0; spec->argv && i < spec->argc; i++)
		free(spec->argv[i]);
	free(spec->argv);
	for (size_t i = 0; spec->exec_via && spec->exec_via[i]; i++)
		free(spec->exec_via[i]);
	free(spec->exec_via);
	for (size_t i = 0; spec->headers && i < spec->nheaders; i++) {
		free(spec->headers[i].name);
		free(spec->headers[i].value);
	}
	free(spec->headers);
	free(spec->host);
	free(spec->path);
	free(spec->service);
	memset(spec, 0, sizeof(*spec));
}
