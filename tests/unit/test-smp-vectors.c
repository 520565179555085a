/* SPDX-License-Identifier: Apache-2.0 */
/* test-smp-vectors: upstream SMP cases through the strategic-patch command */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "json.h"
#include "smp_int.h"
#include "tap.h"

/*
 * Every case of tests/fixtures/smp-conformance/cases.json except the eight
 * test-helper cases (sortMergeLists) and the two that test a Go argument
 * (goOnly) runs twice, once with the OpenAPI v2 and once with the v3 schema,
 * and is one TAP line each time.  The checks are the upstream test's: see
 * the README in that directory.  The two goSliceAliasing cases (smp-0122,
 * smp-0124) are expected to pass: the engine reproduces upstream's order.
 */

struct run {
	int status;	/* exit status, or -1 */
	char *out, *err;
};

static const char *srcdir, *cli, *work;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return strdup("");
	do {
		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 8192);

			if (!nb)
				break;
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf ? buf : strdup("");
}

static void path_in(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", work, name);
}

/* runs strategic-patch with args, output captured */
static void run_cli(char *const args[], struct run *r)
{
	char out[1024], err[1024];
	pid_t pid;
	int st;

	path_in(out, sizeof(out), "stdout");
	path_in(err, sizeof(err), "stderr");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(127);
		execvp(cli, args);
		_exit(127);
	}
	r->status = -1;
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		r->status = WEXITSTATUS(st);
	r->out = slurp(out);
	r->err = slurp(err);
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* writes a case document, or its verbatim text when the case has one */
static int write_doc(const cJSON *c, const char *field, const char *name, char *path,
		     size_t size)
{
	char key[64];
	const char *text;
	char *printed = NULL;
	FILE *f;

	snprintf(key, sizeof(key), "%sText", field);
	text = kt_json_get_string(c, key);
	if (!text) {
		printed = kt_json_print(kt_json_get(c, field), 0);
		text = printed ? printed : "{}";
	}
	path_in(path, size, name);
	f = fopen(path, "w");
	if (!f) {
		free(printed);
		return -1;
	}
	fputs(text, f);
	fclose(f);
	free(printed);
	return 0;
}

struct check {
	bool ok;
	char why[600];
};


/* compares one output line with the expected value (text when the case says so) */
static void compare(struct check *ck, const char *out, const char *err, const cJSON *c,
		    const char *field, const char *what)
{
	char key[64];
	const char *want_text;
	cJSON *got;

	if (!ck->ok)
		return;
	if (!out) {
		ck->ok = false;
		snprintf(ck->why, sizeof(ck->why), "%s failed: %.500s", what, err ? err : "?");
		return;
	}
	snprintf(key, sizeof(key), "%sText", field);
	want_text = kt_json_get_string(c, key);
	if (want_text && strcmp(kt_json_get_string(c, "compare"), "exactText") == 0) {
		if (strcmp(out, want_text) != 0)
			goto bad;
		return;
	}
	got = kt_json_parse("stdout", out, strlen(out), NULL);
	if (got && kt_go_equal(got, kt_json_get(c, field))) {
		cJSON_Delete(got);
		return;
	}
	cJSON_Delete(got);
bad:
	ck->ok = false;
	snprintf(ck->why, sizeof(ck->why), "%s: got %.500s", what, out);
}

struct schema_args {
	char file[1024];
	const char *type;
};

/* the bad-input cases: one run each, exit status and message checked */
static void case_single(struct check *ck, const cJSON *c, const struct schema_args *s)
{
	char o[1024], p[1024];
	const char *phrase = kt_json_get_string(c, "expectError");
	struct run r;

	write_doc(c, "original", "o.json", o, sizeof(o));
	write_doc(c, "twoWay", "p.json", p, sizeof(p));
	char *args[] = { "strategic-patch", "apply", "-S", "--schema", (char *)s->file,
			 "--definition", (char *)s->type, o, p, NULL };

	run_cli(args, &r);
	if (r.status != 2 || !phrase || !strstr(r.err, phrase) || *r.out) {
		ck->ok = false;
		snprintf(ck->why, sizeof(ck->why), "exit %d, stdout %.200s stderr %.200s",
			 r.status, r.out, r.err);
	}
	run_free(&r);
}

