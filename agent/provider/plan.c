/* SPDX-License-Identifier: Apache-2.0 */
/* plan: what the built-in provider needs of a pod to start its containers, as
 * one line of shell assignments.  The line is the one the provider's jq
 * program made before this, byte for byte, and so are the reasons a pod has
 * none: a value of the wrong type is refused with jq's words for it. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "plan.h"

/* the env of a container as it is built: names in the order first given */
struct env {
	size_t n, cap;
	const char **name;
	char **value;
	bool oom;
};

/* jq's name of a value's kind, for its messages */
static const char *kind(const cJSON *v)
{
	if (!v || cJSON_IsNull(v))
		return "null";
	if (cJSON_IsBool(v))
		return "boolean";
	if (kt_json_is_number(v))
		return "number";
	if (cJSON_IsString(v))
		return "string";
	if (cJSON_IsArray(v))
		return "array";
	return "object";
}

/* jq's a // b: a unless it is missing, null or false */
static const cJSON *alt(const cJSON *a, const cJSON *b)
{
	return a && !cJSON_IsNull(a) && !cJSON_IsFalse(a) ? a : b;
}

/*
 * A number as jq 1.6 writes it: the shortest digits that read back as the
 * same double, in exponent form when the point is 4 or more places left of
 * them or more than 15 right of them; an infinity as the largest double.
 */
static void put_number(struct kt_sb *sb, double d)
{
	char e[48], digits[24], *p;
	int prec, nd = 0, decpt;

	if (d > DBL_MAX)
		d = DBL_MAX;
	if (d < -DBL_MAX)
		d = -DBL_MAX;
	if (signbit(d)) {
		kt_sb_puts(sb, "-");
		d = -d;
	}
	if (d == 0) {
		kt_sb_puts(sb, "0");
		return;
	}
	for (prec = 0; prec < 16; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec, d);
		if (strtod(e, NULL) == d)
			break;
	}
	snprintf(e, sizeof(e), "%.*e", prec, d);
	for (p = e; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	decpt = atoi(p + 1) + 1;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	if (decpt <= -4 || decpt > nd + 15) {
		kt_sb_put(sb, digits, 1);
		if (nd > 1) {
			kt_sb_puts(sb, ".");
			kt_sb_puts(sb, digits + 1);
		}
		kt_sb_printf(sb, "e%c%02d", decpt - 1 < 0 ? '-' : '+', abs(decpt - 1));
	} else if (decpt <= 0) {
		kt_sb_puts(sb, "0.");
		for (; decpt < 0; decpt++)
			kt_sb_puts(sb, "0");
		kt_sb_puts(sb, digits);
	} else if (decpt >= nd) {
		kt_sb_puts(sb, digits);
		for (; decpt > nd; decpt--)
			kt_sb_puts(sb, "0");
	} else {
		kt_sb_put(sb, digits, (size_t)decpt);
		kt_sb_puts(sb, ".");
		kt_sb_puts(sb, digits + decpt);
	}
}

/* a string as jq's tojson writes it */
static void put_json_string(struct kt_sb *sb, const char *s)
{
	static const char short_esc[] = { ['"'] = '"',	['\\'] = '\\', ['\b'] = 'b', ['\t'] = 't',
					  ['\r'] = 'r', ['\n'] = 'n',  ['\f'] = 'f' };
	const char *run = s;

	kt_sb_puts(sb, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c != 0x7f && c != '"' && c != '\\')
			continue;
		kt_sb_put(sb, run, (size_t)(s - run));
		run = s + 1;
		if (c < sizeof(short_esc) && short_esc[c])
			kt_sb_printf(sb, "\\%c", short_esc[c]);
		else
			kt_sb_printf(sb, "\\u%04x", c);
	}
	kt_sb_put(sb, run, (size_t)(s - run));
	kt_sb_puts(sb, "\"");
}

