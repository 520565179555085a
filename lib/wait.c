/* SPDX-License-Identifier: Apache-2.0 */
/* wait: kube-wait's judgement: conditions parsed, objects judged */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "json.h"
#include "json_go.h"
#include "kt_err.h"
#include "wait.h"

/* ------------------------------------------------------------ parsing */

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static int bad(struct kt_err *err, const char *text, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct kt_err *err, const char *text, const char *fmt, ...)
{
	char what[256], shown[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	kt_plain_text(shown, sizeof(shown), text);
	return kt_error_kind(err, KT_ERR_INPUT, "--for '%s': %s", shown, what);
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '/';
}

/* a filter's literal: 'x', "x", a number, true or false; *p past it */
static int parse_literal(const char **p, char **out)
{
	const char *s = *p, *e;

	if (*s == '\'' || *s == '"') {
		e = strchr(s + 1, *s);
		if (!e)
			return -1;
		*out = dup_n(s + 1, (size_t)(e - s - 1));
		*p = e + 1;
		return *out ? 0 : -1;
	}
	e = s;
	while (isalnum((unsigned char)*e) || *e == '-' || *e == '+' || *e == '.')
		e++;
	if (e == s)
		return -1;
	*out = dup_n(s, (size_t)(e - s));
	*p = e;
	return *out ? 0 : -1;
}

/* [...] at *p (past the '['): one step */
static int parse_bracket(const char *text, const char **p, struct kt_wait_step *st,
			 struct kt_err *err)
{
	const char *s = *p, *e;
	char *end;

	if (*s == '\'' || *s == '"') {
		e = strchr(s + 1, *s);
		if (!e)
			return bad(err, text, "a quoted key is not closed");
		st->kind = KT_WAIT_STEP_KEY;
		st->key = dup_n(s + 1, (size_t)(e - s - 1));
		s = e + 1;
	} else if (*s == '*') {
		st->kind = KT_WAIT_STEP_ALL;
		s++;
	} else if (s[0] == '?' && s[1] == '(') {
		s += 2;
		while (*s == ' ')
			s++;
		if (s[0] != '@' || s[1] != '.')
			return bad(err, text,
				   "a filter must test a field of @, as [?(@.type==\"Ready\")]");
		s += 2;
		e = s;
		while (name_char(*e) || *e == '.')
			e++;
		if (e == s)
			return bad(err, text, "a filter names no field");
		st->kind = KT_WAIT_STEP_FILTER;
		st->key = dup_n(s, (size_t)(e - s));
		s = e;
		while (*s == ' ')
			s++;
		if (s[0] == '=' && s[1] == '=') {
			st->negate = false;
		} else if (s[0] == '!' && s[1] == '=') {
			st->negate = true;
		} else {
			return bad(err, text, "a filter compares with == or !=");
		}
		s += 2;
		while (*s == ' ')
			s++;
		if (parse_literal(&s, &st->literal) < 0)
			return bad(err, text,
				   "a filter's value must be a quoted string or a number");
		while (*s == ' ')
			s++;
		if (*s != ')')
			return bad(err, text, "a filter is not closed with ')'");
		s++;
	} else {
		long v = strtol(s, &end, 10);

		if (end == s || (!isdigit((unsigned char)*s) && *s != '-'))
			return bad(err, text, "'[' takes an index, a quoted key, '*' or a filter");
		if (*end == ':')
			return bad(err, text, "slices are not supported");
		st->kind = KT_WAIT_STEP_INDEX;
		st->index = v;
		s = end;
	}
	if (*s != ']')
		return bad(err, text, "']' expected");
	*p = s + 1;
	return 0;
}

static int parse_path(const char *text, const char *expr, size_t len, struct kt_wait_cond *c,
		      struct kt_err *err)
{
	char *buf = dup_n(expr, len);
	const char *p = buf;
	int rc = -1;

	if (!buf)
		return kt_error(err, "out of memory");
	while (*p == ' ')
		p++;
	if (*p == '$')
		p++;
	if (!*p) {
		bad(err, text, "the jsonpath is empty");
		goto out;
	}
	while (*p) {
		struct kt_wait_step *st;

		if (c->nsteps == KT_WAIT_PATH_MAX) {
			bad(err, text, "the jsonpath has more than %d steps", KT_WAIT_PATH_MAX);
			goto out;
		}
		st = &c->steps[c->nsteps];
		memset(st, 0, sizeof(*st));
		if (*p == '[') {
			p++;
			if (parse_bracket(text, &p, st, err) < 0) {
				c->nsteps++; /* what it holds is freed */
				goto out;
			}
		} else {
			const char *s;

			if (*p == '.')
				p++;
			else if (c->nsteps) {
				bad(err, text, "unexpected '%c' in the jsonpath", *p);
				goto out;
			}
			if (*p == '.') {
				bad(err, text, "recursive descent '..' is not supported");
				goto out;
			}
			s = p;
			while (name_char(*p))
				p++;
			if (p == s) {
				if (*p)
					bad(err, text, "unexpected '%c' in the jsonpath", *p);
				else
					bad(err, text, "the jsonpath ends with '.'");
				goto out;
			}
			st->kind = KT_WAIT_STEP_KEY;
			st->key = dup_n(s, (size_t)(p - s));
		}
		c->nsteps++;
		if ((st->kind == KT_WAIT_STEP_KEY || st->kind == KT_WAIT_STEP_FILTER) && !st->key) {
			kt_error(err, "out of memory");
			goto out;
		}
		if (st->kind == KT_WAIT_STEP_FILTER && !st->literal) {
			kt_error(err, "out of memory");
			goto out;
		}
		while (*p == ' ')
			p++;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

/* the end of a {...} expression starting at s ('{'), quotes respected; NULL if open */
static const char *brace_end(const char *s)
{
	char quote = 0;

	for (s++; *s; s++) {
		if (quote) {
			if (*s == quote)
				quote = 0;
		} else if (*s == '\'' || *s == '"') {
			quote = *s;
		} else if (*s == '}') {
			return s;
		}
	}
	return NULL;
}

/* the first '=' outside brackets and quotes, or NULL; a filter's == is inside [] */
static const char *value_sep(const char *s)
{
	char quote = 0;
	int depth = 0;

	for (; *s; s++) {
		if (quote) {
			if (*s == quote)
				quote = 0;
		} else if (*s == '\'' || *s == '"') {
			quote = *s;
		} else if (*s == '[') {
			depth++;
		} else if (*s == ']') {
			depth--;
		} else if (*s == '=' && depth <= 0) {
			return s;
		}
	}
	return NULL;
}

static int parse_jsonpath(const char *text, const char *arg, struct kt_wait_cond *c,
			  struct kt_err *err)
{
	const char *expr = arg, *end, *rest;

	if (*arg == '{') {
		end = brace_end(arg);
		if (!end)
			return bad(err, text, "the jsonpath's '{' is not closed");
		expr = arg + 1;
		rest = end + 1;
		if (*rest && *rest != '=')
			return bad(err, text, "'=' expected after the jsonpath's '}'");
	} else {
		rest = value_sep(arg);
		if (!rest)
			rest = arg + strlen(arg);
		end = rest;
	}
	if (memchr(expr, '{', (size_t)(end - expr)))
		return bad(err, text, "one jsonpath expression is allowed");
	if (parse_path(text, expr, (size_t)(end - expr), c, err) < 0)
		return -1;
	if (*rest == '=') {
		if (!rest[1])
			return bad(err, text, "the value after '=' is empty");
		c->value = strdup(rest + 1);
		if (!c->value)
			return kt_error(err, "out of memory");
	}
	c->expr = dup_n(arg, (size_t)(rest - arg));
	if (!c->expr)
		return kt_error(err, "out of memory");
	return 0;
}

static int parse_condition(const char *text, const char *arg, struct kt_wait_cond *c,
			   struct kt_err *err)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);

	if (!n)
		return bad(err, text, "the condition type is empty");
	if (eq && !eq[1])
		return bad(err, text, "the condition status after '=' is empty");
	if (eq && strchr(eq + 1, '='))
		return bad(err, text, "a condition is TYPE or TYPE=STATUS");
	for (size_t i = 0; i < n; i++) {
		if (!isgraph((unsigned char)arg[i]))
			return bad(err, text,
				   "the condition type has a blank or control character");
	}
	c->type = dup_n(arg, n);
	c->status = strdup(eq ? eq + 1 : "True");
	if (!c->type || !c->status)
		return kt_error(err, "out of memory");
	return 0;
}

int kt_wait_cond_parse(const char *text, struct kt_wait_cond *c, struct kt_err *err)
{
	memset(c, 0, sizeof(*c));
	c->text = strdup(text);
	if (!c->text)
		return kt_error(err, "out of memory");
	if (!strcmp(text, "create")) {
		c->form = KT_WAIT_CREATE;
	} else if (!strcmp(text, "delete")) {
		c->form = KT_WAIT_DELETE;
	} else if (!strcmp(text, "rollout")) {
		c->form = KT_WAIT_ROLLOUT;
	} else if (!strncmp(text, "condition=", 10)) {
		c->form = KT_WAIT_CONDITION;
		if (parse_condition(text, text + 10, c, err) < 0)
			goto failed;
	} else if (!strncmp(text, "jsonpath=", 9)) {
		c->form = KT_WAIT_JSONPATH;
		if (parse_jsonpath(text, text + 9, c, err) < 0)
			goto failed;
	} else {
		bad(err, text,
		    "expected condition=TYPE[=STATUS], jsonpath=EXPR[=VALUE], create, "
		    "delete or rollout");
		goto failed;
	}
	return 0;
failed:
	kt_wait_cond_release(c);
	return -1;
}

void kt_wait_cond_release(struct kt_wait_cond *c)
{
	for (int i = 0; i < c->nsteps; i++) {
		free(c->steps[i].key);
		free(c->steps[i].literal);
	}
	free(c->text);
	free(c->expr);
	free(c->type);
	free(c->status);
	free(c->value);
	memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------------------ selectors */

static int sel_bad(struct kt_err *err, const char *opt, const char *sel, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int sel_bad(struct kt_err *err, const char *opt, const char *sel, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return kt_error_kind(err, KT_ERR_INPUT, "%s '%.*s': %s", opt, 300, sel, what);
}

static bool label_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

/* a label name or value: 63 at most, alphanumeric at both ends, - _ . inside */
static bool label_word(const char *s, size_t n, bool empty_ok)
{
	if (!n)
		return empty_ok;
	if (n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!label_char(s[i]))
			return false;
	return true;
}

/* a label key: [DNS subdomain '/'] name */
static bool label_key(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);
	size_t p;

	if (!slash)
		return label_word(s, n, false);
	p = (size_t)(slash - s);
	if (!p || p > 253 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[p - 1]))
		return false;
	for (size_t i = 0; i < p; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-' &&
		    s[i] != '.')
			return false;
	return label_word(slash + 1, n - p - 1, false);
}

static const char *skip_blank(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* a run of the characters a key or value may hold (and '/', for keys) */
static size_t word_len(const char *p)
{
	size_t n = 0;

	while (label_char(p[n]) || p[n] == '/')
		n++;
	return n;
}

static int check_label_selector(const char *sel, struct kt_err *err)
{
	static const char opt[] = "--selector";
	const char *p = sel;

	for (;;) {
		bool not = false;
		size_t n;
		const char *key;

		p = skip_blank(p);
		if (*p == '!') {
			not = true;
			p = skip_blank(p + 1);
		}
		key = p;
		n = word_len(p);
		if (!n)
			return sel_bad(err, opt, sel, "a label key is missing at '%.40s'", p);
		if (!label_key(key, n))
			return sel_bad(err, opt, sel,
				       "'%.*s' is not a label key ([prefix/]name, 63 characters "
				       "at most, alphanumeric at both ends)",
				       (int)(n > 100 ? 100 : n), key);
		p = skip_blank(p + n);
		if (not ) {
			if (*p && *p != ',')
				return sel_bad(err, opt, sel, "'!%.*s' takes no operator",
					       (int)(n > 100 ? 100 : n), key);
		} else if (!*p || *p == ',') {
			/* exists */
		} else if (*p == '=' || (*p == '!' && p[1] == '=')) {
			p += *p == '!' ? 2 : p[1] == '=' ? 2 : 1;
			p = skip_blank(p);
			n = word_len(p);
			if (!label_word(p, n, true))
				return sel_bad(err, opt, sel, "'%.*s' is not a label value",
					       (int)(n > 100 ? 100 : n), p);
			p = skip_blank(p + n);
		} else if (*p == '<' || *p == '>') {
			p = skip_blank(p + 1);
			n = 0;
			if (p[n] == '-')
				n++;
			while (isdigit((unsigned char)p[n]))
				n++;
			if (!n || (n == 1 && *p == '-') || n > 19)
				return sel_bad(err, opt, sel, "'<' and '>' take an integer");
			p = skip_blank(p + n);
		} else if (!strncmp(p, "in", 2) || !strncmp(p, "notin", 5)) {
			int values = 0;

			p = skip_blank(p + (*p == 'i' ? 2 : 5));
			if (*p != '(')
				return sel_bad(err, opt, sel,
					       "'in' and 'notin' take '(' values ')'");
			p++;
			for (;;) {
				p = skip_blank(p);
				n = word_len(p);
				if (!label_word(p, n, true))
					return sel_bad(err, opt, sel, "'%.*s' is not a label value",
						       (int)(n > 100 ? 100 : n), p);
				values += n > 0;
				p = skip_blank(p + n);
				if (*p == ')')
					break;
				if (*p != ',')
					return sel_bad(err, opt, sel,
						       "'in' and 'notin' values end with ')'");
				p++;
			}
			if (!values)
				return sel_bad(err, opt, sel, "'in' and 'notin' need a value");
			p = skip_blank(p + 1);
		} else {
			return sel_bad(err, opt, sel, "expected an operator at '%.40s'", p);
		}
		if (!*p)
			return 0;
		if (*p != ',')
			return sel_bad(err, opt, sel, "expected ',' at '%.40s'", p);
		p++;
	}
}

/* key=value, key==value or key!=value, comma-separated; \ escapes , = ! \ in a value */
static int check_field_selector(const char *sel, struct kt_err *err)
{
	static const char opt[] = "--field-selector";
	const char *p = sel;

	for (;;) {
		const char *key = p;
		size_t n = 0;

		while (p[n] && !strchr("=!,", p[n]))
			n++;
		if (!n || !label_key(key, n)) {
			/* field names are paths: metadata.name, status.phase */
			bool ok = n > 0;

			for (size_t i = 0; i < n && ok; i++)
				ok = label_char(key[i]);
			if (!ok)
				return sel_bad(err, opt, sel, "'%.*s' is not a field name",
					       (int)(n > 100 ? 100 : n), key);
		}
		p += n;
		if (*p == '=')
			p += p[1] == '=' ? 2 : 1;
		else if (*p == '!' && p[1] == '=')
			p += 2;
		else
			return sel_bad(err, opt, sel, "'%.*s' needs =, == or != and a value",
				       (int)(n > 100 ? 100 : n), key);
		while (*p && *p != ',') {
			if (*p == '\\') {
				if (!p[1] || !strchr(",=!\\", p[1]))
					return sel_bad(err, opt, sel,
						       "'\\' escapes only , = ! and \\");
				p++;
			} else if (*p == '=' || *p == '!') {
				return sel_bad(err, opt, sel, "an unescaped '%c' in a value", *p);
			}
			p++;
		}
		if (!*p)
			return 0;
		p++;
	}
}

int kt_wait_selector_check(const char *sel, bool field, struct kt_err *err)
{
	if (!*sel)
		return sel_bad(err, field ? "--field-selector" : "--selector", sel,
			       "must not be empty");
	return field ? check_field_selector(sel, err) : check_label_selector(sel, err);
}

/* ------------------------------------------------------------ jsonpath */

/* a scalar as kubectl's jsonpath prints it; NULL for an object or array */
static const char *scalar_text(const cJSON *v, char *buf, size_t size)
{
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsTrue(v))
		return "true";
	if (cJSON_IsFalse(v))
		return "false";
	if (cJSON_IsNull(v))
		return "null";
	if (kt_json_is_number(v))
		return kt_json_num_text(v, buf, size);
	return NULL;
}

static const cJSON *dotted(const cJSON *obj, const char *path)
{
	char part[256];
	const char *p = path, *dot;

	while (obj && *p) {
		size_t n;

		dot = strchr(p, '.');
		n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(part) || !cJSON_IsObject(obj))
			return NULL;
		memcpy(part, p, n);
		part[n] = '\0';
		obj = cJSON_GetObjectItemCaseSensitive(obj, part);
		p = dot ? dot + 1 : p + n;
	}
	return obj;
}