/* ------------------------------------------------------------- batches */

struct tcase {
	const cJSON *c;
	struct check ck;
	char *out, *err;	/* this step's result line or error message */
	char *patch;		/* the patch the create step printed */
};

/* a stream file with one document per case: a case field, or the saved patch */
static void write_stream(struct tcase **v, size_t n, const char *field, const char *name,
			 char *path, size_t size)
{
	FILE *f;

	path_in(path, size, name);
	f = fopen(path, "w");
	if (!f)
		return;
	for (size_t i = 0; i < n; i++) {
		char key[64];
		const char *text;
		char *printed = NULL;

		snprintf(key, sizeof(key), "%sText", field ? field : "");
		text = field ? kt_json_get_string(v[i]->c, key) : v[i]->patch;
		if (!text) {
			printed = kt_json_print(kt_json_get(v[i]->c, field), 0);
			text = printed ? printed : "{}";
		}
		fputs(text, f);
		fputs("\n", f);
		free(printed);
	}
	fclose(f);
}

static char *next_line(char **p)
{
	char *s = *p, *nl;

	if (!s || !*s)
		return NULL;
	nl = strchr(s, '\n');
	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = s + strlen(s);
	}
	return s;
}

/* runs one --stream command and hands each case its line or its error */
static void run_batch(char *const args[], struct tcase **v, size_t n)
{
	static const char head[] = "strategic-patch: document ";
	struct run r;
	char *p, *line;

	for (size_t i = 0; i < n; i++) {
		free(v[i]->out);
		free(v[i]->err);
		v[i]->out = v[i]->err = NULL;
	}
	if (!n)
		return;
	run_cli(args, &r);
	p = r.err;
	while ((line = next_line(&p))) {
		char *end;
		long k;

		if (strncmp(line, head, sizeof(head) - 1) != 0)
			continue;
		k = strtol(line + sizeof(head) - 1, &end, 10);
		if (k >= 1 && (size_t)k <= n && strncmp(end, ": ", 2) == 0)
			v[k - 1]->err = strdup(end + 2);
	}
	p = r.out;
	for (size_t i = 0; i < n; i++) {
		if (v[i]->err)
			continue;
		line = next_line(&p);
		if (line)
			v[i]->out = strdup(line);
		else
			v[i]->err = strdup(*r.err ? r.err : "no output");
	}
	run_free(&r);
}

static void expect_error(struct tcase *t, const char *phrase, const char *what)
{
	if (!t->ck.ok)
		return;
	if (t->out || !t->err || !strstr(t->err, phrase)) {
		t->ck.ok = false;
		snprintf(t->ck.why, sizeof(t->ck.why), "%s: wanted an error with '%s', got %.300s",
			 what, phrase, t->out ? t->out : t->err ? t->err : "?");
	}
}

/* the cases of one kind and schema, in a fresh list */
static size_t pick(struct tcase *all, size_t nall, const char *kind, const char *type,
		   bool (*want)(const struct tcase *), struct tcase **v)
{
	size_t n = 0;

	for (size_t i = 0; i < nall; i++) {
		const cJSON *c = all[i].c;

		if (strcmp(kt_json_get_string(c, "kind"), kind) != 0 ||
		    strcmp(kt_json_get_string(c, "schema"), type) != 0 ||
		    strcmp(kt_json_get_string(c, "compare"), "exactError") == 0)
			continue;
		if (want && !want(&all[i]))
			continue;
		v[n++] = &all[i];
	}
	return n;
}

static bool still_ok_with_patch(const struct tcase *t)
{
	return t->ck.ok && t->patch;
}

static bool wants_conflict(const struct tcase *t)
{
	return cJSON_IsTrue(kt_json_get(t->c, "expectConflict"));
}

/* a create step's outcome: the expected error, or the patch kept for apply */
static void check_create(struct tcase *t, const char *field, const char *what)
{
	const char *phrase = kt_json_get_string(t->c, "expectError");
	bool allow = cJSON_IsTrue(kt_json_get(t->c, "allowSuccess"));

	if (phrase && !(allow && t->out)) {
		expect_error(t, phrase, what);
		return;
	}
	compare(&t->ck, t->out, t->err, t->c, field, what);
	if (t->ck.ok && !phrase)
		t->patch = strdup(t->out);
}