/* a value as jq's tojson writes it: compact, keys in their order */
static void put_json(struct kt_sb *sb, const cJSON *v)
{
	const cJSON *c;

	if (!v || cJSON_IsNull(v)) {
		kt_sb_puts(sb, "null");
	} else if (cJSON_IsBool(v)) {
		kt_sb_puts(sb, cJSON_IsTrue(v) ? "true" : "false");
	} else if (kt_json_is_number(v)) {
		put_number(sb, v->valuedouble);
	} else if (cJSON_IsString(v)) {
		put_json_string(sb, v->valuestring);
	} else {
		bool obj = cJSON_IsObject(v);

		kt_sb_puts(sb, obj ? "{" : "[");
		cJSON_ArrayForEach (c, v) {
			if (c != v->child)
				kt_sb_puts(sb, ",");
			if (obj) {
				put_json_string(sb, c->string ? c->string : "");
				kt_sb_puts(sb, ":");
			}
			put_json(sb, c);
		}
		kt_sb_puts(sb, obj ? "}" : "]");
	}
}

/* a value in a jq message: its JSON cut to 11 bytes and "..." past 14; a
 * character cut in two is one U+FFFD, as jq decodes what is left of it */
static void put_json_cut(struct kt_sb *sb, const cJSON *v)
{
	struct kt_sb t = { 0 };
	const unsigned char *p;
	size_t n = 11, start;

	put_json(&t, v);
	if (t.len > 14) {
		p = (const unsigned char *)kt_sb_str(&t);
		start = n;
		while (start > 0 && (p[start - 1] & 0xc0) == 0x80)
			start--;
		if (start > 0 && p[start - 1] >= 0xc0) {
			size_t want = p[start - 1] >= 0xf0 ? 4 : p[start - 1] >= 0xe0 ? 3 : 2;

			start--;
			if (n - start < want)
				n = start;
		}
		kt_sb_put(sb, (const char *)p, n);
		if (n < 11)
			kt_sb_puts(sb, "\xef\xbf\xbd");
		kt_sb_puts(sb, "...");
	} else {
		kt_sb_puts(sb, kt_sb_str(&t));
	}
	sb->oom |= t.oom;
	kt_sb_release(&t);
}

/* jq's .key: null of null or of a missing key; what is not an object is an
 * error */
static int get(const cJSON *v, const char *key, const cJSON **out, struct kt_sb *why)
{
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v)) {
		kt_sb_printf(why, "Cannot index %s with string \"%s\"", kind(v), key);
		return -1;
	}
	*out = cJSON_GetObjectItemCaseSensitive(v, key);
	return 0;
}

/* jq's .[]: the members of an array or the values of an object */
static int iterable(const cJSON *v, struct kt_sb *why)
{
	if (cJSON_IsArray(v) || cJSON_IsObject(v))
		return 0;
	if (!v || cJSON_IsNull(v)) {
		kt_sb_puts(why, "Cannot iterate over null");
		return -1;
	}
	kt_sb_printf(why, "Cannot iterate over %s (", kind(v));
	put_json_cut(why, v);
	kt_sb_puts(why, ")");
	return -1;
}

/* s as one word of @sh: in single quotes, each ' written '\'' */
static void put_quoted(struct kt_sb *sb, const char *s)
{
	const char *q;

	kt_sb_puts(sb, "'");
	while ((q = strchr(s, '\'')) != NULL) {
		kt_sb_put(sb, s, (size_t)(q - s));
		kt_sb_puts(sb, "'\\''");
		s = q + 1;
	}
	kt_sb_puts(sb, s);
	kt_sb_puts(sb, "'");
}

/* the shell text s on one line: each newline and tab written "$NL" and
 * "$TAB" outside the quotes it is in */
static void put_one_line(struct kt_sb *sb, const char *s)
{
	size_t n;

	while (*s) {
		n = strcspn(s, "\n\t");
		kt_sb_put(sb, s, n);
		s += n;
		if (!*s)
			break;
		kt_sb_puts(sb, *s == '\n' ? "'\"$NL\"'" : "'\"$TAB\"'");
		s++;
	}
}

/* s as one word for eval, on one line */
static void put_word(struct kt_sb *sb, const char *s)
{
	struct kt_sb q = { 0 };

	put_quoted(&q, s);
	put_one_line(sb, kt_sb_str(&q));
	sb->oom |= q.oom;
	kt_sb_release(&q);
}

/* a scalar or an array of them as jq's @sh writes it: strings quoted, the
 * others as their JSON, words joined by a space */