static bool filter_match(const struct kt_wait_step *st, const cJSON *item)
{
	char buf[64];
	const cJSON *v = dotted(item, st->key);
	const char *t = v ? scalar_text(v, buf, sizeof(buf)) : NULL;

	if (!t)
		return false;
	return (strcmp(t, st->literal) == 0) != st->negate;
}

struct found {
	const cJSON *first;
	int n;
};

static void walk(const struct kt_wait_cond *c, int i, const cJSON *node, struct found *f)
{
	const struct kt_wait_step *st;
	const cJSON *child;

	if (!node || f->n > 1)
		return;
	if (i == c->nsteps) {
		if (!f->n)
			f->first = node;
		f->n++;
		return;
	}
	st = &c->steps[i];
	switch (st->kind) {
	case KT_WAIT_STEP_KEY:
		if (cJSON_IsObject(node))
			walk(c, i + 1, cJSON_GetObjectItemCaseSensitive(node, st->key), f);
		break;
	case KT_WAIT_STEP_INDEX:
		if (cJSON_IsArray(node)) {
			long n = cJSON_GetArraySize(node),
			     k = st->index < 0 ? n + st->index : st->index;

			if (k >= 0 && k < n)
				walk(c, i + 1, cJSON_GetArrayItem(node, (int)k), f);
		}
		break;
	case KT_WAIT_STEP_ALL:
		if (cJSON_IsArray(node) || cJSON_IsObject(node))
			cJSON_ArrayForEach (child, node)
				walk(c, i + 1, child, f);
		break;
	case KT_WAIT_STEP_FILTER:
		if (cJSON_IsArray(node))
			cJSON_ArrayForEach (child, node)
				if (filter_match(st, child))
					walk(c, i + 1, child, f);
		break;
	}
}