static void apply_step(struct tcase **v, size_t n, const struct schema_args *s,
		       const char *docfield, const char *what)
{
	char d[1024], p[1024];
	size_t m = 0;
	struct tcase **w = malloc((n ? n : 1) * sizeof(*w));

	if (!w)
		return;
	for (size_t i = 0; i < n; i++)
		if (still_ok_with_patch(v[i]))
			w[m++] = v[i];
	write_stream(w, m, docfield, "d.json", d, sizeof(d));
	write_stream(w, m, NULL, "p.json", p, sizeof(p));
	char *args[] = { "strategic-patch", "apply", "--stream", "-S", "--schema",
			 (char *)s->file, "--definition", (char *)s->type, d, p, NULL };

	run_batch(args, w, m);
	for (size_t i = 0; i < m; i++)
		compare(&w[i]->ck, w[i]->out, w[i]->err, w[i]->c, "result", what);
	free(w);
}

static void batch_apply(struct tcase **v, size_t n, const struct schema_args *s)
{
	char o[1024], p[1024];

	write_stream(v, n, "original", "o.json", o, sizeof(o));
	write_stream(v, n, "twoWay", "p.json", p, sizeof(p));
	char *args[] = { "strategic-patch", "apply", "--stream", "-S", "--schema",
			 (char *)s->file, "--definition", (char *)s->type, o, p, NULL };

	run_batch(args, v, n);
	for (size_t i = 0; i < n; i++) {
		const char *phrase = kt_json_get_string(v[i]->c, "expectError");

		if (phrase)
			expect_error(v[i], phrase, "apply");
		else
			compare(&v[i]->ck, v[i]->out, v[i]->err, v[i]->c, "result", "apply");
	}
}

static void batch_diff(struct tcase **v, size_t n, const struct schema_args *s)
{
	char o[1024], m[1024];

	write_stream(v, n, "original", "o.json", o, sizeof(o));
	write_stream(v, n, "modified", "m.json", m, sizeof(m));
	char *args[] = { "strategic-patch", "diff", "--stream", "--schema", (char *)s->file,
			 "--definition", (char *)s->type, o, m, NULL };

	run_batch(args, v, n);
	for (size_t i = 0; i < n; i++)
		check_create(v[i], "twoWay", "diff");
	apply_step(v, n, s, "original", "apply");
}

static void batch_diff3(struct tcase **v, size_t n, const struct schema_args *s)
{
	char o[1024], m[1024], c[1024];
	struct tcase **w = malloc((n ? n : 1) * sizeof(*w));
	size_t k = 0;

	if (!w)
		return;
	write_stream(v, n, "original", "o.json", o, sizeof(o));
	write_stream(v, n, "modified", "m.json", m, sizeof(m));
	write_stream(v, n, "current", "c.json", c, sizeof(c));
	char *args[] = { "strategic-patch", "diff3", "--stream", "--no-overwrite", "--schema",
			 (char *)s->file, "--definition", (char *)s->type, o, m, c, NULL };

	run_batch(args, v, n);
	for (size_t i = 0; i < n; i++) {
		if (!wants_conflict(v[i])) {
			check_create(v[i], "threeWay", "diff3");
			continue;
		}
		if (v[i]->out || !v[i]->err || strncmp(v[i]->err, "conflict: ", 10) != 0) {
			v[i]->ck.ok = false;
			snprintf(v[i]->ck.why, sizeof(v[i]->ck.why), "wanted a conflict, got %.300s",
				 v[i]->out ? v[i]->out : v[i]->err ? v[i]->err : "?");
			continue;
		}
		w[k++] = v[i];
	}
	/* the conflicts again, overwriting */
	write_stream(w, k, "original", "o.json", o, sizeof(o));
	write_stream(w, k, "modified", "m.json", m, sizeof(m));
	write_stream(w, k, "current", "c.json", c, sizeof(c));
	char *again[] = { "strategic-patch", "diff3", "--stream", "--schema", (char *)s->file,
			  "--definition", (char *)s->type, o, m, c, NULL };

	run_batch(again, w, k);
	for (size_t i = 0; i < k; i++)
		check_create(w[i], "threeWay", "diff3");
	free(w);
	apply_step(v, n, s, "current", "apply");
}