static int put_sh(struct kt_sb *sb, const cJSON *v, bool top, struct kt_sb *why)
{
	const cJSON *c;

	if (cJSON_IsString(v)) {
		put_quoted(sb, v->valuestring);
	} else if (top && cJSON_IsArray(v)) {
		cJSON_ArrayForEach (c, v) {
			if (c != v->child)
				kt_sb_puts(sb, " ");
			if (put_sh(sb, c, false, why) < 0)
				return -1;
		}
	} else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
		kt_sb_printf(why, "%s (", kind(v));
		put_json_cut(why, v);
		kt_sb_puts(why, ") can not be escaped for shell");
		return -1;
	} else {
		put_json(sb, v);
	}
	return 0;
}

static const char *env_find(const struct env *env, const char *name, size_t len)
{
	for (size_t i = 0; i < env->n; i++)
		if (strlen(env->name[i]) == len && memcmp(env->name[i], name, len) == 0)
			return env->value[i];
	return NULL;
}

/* sets name to value (owned from here); a name given again keeps its place */
static void env_set(struct env *env, const char *name, char *value)
{
	for (size_t i = 0; i < env->n; i++) {
		if (strcmp(env->name[i], name) == 0) {
			free(env->value[i]);
			env->value[i] = value;
			return;
		}
	}
	if (env->n == env->cap) {
		size_t cap = env->cap ? env->cap * 2 : 16;
		const char **names = realloc(env->name, cap * sizeof(*names));
		char **values;

		if (names)
			env->name = names;
		values = names ? realloc(env->value, cap * sizeof(*values)) : NULL;
		if (!values) {
			env->oom = true;
			free(value);
			return;
		}
		env->value = values;
		env->cap = cap;
	}
	env->name[env->n] = name;
	env->value[env->n++] = value;
}

static void env_release(struct env *env)
{
	for (size_t i = 0; i < env->n; i++)
		free(env->value[i]);
	free(env->name);
	free(env->value);
}

/*
 * s with its $(VAR) references expanded from env, as the kubelet expands a
 * container's env, command and args: "$$" is a '$'; "$(" starts a name only
 * when a ')' comes later, and a name env does not have is left as written;
 * any other '$' is kept with what follows it.  One pass.
 */
static void expand(struct kt_sb *sb, const char *s, const struct env *env)
{
	const char *close = strrchr(s, ')'), *d, *end, *value;

	while ((d = strchr(s, '$')) != NULL) {
		kt_sb_put(sb, s, (size_t)(d - s));
		if (d[1] == '$') {
			kt_sb_puts(sb, "$");
			s = d + 2;
		} else if (d[1] == '(' && close && close > d + 1) {
			end = strchr(d + 2, ')');
			value = env_find(env, d + 2, (size_t)(end - d - 2));
			if (value)
				kt_sb_puts(sb, value);
			else
				kt_sb_put(sb, d, (size_t)(end + 1 - d));
			s = end + 1;
		} else if (d[1] == '\0') {
			kt_sb_puts(sb, "$");
			s = d + 1;
		} else {
			kt_sb_put(sb, d, 2);
			s = d + 2;
		}
	}
	kt_sb_puts(sb, s);
}

/* a value given to expand: a string, or jq's error */
static int expandable(const cJSON *v, struct kt_sb *why)
{
	if (cJSON_IsString(v))
		return 0;
	kt_sb_puts(why, "explode input must be a string");
	return -1;
}

/* the env's entries into env, each value expanded with the ones before it;
 * those with valueFrom are skipped */
/* c's member key as jq's .key // [] | .[] sees it: *list NULL when there is
 * nothing to go over, -1 with why when it cannot be gone over */
static int list_of(const cJSON *c, const char *key, const cJSON **list, struct kt_sb *why)
{
	if (get(c, key, list, why) < 0)
		return -1;
	*list = alt(*list, NULL);
	return *list ? iterable(*list, why) : 0;
}