const cJSON *kt_wait_path_find(const struct kt_wait_cond *c, const cJSON *obj, bool *many)
{
	struct found f = { 0 };

	walk(c, 0, obj, &f);
	*many = f.n > 1;
	return f.first;
}

/* ------------------------------------------------------------ judging */

static void say(struct kt_wait_result *res, enum kt_wait_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(struct kt_wait_result *res, enum kt_wait_verdict v, const char *fmt, ...)
{
	char raw[KT_WAIT_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	res->verdict = v;
	kt_plain_text(res->reason, sizeof(res->reason), raw);
}

static const char *str_at(const cJSON *obj, const char *path)
{
	const cJSON *v = kt_json_path(obj, path);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* whether the field at path is an integer, into *out */
static bool int_of(const cJSON *obj, const char *path, int64_t *out)
{
	const cJSON *v = kt_json_path(obj, path);

	return v && kt_json_is_number(v) && kt_go_int64(v, out);
}

/* an integer field, def when absent or not an integer */
static int64_t int_at(const cJSON *obj, const char *path, int64_t def)
{
	int64_t v;

	return int_of(obj, path, &v) ? v : def;
}

static bool has_int(const cJSON *obj, const char *path)
{
	int64_t v;

	return int_of(obj, path, &v);
}

/* the condition of obj whose type is type (case as given when exact) */
static const cJSON *find_condition(const cJSON *obj, const char *type, bool fold)
{
	const cJSON *c, *conds = kt_json_path(obj, "status.conditions");

	if (!cJSON_IsArray(conds))
		return NULL;
	cJSON_ArrayForEach (c, conds) {
		const char *t = kt_json_get_string(c, "type");

		if (t && (fold ? !strcasecmp(t, type) : !strcmp(t, type)))
			return c;
	}
	return NULL;
}

static void judge_condition(const struct kt_wait_cond *c, const cJSON *obj,
			    struct kt_wait_result *res)
{
	const cJSON *cond = find_condition(obj, c->type, true);
	const char *status;

	if (!cond) {
		say(res, KT_WAIT_NOT_YET, "no condition %s", c->type);
		return;
	}
	status = cJSON_IsString(cJSON_GetObjectItem(cond, "status"))
		     ? cJSON_GetObjectItem(cond, "status")->valuestring
		     : "";
	if (has_int(cond, "observedGeneration") && has_int(obj, "metadata.generation") &&
	    int_at(cond, "observedGeneration", 0) != int_at(obj, "metadata.generation", 0)) {
		say(res, KT_WAIT_NOT_YET, "condition %s=%s is of generation %lld, not %lld",
		    c->type, status, (long long)int_at(cond, "observedGeneration", 0),
		    (long long)int_at(obj, "metadata.generation", 0));
		return;
	}
	if (!strcasecmp(status, c->status)) {
		say(res, KT_WAIT_MET, "condition %s=%s", c->type, status);
		return;
	}
	if (cJSON_IsString(cJSON_GetObjectItem(cond, "reason")))
		say(res, KT_WAIT_NOT_YET, "condition %s=%s (%s)", c->type, status,
		    cJSON_GetObjectItem(cond, "reason")->valuestring);
	else
		say(res, KT_WAIT_NOT_YET, "condition %s=%s", c->type, status);
}

static void judge_jsonpath(const struct kt_wait_cond *c, const cJSON *obj,
			   struct kt_wait_result *res)
{
	bool many = false;
	const cJSON *v = kt_wait_path_find(c, obj, &many);
	const char *t;
	char buf[64];

	if (!v) {
		say(res, KT_WAIT_NOT_YET, "%s finds nothing", c->expr);
		return;
	}
	if (!c->value) {
		say(res, KT_WAIT_MET, "%s exists", c->expr);
		return;
	}
	if (many) {
		say(res, KT_WAIT_NEVER, "%s finds more than one value", c->expr);
		return;
	}
	t = scalar_text(v, buf, sizeof(buf));
	if (!t) {
		say(res, KT_WAIT_NEVER, "%s finds %s, not a value to compare", c->expr,
		    cJSON_IsArray(v) ? "a list" : "an object");
		return;
	}
	if (!strcmp(t, c->value))
		say(res, KT_WAIT_MET, "%s is %s", c->expr, t);
	else
		say(res, KT_WAIT_NOT_YET, "%s is %s", c->expr, t);
}

static void rollout_deployment(const cJSON *d, const char *name, struct kt_wait_result *res)
{
	const cJSON *prog = find_condition(d, "Progressing", false);
	int64_t updated = int_at(d, "status.updatedReplicas", 0);
	int64_t replicas = int_at(d, "status.replicas", 0);
	int64_t available = int_at(d, "status.availableReplicas", 0);

	if (int_at(d, "metadata.generation", 0) > int_at(d, "status.observedGeneration", 0)) {
		say(res, KT_WAIT_NOT_YET, "waiting for deployment spec update to be observed");
		return;
	}
	if (prog && !strcmp(str_at(prog, "reason"), "ProgressDeadlineExceeded")) {
		say(res, KT_WAIT_NEVER, "deployment \"%s\" exceeded its progress deadline", name);
		return;
	}
	if (has_int(d, "spec.replicas") && updated < int_at(d, "spec.replicas", 0)) {
		say(res, KT_WAIT_NOT_YET, "%lld out of %lld new replicas have been updated",
		    (long long)updated, (long long)int_at(d, "spec.replicas", 0));
		return;
	}
	if (replicas > updated) {
		say(res, KT_WAIT_NOT_YET, "%lld old replicas are pending termination",
		    (long long)(replicas - updated));
		return;
	}
	if (available < updated) {
		say(res, KT_WAIT_NOT_YET, "%lld of %lld updated replicas are available",
		    (long long)available, (long long)updated);
		return;
	}
	say(res, KT_WAIT_MET, "deployment \"%s\" successfully rolled out", name);
}

static void rollout_daemonset(const cJSON *ds, const char *name, struct kt_wait_result *res)
{
	int64_t desired = int_at(ds, "status.desiredNumberScheduled", 0);
	int64_t updated = int_at(ds, "status.updatedNumberScheduled", 0);
	int64_t available = int_at(ds, "status.numberAvailable", 0);

	if (strcmp(str_at(ds, "spec.updateStrategy.type"), "RollingUpdate")) {
		say(res, KT_WAIT_NEVER,
		    "rollout status is only available for the RollingUpdate "
		    "strategy type");
		return;
	}
	if (int_at(ds, "metadata.generation", 0) > int_at(ds, "status.observedGeneration", 0)) {
		say(res, KT_WAIT_NOT_YET, "waiting for daemon set spec update to be observed");
		return;
	}
	if (updated < desired) {
		say(res, KT_WAIT_NOT_YET, "%lld out of %lld new pods have been updated",
		    (long long)updated, (long long)desired);
		return;
	}
	if (available < desired) {
		say(res, KT_WAIT_NOT_YET, "%lld of %lld updated pods are available",
		    (long long)available, (long long)desired);
		return;
	}
	say(res, KT_WAIT_MET, "daemon set \"%s\" successfully rolled out", name);
}

static void rollout_statefulset(const cJSON *s, struct kt_wait_result *res)
{
	int64_t observed = int_at(s, "status.observedGeneration", 0);
	int64_t ready = int_at(s, "status.readyReplicas", 0);
	int64_t updated = int_at(s, "status.updatedReplicas", 0);
	const char *update_rev = str_at(s, "status.updateRevision");

	if (strcmp(str_at(s, "spec.updateStrategy.type"), "RollingUpdate")) {
		say(res, KT_WAIT_NEVER,
		    "rollout status is only available for the RollingUpdate "
		    "strategy type");
		return;
	}
	if (!observed || int_at(s, "metadata.generation", 0) > observed) {
		say(res, KT_WAIT_NOT_YET, "waiting for statefulset spec update to be observed");
		return;
	}
	if (has_int(s, "spec.replicas") && ready < int_at(s, "spec.replicas", 0)) {
		say(res, KT_WAIT_NOT_YET, "waiting for %lld pods to be ready",
		    (long long)(int_at(s, "spec.replicas", 0) - ready));
		return;
	}
	if (has_int(s, "spec.updateStrategy.rollingUpdate.partition")) {
		if (has_int(s, "spec.replicas")) {
			int64_t want = int_at(s, "spec.replicas", 0) -
				       int_at(s, "spec.updateStrategy.rollingUpdate.partition", 0);

			if (updated < want) {
				say(res, KT_WAIT_NOT_YET,
				    "waiting for partitioned roll out to "
				    "finish: %lld out of %lld new pods have been updated",
				    (long long)updated, (long long)want);
				return;
			}
		}
		say(res, KT_WAIT_MET,
		    "partitioned roll out complete: %lld new pods have been "
		    "updated",
		    (long long)updated);
		return;
	}
	if (strcmp(update_rev, str_at(s, "status.currentRevision"))) {
		say(res, KT_WAIT_NOT_YET,
		    "waiting for statefulset rolling update to complete "
		    "%lld pods at revision %s",
		    (long long)updated, update_rev);
		return;
	}
	say(res, KT_WAIT_MET, "statefulset rolling update complete %lld pods at revision %s",
	    (long long)int_at(s, "status.currentReplicas", 0), str_at(s, "status.currentRevision"));
}

static void judge_rollout(const cJSON *obj, struct kt_wait_result *res)
{
	const char *kind = str_at(obj, "kind"), *name = str_at(obj, "metadata.name");

	if (!strcmp(kind, "Deployment"))
		rollout_deployment(obj, name, res);
	else if (!strcmp(kind, "DaemonSet"))
		rollout_daemonset(obj, name, res);
	else if (!strcmp(kind, "StatefulSet"))
		rollout_statefulset(obj, res);
	else /* a Service or ConfigMap beside them in a manifest: there, nothing to roll out */
		say(res, KT_WAIT_MET, "created (a %s has no rollout)", *kind ? kind : "kind");
}

void kt_wait_judge(const struct kt_wait_cond *c, const cJSON *obj, struct kt_wait_result *res)
{
	res->verdict = KT_WAIT_NOT_YET;
	res->reason[0] = '\0';
	if (c->form == KT_WAIT_DELETE) {
		if (obj)
			say(res, KT_WAIT_NOT_YET, "exists");
		else
			say(res, KT_WAIT_MET, "deleted");
		return;
	}
	if (!obj) {
		say(res, KT_WAIT_NOT_YET, "not created yet");
		return;
	}
	switch (c->form) {
	case KT_WAIT_CREATE:
		say(res, KT_WAIT_MET, "created");
		break;
	case KT_WAIT_CONDITION:
		judge_condition(c, obj, res);
		break;
	case KT_WAIT_JSONPATH:
		judge_jsonpath(c, obj, res);
		break;
	case KT_WAIT_ROLLOUT:
		judge_rollout(obj, res);
		break;
	case KT_WAIT_DELETE:
		break;
	}
}

/* ------------------------------------------------------------ fail fast */

static const char *const stuck_reasons[] = {
	"CrashLoopBackOff",	      "ImagePullBackOff", "ErrImagePull",
	"CreateContainerConfigError", "InvalidImageName",
};

static bool stuck_containers(const cJSON *pod, const char *list, struct kt_wait_result *res)
{
	const cJSON *cs, *all = kt_json_path(pod, list);

	if (!cJSON_IsArray(all))
		return false;
	cJSON_ArrayForEach (cs, all) {
		const char *reason = str_at(cs, "state.waiting.reason");

		for (size_t i = 0; i < sizeof(stuck_reasons) / sizeof(stuck_reasons[0]); i++) {
			const char *msg = str_at(cs, "state.waiting.message");

			if (strcmp(reason, stuck_reasons[i]))
				continue;
			say(res, KT_WAIT_NEVER, "container %s is waiting in %s%s%s",
			    str_at(cs, "name"), reason, *msg ? ": " : "", msg);
			return true;
		}
	}
	return false;
}

void kt_wait_fail_fast(const cJSON *obj, struct kt_wait_result *res)
{
	const char *kind = str_at(obj, "kind");
	const cJSON *c;

	res->verdict = KT_WAIT_NOT_YET;
	res->reason[0] = '\0';
	if (!obj)
		return;
	if (!strcmp(kind, "Pod")) {
		if (stuck_containers(obj, "status.initContainerStatuses", res) ||
		    stuck_containers(obj, "status.containerStatuses", res))
			return;
		c = find_condition(obj, "PodScheduled", false);
		if (c && !strcmp(str_at(c, "status"), "False") &&
		    !strcmp(str_at(c, "reason"), "Unschedulable"))
			say(res, KT_WAIT_NEVER, "unschedulable%s%s",
			    *str_at(c, "message") ? ": " : "", str_at(c, "message"));
	} else if (!strcmp(kind, "Job")) {
		c = find_condition(obj, "Failed", false);
		if (c && !strcmp(str_at(c, "status"), "True"))
			say(res, KT_WAIT_NEVER, "failed%s%s%s%s", *str_at(c, "reason") ? ": " : "",
			    str_at(c, "reason"), *str_at(c, "message") ? ": " : "",
			    str_at(c, "message"));
	} else if (!strcmp(kind, "Deployment")) {
		c = find_condition(obj, "Progressing", false);
		if (c && !strcmp(str_at(c, "status"), "False") &&
		    !strcmp(str_at(c, "reason"), "ProgressDeadlineExceeded"))
			say(res, KT_WAIT_NEVER, "progress deadline exceeded%s%s",
			    *str_at(c, "message") ? ": " : "", str_at(c, "message"));
	}
}