static void run_variant(const cJSON *cases, const char *variant)
{
	static const char *const types[] = { "mergeItem", "precisionItem" };
	struct tcase *all;
	struct tcase **v;
	size_t n = 0, k;

	for (const cJSON *c = cases->child; c; c = c->next)
		n++;
	all = calloc(n ? n : 1, sizeof(*all));
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!all || !v)
		goto out;
	n = 0;
	for (const cJSON *c = cases->child; c; c = c->next) {
		if (strcmp(kt_json_get_string(c, "kind"), "sortMergeLists") == 0 ||
		    cJSON_IsTrue(kt_json_get(c, "goOnly")))
			continue;
		all[n].c = c;
		all[n++].ck.ok = true;
	}
	for (size_t t = 0; t < 2; t++) {
		struct schema_args s;

		snprintf(s.file, sizeof(s.file),
			 "%s/tests/fixtures/smp-conformance/swagger-%s%s.json", srcdir,
			 t ? "precision-item" : "merge-item", strcmp(variant, "v3") == 0 ? "-v3" : "");
		s.type = types[t];
		k = pick(all, n, "apply", s.type, NULL, v);
		batch_apply(v, k, &s);
		k = pick(all, n, "create2way", s.type, NULL, v);
		batch_diff(v, k, &s);
		k = pick(all, n, "create3way", s.type, NULL, v);
		batch_diff3(v, k, &s);
		for (size_t i = 0; i < n; i++)
			if (strcmp(kt_json_get_string(all[i].c, "schema"), s.type) == 0 &&
			    strcmp(kt_json_get_string(all[i].c, "compare"), "exactError") == 0)
				case_single(&all[i].ck, all[i].c, &s);
	}
	for (size_t i = 0; i < n; i++) {
		char name[300];

		snprintf(name, sizeof(name), "%s %s %s: %.120s", variant,
			 kt_json_get_string(all[i].c, "id"), kt_json_get_string(all[i].c, "kind"),
			 kt_json_get_string(all[i].c, "description"));
		if (!all[i].ck.ok)
			printf("# %s\n", all[i].ck.why);
		tap_ok(all[i].ck.ok, name);
		free(all[i].out);
		free(all[i].err);
		free(all[i].patch);
	}
out:
	free(all);
	free(v);
}

int main(void)
{
	char casefile[1024], tmpl[1024];
	struct kt_err err = { 0 };
	const char *tmp = getenv("TMPDIR");
	const char *build = getenv("KT_BUILDDIR");
	static char clibuf[1024];
	cJSON *cases;

	srcdir = getenv("KT_SRCDIR") ? getenv("KT_SRCDIR") : ".";
	if (build) {
		snprintf(clibuf, sizeof(clibuf), "%s/strategic-patch", build);
		cli = clibuf;
	} else {
		cli = "strategic-patch";
	}
	snprintf(casefile, sizeof(casefile), "%s/tests/fixtures/smp-conformance/cases.json", srcdir);
	cases = kt_json_read_file(casefile, KT_JSON_MAX_INPUT_DEFAULT, &err);
	snprintf(tmpl, sizeof(tmpl), "%s/test-smp-vectors.XXXXXX", tmp ? tmp : "/tmp");
	work = mkdtemp(tmpl);
	if (!cases || !work) {
		printf("Bail out! %s\n", cases ? strerror(errno) : err.msg);
		return 1;
	}
	run_variant(cases, "v2");
	run_variant(cases, "v3");
	cJSON_Delete(cases);
	{
		const char *names[] = { "o.json", "m.json", "c.json", "d.json", "p.json", "stdout",
					"stderr" };
		char p[1024];

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			path_in(p, sizeof(p), names[i]);
			unlink(p);
		}
		rmdir(work);
	}
	return tap_done();
}