static int build_env(const cJSON *c, struct env *env, struct kt_sb *why)
{
	const cJSON *list, *e, *name, *value;
	struct kt_sb sb;

	if (list_of(c, "env", &list, why) < 0)
		return -1;
	if (!list)
		return 0;
	cJSON_ArrayForEach (e, list) {
		if (!cJSON_IsObject(e)) {
			kt_sb_printf(why, "Cannot check whether %s has a string key", kind(e));
			return -1;
		}
		if (cJSON_GetObjectItemCaseSensitive(e, "valueFrom"))
			continue;
		value = alt(cJSON_GetObjectItemCaseSensitive(e, "value"), NULL);
		if (value && expandable(value, why) < 0)
			return -1;
		name = cJSON_GetObjectItemCaseSensitive(e, "name");
		if (!cJSON_IsString(name)) {
			kt_sb_printf(why, "Cannot index object with %s", kind(name));
			return -1;
		}
		sb = (struct kt_sb){ 0 };
		kt_sb_puts(&sb, "");
		if (value)
			expand(&sb, value->valuestring, env);
		if (sb.oom) {
			kt_sb_release(&sb);
			env->oom = true;
			return 0;
		}
		env_set(env, name->valuestring, sb.buf);
	}
	return 0;
}

/* the items of command or args, expanded, each a word of argv */
static int add_args(const cJSON *c, const char *key, const struct env *env, struct kt_sb *argv,
		    size_t *n, struct kt_sb *why)
{
	const cJSON *list, *a;
	struct kt_sb sb = { 0 };

	if (list_of(c, key, &list, why) < 0)
		return -1;
	if (!list)
		return 0;
	cJSON_ArrayForEach (a, list) {
		if (expandable(a, why) < 0) {
			kt_sb_release(&sb);
			return -1;
		}
		kt_sb_trunc(&sb, 0);
		kt_sb_puts(&sb, "");
		expand(&sb, a->valuestring, env);
		if (*n)
			kt_sb_puts(argv, " ");
		put_quoted(argv, kt_sb_str(&sb));
		(*n)++;
	}
	argv->oom |= sb.oom;
	kt_sb_release(&sb);
	return 0;
}

/* a container's argv as the kubelet builds it, env as NAME=VALUE first, as
 * @sh words, or "no-command" */
static int put_argv(struct kt_sb *sb, const cJSON *c, struct kt_sb *why)
{
	struct env env = { 0 };
	struct kt_sb args = { 0 }, all = { 0 };
	size_t n = 0;
	int rc = -1;

	if (build_env(c, &env, why) < 0)
		goto out;
	if (add_args(c, "command", &env, &args, &n, why) < 0 ||
	    add_args(c, "args", &env, &args, &n, why) < 0)
		goto out;
	rc = 0;
	if (!n) {
		put_word(sb, "no-command");
		goto out;
	}
	for (size_t i = 0; i < env.n; i++) {
		struct kt_sb pair = { 0 };

		kt_sb_printf(&pair, "%s=%s", env.name[i], env.value[i]);
		put_quoted(&all, kt_sb_str(&pair));
		kt_sb_puts(&all, " ");
		all.oom |= pair.oom;
		kt_sb_release(&pair);
	}
	kt_sb_puts(&all, kt_sb_str(&args));
	put_word(sb, kt_sb_str(&all));
out:
	sb->oom |= env.oom || args.oom || all.oom;
	env_release(&env);
	kt_sb_release(&args);
	kt_sb_release(&all);
	return rc;
}

/* the user a container runs as, "UID:GID" from its securityContext or the
 * pod's, or "" when neither says */
static int put_user(struct kt_sb *sb, const cJSON *c, const cJSON *spec, struct kt_sb *why)
{
	const cJSON *csc, *psc, *u, *g, *v;
	struct kt_sb t = { 0 };

	if (get(c, "securityContext", &csc, why) < 0 || get(csc, "runAsUser", &u, why) < 0)
		return -1;
	if (!alt(u, NULL) &&
	    (get(spec, "securityContext", &psc, why) < 0 || get(psc, "runAsUser", &u, why) < 0))
		return -1;
	if (get(csc, "runAsGroup", &g, why) < 0)
		return -1;
	if (!alt(g, NULL)) {
		if (get(spec, "securityContext", &psc, why) < 0 ||
		    get(psc, "runAsGroup", &v, why) < 0)
			return -1;
		g = alt(v, u);
	}
	kt_sb_puts(&t, "");
	if (kt_json_is_number(u) && kt_json_is_number(g)) {
		put_number(&t, u->valuedouble);
		kt_sb_puts(&t, ":");
		put_number(&t, g->valuedouble);
	}
	put_word(sb, kt_sb_str(&t));
	sb->oom |= t.oom;
	kt_sb_release(&t);
	return 0;
}

/* a DNS-1123 label, as the API server wants container names (the name
 * becomes a directory: no newline, not even a last one, which jq's test let
 * through) */
static bool dns_label(const cJSON *v)
{
	const char *s;
	size_t n;

	if (!cJSON_IsString(v))
		return false;
	s = v->valuestring;
	n = strlen(s);
	if (n > 63)
		return false;
	if (!n || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/* the first container or init container whose name is not a DNS label:
 * -1 with why */
static int check_names(const cJSON *spec, const cJSON *cs, struct kt_sb *why)
{
	const cJSON *init, *lists[2], *c, *name;

	if (get(spec, "initContainers", &init, why) < 0)
		return -1;
	lists[0] = alt(init, NULL);
	lists[1] = cs;
	if (!cJSON_IsArray(lists[0]) && !cJSON_IsObject(lists[0]))
		lists[0] = NULL;
	/* every name is taken before any is looked at: one that cannot be is
	 * the error, whatever the names before it */
	for (int l = 0; l < 2; l++)
		cJSON_ArrayForEach (c, lists[l])
			if (get(c, "name", &name, why) < 0)
				return -1;
	for (int l = 0; l < 2; l++) {
		cJSON_ArrayForEach (c, lists[l]) {
			get(c, "name", &name, why);
			if (dns_label(name))
				continue;
			kt_sb_puts(why, "invalid container name ");
			put_json(why, name);
			kt_sb_puts(why, ": not a DNS label");
			return -1;
		}
	}
	return 0;
}

static int make_plan(const cJSON *pod, struct kt_sb *sb, struct kt_sb *why)
{
	const cJSON *spec, *cs, *v, *c, *stdin_, *once;
	struct kt_sb t = { 0 };
	size_t k = 0;
	int rc = -1;

	if (get(pod, "spec", &spec, why) < 0 || get(spec, "containers", &cs, why) < 0)
		return -1;
	if (!cJSON_IsArray(cs) && !cJSON_IsObject(cs))
		cs = NULL;
	if (check_names(spec, cs, why) < 0)
		return -1;
	kt_sb_printf(sb, "n_containers=%d; restart_policy=", cs ? cJSON_GetArraySize(cs) : 0);
	if (get(spec, "restartPolicy", &v, why) < 0)
		return -1;
	if (alt(v, NULL)) {
		if (put_sh(&t, v, true, why) < 0)
			goto out;
		put_one_line(sb, kt_sb_str(&t));
	} else {
		put_word(sb, "Always");
	}
	kt_sb_puts(sb, "; grace=");
	if (get(spec, "terminationGracePeriodSeconds", &v, why) < 0)
		goto out;
	kt_sb_trunc(&t, 0);
	kt_sb_puts(&t, "");
	if (!alt(v, NULL))
		kt_sb_puts(&t, "30");
	else if (cJSON_IsString(v))
		kt_sb_puts(&t, v->valuestring);
	else
		put_json(&t, v);
	put_word(sb, kt_sb_str(&t));
	cJSON_ArrayForEach (c, cs) {
		k++;
		kt_sb_printf(sb, "; c_name_%zu=", k);
		put_word(sb, cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring);
		kt_sb_printf(sb, "; c_argv_%zu=", k);
		if (put_argv(sb, c, why) < 0)
			goto out;
		kt_sb_printf(sb, "; c_user_%zu=", k);
		if (put_user(sb, c, spec, why) < 0)
			goto out;
		kt_sb_printf(sb, "; c_stdin_%zu=", k);
		stdin_ = cJSON_GetObjectItemCaseSensitive(c, "stdin");
		once = cJSON_GetObjectItemCaseSensitive(c, "stdinOnce");
		put_word(sb, !cJSON_IsTrue(stdin_) ? "" : cJSON_IsTrue(once) ? "once" : "open");
	}
	rc = 0;
out:
	sb->oom |= t.oom;
	kt_sb_release(&t);
	return rc;
}

int kt_pod_plan(const cJSON *pod, struct kt_sb *out)
{
	struct kt_sb sb = { 0 }, why = { 0 };
	int rc = make_plan(pod, &sb, &why);

	kt_sb_puts(out, kt_sb_str(rc < 0 ? &why : &sb));
	out->oom |= sb.oom || why.oom;
	kt_sb_release(&sb);
	kt_sb_release(&why);
	return rc;
}
