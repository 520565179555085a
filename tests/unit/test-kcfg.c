/* SPDX-License-Identifier: Apache-2.0 */
/* test-kcfg: kubeconfig merging, flags, in-cluster config, token files, exec plugins */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "kt.h"
#include "tap.h"

#define CERT "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
#define KEY "-----BEGIN EC PRIVATE KEY-----\nMHcfake\n-----END EC PRIVATE KEY-----\n"
/* base64 of CERT */
#define CERT_B64 \
	"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"

static char dir[64];

static const char *at(const char *name)
{
	static char paths[8][256];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, 256, "%s/%s", dir, name);
	return p;
}

static void put(const char *name, const char *text, int mode)
{
	const char *p = at(name);
	FILE *f = fopen(p, "w");

	if (!f) {
		perror(p);
		exit(99);
	}
	fputs(text, f);
	fclose(f);
	chmod(p, (mode_t)mode);
}

static const char *first_kubeconfig = "apiVersion: v1\n"
				      "kind: Config\n"
				      "current-context: a\n"
				      "clusters:\n"
				      "- name: c1\n"
				      "  cluster:\n"
				      "    server: https://one.example:6443/\n"
				      "    certificate-authority: ca.crt\n"
				      "    tls-server-name: api.one.example\n"
				      "- name: c2\n"
				      "  cluster:\n"
				      "    server: https://two.example\n"
				      "    certificate-authority-data: " CERT_B64 "\n"
				      "    proxy-url: http://proxy.example:3128\n"
				      "users:\n"
				      "- name: u1\n"
				      "  user:\n"
				      "    token: tok-one\n"
				      "contexts:\n"
				      "- name: a\n"
				      "  context: {cluster: c1, user: u1}\n"
				      "- name: nouser\n"
				      "  context: {cluster: c1, user: ghost}\n"
				      "- name: nocluster\n"
				      "  context: {cluster: ghost, user: u1}\n";

static const char *second_kubeconfig =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: b\n"
	"clusters:\n"
	"- name: c1\n"
	"  cluster:\n"
	"    server: https://loser.example\n"
	"- name: c3\n"
	"  cluster:\n"
	"    server: http://127.0.0.1:8080\n"
	"    insecure-skip-tls-verify: true\n"
	"users:\n"
	"- name: u1\n"
	"  user:\n"
	"    token: loser\n"
	"- name: u2\n"
	"  user:\n"
	"    tokenFile: tok\n"
	"- name: u3\n"
	"  user:\n"
	"    client-certificate: client.crt\n"
	"    client-key: client.key\n"
	"- name: ux\n"
	"  user:\n"
	"    exec:\n"
	"      apiVersion: client.authentication.k8s.io/v1\n"
	"      command: ./plugin.sh\n"
	"      args: [first, second]\n"
	"      env: [{name: PLUGIN_TOKEN, value: from-env}]\n"
	"      provideClusterInfo: true\n"
	"- name: ubad\n"
	"  user:\n"
	"    exec: {apiVersion: client.authentication.k8s.io/v1, command: ./bad.sh}\n"
	"- name: ugarbage\n"
	"  user:\n"
	"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./garbage.sh}\n"
	"- name: umismatch\n"
	"  user:\n"
	"    exec: {apiVersion: client.authentication.k8s.io/v1, command: ./beta.sh}\n"
	"contexts:\n"
	"- name: a\n"
	"  context: {cluster: c3, user: u2}\n"
	"- name: mismatch\n"
	"  context: {cluster: c3, user: umismatch}\n"
	"- name: b\n"
	"  context: {cluster: c2, user: u1}\n"
	"- name: file\n"
	"  context: {cluster: c3, user: u2}\n"
	"- name: cert\n"
	"  context: {cluster: c3, user: u3}\n"
	"- name: exec\n"
	"  context: {cluster: c3, user: ux}\n"
	"- name: execbad\n"
	"  context: {cluster: c3, user: ubad}\n"
	"- name: execgarbage\n"
	"  context: {cluster: c3, user: ugarbage}\n";

static void setup(void)
{
	char list[600];

	snprintf(dir, sizeof(dir), "test-kcfg.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(99);
	}
	put("ca.crt", CERT, 0644);
	put("client.crt", CERT, 0644);
	put("client.key", KEY, 0600);
	put("notpem.crt", "hello\n", 0644);
	put("tok", "file-token\n", 0600);
	put("one.yaml", first_kubeconfig, 0600);
	put("two.yaml", second_kubeconfig, 0600);
	put("broken.yaml", "clusters: [\n  - {name: x\n", 0600);
	put("plugin.sh",
	    "#!/bin/sh\n"
	    "echo run >> \"$(dirname \"$0\")/plugin.runs\"\n"
	    "case \"$KUBERNETES_EXEC_INFO\" in *'\"server\":\"http://127.0.0.1:8080\"'*) ;; "
	    "*) exit 3;; esac\n"
	    "[ \"$1 $2\" = 'first second' ] || exit 4\n"
	    /* a new token each run, the first plain: each run a new credential */
	    "n=$(wc -l <\"$(dirname \"$0\")/plugin.runs\") s=\n"
	    "[ $n -eq 1 ] || s=$n\n"
	    "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	    "\"status\":{\"token\":\"%s\",\"expirationTimestamp\":\"2999-01-01T00:00:00Z\"}}' "
	    "\"$PLUGIN_TOKEN$s\"\n",
	    0755);
	put("bad.sh", "#!/bin/sh\nexit 5\n", 0755);
	put("beta.sh",
	    "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
	    "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'\n",
	    0755);
	put("garbage.sh", "#!/bin/sh\necho 'this is not json'\n", 0755);
	snprintf(list, sizeof(list), "%s:%s:%s", at("one.yaml"), at("missing.yaml"),
		 at("two.yaml"));
	setenv("KUBECONFIG", list, 1);
	unsetenv("KUBERNETES_SERVICE_HOST");
}

static void cleanup(void)
{
	static const char *files[] = { "ca.crt",     "client.crt",  "client.key",
				       "notpem.crt", "tok",	    "one.yaml",
				       "two.yaml",   "broken.yaml", "plugin.sh",
				       "bad.sh",     "garbage.sh",  "plugin.runs",
				       "token",	     "beta.sh" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(at(files[i]));
	rmdir(dir);
}

static int runs(void)
{
	FILE *f = fopen(at("plugin.runs"), "r");
	int n = 0, c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void test_merge(void)
{
	struct kt_kcfg cfg;
	struct kt_err err = { 0 };
	struct kt_api_opts o = { 0 };
	int rc;

	rc = kt_kcfg_load(&cfg, NULL, &err);
	tap_ok(rc == 0, "merge: loads");
	tap_str(cfg.context, "a", "merge: current-context from the first file");
	tap_str(cfg.server, "https://one.example:6443",
		"merge: first file's cluster wins");
	tap_str(cfg.token, "tok-one", "merge: first file's user wins");
	tap_ok(cfg.ca_pem && !strcmp(cfg.ca_pem, CERT), "merge: relative CA path read");
	tap_str(cfg.tls_server_name, "api.one.example", "merge: tls-server-name");
	kt_kcfg_release(&cfg);

	o.context = "b";
	rc = kt_kcfg_load(&cfg, &o, &err);
	tap_ok(rc == 0 && cfg.ca_pem && !strcmp(cfg.ca_pem, CERT),
	       "--context: CA from -data");
	tap_str(cfg.proxy_url, "http://proxy.example:3128", "--context: proxy-url");
	tap_str(cfg.cluster, "c2", "--context: cluster from the second file");
	tap_ok(cfg.timeout_ms == 30000, "default request timeout 30s");
	kt_kcfg_release(&cfg);
}

static void expect_fail(const struct kt_api_opts *o, const char *want, const char *name)
{
	struct kt_kcfg cfg;
	struct kt_err err = { 0 };
	int rc = kt_kcfg_load(&cfg, o, &err);

	tap_str(rc < 0 ? err.msg : "(loaded)", want, name);
	tap_ok(rc < 0 && cfg.server == NULL && kt_exit_code(&err) == 1,
	       "exit 1, nothing kept");
}

static void test_errors(void)
{
	/* a context in one.yaml and two.yaml that names what is not there */
	static const struct {
		const char *context, *what, *name;
	} missing[] = {
		{ "ghost", "context 'ghost' not found", "missing context" },
		{ "nouser", "user 'ghost' not found for context 'nouser'", "missing user" },
		{ "nocluster", "cluster 'ghost' not found for context 'nocluster'",
		  "missing cluster" },
	};
	struct kt_api_opts o = { 0 };
	char want[512];

	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
		o.context = missing[i].context;
		snprintf(want, sizeof(want), "kubeconfig '%s:%s': %s", at("one.yaml"),
			 at("two.yaml"), missing[i].what);
		expect_fail(&o, want, missing[i].name);
	}
	o.context = NULL;
	o.kubeconfig = at("broken.yaml");
	{
		struct kt_kcfg cfg;
		struct kt_err err = { 0 };
		int rc = kt_kcfg_load(&cfg, &o, &err);

		snprintf(want, sizeof(want),
			 "invalid kubeconfig: %s:", at("broken.yaml"));
		tap_ok(rc < 0 && !strncmp(err.msg, want, strlen(want)) &&
			       kt_exit_code(&err) == 1,
		       "kubeconfig that is not YAML: position named");
		if (rc == 0)
			kt_kcfg_release(&cfg);
	}
	o.kubeconfig = at("nothere.yaml");
	snprintf(want, sizeof(want),
		 "cannot read kubeconfig '%s': No such file or directory",
		 at("nothere.yaml"));
	expect_fail(&o, want, "--kubeconfig missing");
	o.kubeconfig = NULL;
	o.ca_file = at("notpem.crt");
	snprintf(want, sizeof(want), "certificate authority '%s' is not PEM",
		 at("notpem.crt"));
	expect_fail(&o, want, "CA that is not PEM");
	o.ca_file = at("nope.crt");
	snprintf(want, sizeof(want),
		 "cannot read certificate authority '%s': No such file or "
		 "directory",
		 at("nope.crt"));
	expect_fail(&o, want, "CA that is missing");
	o.ca_file = NULL;
	o.context = "cert";
	o.key_file = at("notpem.crt");
	snprintf(want, sizeof(want), "client key '%s' is not PEM", at("notpem.crt"));
	expect_fail(&o, want, "key that is not PEM");
}

/* a server URL is read by libcurl, as it will be sent */
static void test_server_urls(void)
{
	static const char *good[] = { "http://127.0.0.1:8080", "https://[fd00::1]:6443",
				      "https://h_1.example/prefix" };
	static const char *bad[] = { "not a url", "ftp://h.example", "https://:6443",
				     "https://user@h.example", "https://h.example:99999",
				     "https://h .example", "https://h.example/a b" };
	struct kt_kcfg cfg;
	struct kt_err err = { 0 };
	struct kt_api_opts o = { .token = "t" };
	char want[128];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		o.server = good[i];
		tap_ok(kt_kcfg_load(&cfg, &o, &err) == 0, good[i]);
		kt_kcfg_release(&cfg);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.server = bad[i];
		snprintf(want, sizeof(want), "--server: server '%s' is not an http(s) URL", bad[i]);
		tap_str(kt_kcfg_load(&cfg, &o, &err) < 0 ? err.msg : "(loaded)", want, bad[i]);
	}
}

static void test_flags(void)
{
	struct kt_kcfg cfg;
	struct kt_err err = { 0 };
	struct kt_api_opts o = { .server = "https://flag.example:1234",
				 .token = "flag-token",
				 .timeout_set = true,
				 .timeout_ms = 1500 };
	int rc;

	unsetenv("KUBECONFIG");
	setenv("HOME", dir, 1); /* no .kube/config there */
	rc = kt_kcfg_load(&cfg, &o, &err);
	tap_ok(rc == 0, "--server alone needs no kubeconfig");
	tap_str(cfg.server, "https://flag.example:1234", "--server used");
	tap_str(cfg.token, "flag-token", "--token used");
	tap_str(cfg.source, "flags", "source is flags");
	tap_ok(cfg.timeout_ms == 1500, "--request-timeout used");
	kt_kcfg_release(&cfg);

	rc = kt_kcfg_load(&cfg, NULL, &err);
	tap_str(rc < 0 ? err.msg : "(loaded)",
		"no kubeconfig found: set KUBECONFIG, create ~/.kube/config or pass "
		"--kubeconfig or --server",
		"nothing configured");
	test_server_urls();
}

/*
 * A rotation as node-bootstrap makes one: the files replaced by rename.  The
 * next refresh takes the new pair and bumps the generation (so api sets it on
 * its handles); one with nothing changed does not; a pair that cannot be read
 * keeps the one in use.
 */
static void test_cert_rotation(struct kt_kcfg *cfg)
{
	struct kt_err err = { 0 };
	unsigned gen = cfg->generation;
	char tmp[300];

	tap_ok(kt_kcfg_refresh(cfg, false, &err) == 0 && cfg->generation == gen,
	       "client certificate unchanged: nothing re-read");
	put("client.crt.new", CERT "# renewed\n", 0600);
	put("client.key.new", KEY "# renewed\n", 0600);
	snprintf(tmp, sizeof(tmp), "%s", at("client.crt.new"));
	rename(tmp, at("client.crt"));
	snprintf(tmp, sizeof(tmp), "%s", at("client.key.new"));
	rename(tmp, at("client.key"));
	tap_ok(kt_kcfg_refresh(cfg, false, &err) == 1 && cfg->generation == gen + 1 &&
		       strstr(cfg->cert_pem, "# renewed") && strstr(cfg->key_pem, "# renewed"),
	       "client certificate and key renamed over: the new pair taken");
	put("client.crt.new", "not PEM\n", 0600);
	snprintf(tmp, sizeof(tmp), "%s", at("client.crt.new"));
	rename(tmp, at("client.crt"));
	tap_ok(kt_kcfg_refresh(cfg, false, &err) == 0 && cfg->generation == gen + 1 &&
		       strstr(cfg->cert_pem, "# renewed"),
	       "a certificate file that is not PEM: the pair in use stays");
	put("client.crt", CERT, 0600);
	put("client.key", KEY, 0600);
}

static void test_kubeconfig_users(void)
{
	struct kt_kcfg cfg;
	struct kt_err err = { 0 };
	struct kt_api_opts o = { .kubeconfig = at("two.yaml"), .context = "file" };
	int rc;

	rc = kt_kcfg_load(&cfg, &o, &err);
	tap_ok(rc == 0 && cfg.insecure, "insecure-skip-tls-verify");
	tap_str(cfg.token, "file-token", "tokenFile read, newline trimmed");
	put("tok", "file-token-2\n", 0600);
	tap_ok(kt_kcfg_refresh(&cfg, false, &err) == 1, "tokenFile change seen");
	tap_str(cfg.token, "file-token-2", "tokenFile re-read");
	kt_kcfg_release(&cfg);

	o.context = "cert";
	o.token = "over";
	rc = kt_kcfg_load(&cfg, &o, &err);
	tap_ok(rc == 0 && cfg.cert_pem && cfg.key_pem && !strcmp(cfg.key_pem, KEY),
	       "client certificate and key files");
	tap_str(cfg.token, "over", "--token next to a certificate");
	test_cert_rotation(&cfg);
	kt_kcfg_release(&cfg);
}

static void test_exec(void)
{
	struct kt_kcfg cfg;
	struct kt_err err = { 0 };
	struct kt_api_opts o = { .kubeconfig = at("two.yaml"), .context = "exec" };
	char want[512];
	int rc;

	setenv("PLUGIN_TOKEN", "not-this-one", 1);
	rc = kt_kcfg_load(&cfg, &o, &err);
	tap_ok(rc == 0 && cfg.token == NULL && runs() == 0,
	       "exec: not run while loading");
	rc = kt_kcfg_refresh(&cfg, false, &err);
	if (rc < 0)
		printf("# %s\n", err.msg);
	tap_ok(rc == 1 && runs() == 1, "exec: runs on first use");
	tap_str(cfg.token, "from-env",
		"exec: token from status.token, env from kubeconfig");
	tap_ok(kt_kcfg_refresh(&cfg, false, &err) == 0 && runs() == 1,
	       "exec: cached until expirationTimestamp");
	tap_ok(kt_kcfg_refresh(&cfg, true, &err) == 1 && runs() == 2,
	       "exec: forced after 401");
	kt_kcfg_release(&cfg);

	o.context = "execbad";
	rc = kt_kcfg_load(&cfg, &o, &err);
	rc = rc == 0 ? kt_kcfg_refresh(&cfg, false, &err) : -2;
	snprintf(want, sizeof(want), "exec plugin '%s' failed with exit status 5",
		 at("./bad.sh"));
	tap_str(rc == -1 ? err.msg : "(ok)", want, "exec: plugin that fails");
	kt_kcfg_release(&cfg);

	o.context = "mismatch";
	rc = kt_kcfg_load(&cfg, &o, &err);
	rc = rc == 0 ? kt_kcfg_refresh(&cfg, false, &err) : -2;
	snprintf(want, sizeof(want), "exec plugin '%s' answered with apiVersion "
		 "'client.authentication.k8s.io/v1beta1', expected "
		 "'client.authentication.k8s.io/v1'", at("./beta.sh"));
	tap_str(rc == -1 ? err.msg : "(ok)", want, "exec: an answer in another apiVersion");
	kt_kcfg_release(&cfg);

	o.context = "execgarbage";
	rc = kt_kcfg_load(&cfg, &o, &err);
	rc = rc == 0 ? kt_kcfg_refresh(&cfg, false, &err) : -2;
	snprintf(want, sizeof(want),
		 "exec plugin '%s' printed something that is not JSON",
		 at("./garbage.sh"));
	tap_str(rc == -1 ? err.msg : "(ok)", want, "exec: plugin that prints garbage");
	kt_kcfg_release(&cfg);
}

static int told, told_rc;

static void on_fresh(void *arg, int rc, const struct kt_err *err)
{
	told++;
	told_rc = rc;
}

/* issue 10 row 4: on the loop, one run for every waiter, once per stale credential */
static void test_exec_async(void)
{
	struct kt_kcfg cfg;
	struct kt_err err = { 0 };
	struct kt_api_opts o = { .kubeconfig = at("two.yaml"), .context = "exec" };
	struct kt_loop *loop = kt_loop_new(&err);
	struct kt_kcfg_wait *w[3];
	unsigned gen;
	int before = runs(), r[3];

	kt_kcfg_load(&cfg, &o, &err);
	told = 0;
	for (int i = 0; i < 3; i++)
		r[i] = kt_kcfg_refresh_async(&cfg, loop, false, 0, on_fresh, NULL, &w[i], &err);
	tap_ok(r[0] == 2 && r[1] == 2 && r[2] == 2 && w[0] && w[1] && w[2] && !cfg.token,
	       "exec on the loop: three calls wait, nothing runs before the loop does");
	kt_kcfg_refresh_cancel(&cfg, w[1]);
	kt_loop_run(loop, &err);
	tap_ok(told == 2 && told_rc == 1 && runs() == before + 1 && cfg.token,
	       "exec on the loop: one run, the two still waiting are told");
	gen = cfg.generation;
	tap_ok(kt_kcfg_refresh_async(&cfg, loop, false, 0, on_fresh, NULL, &w[0], &err) == 0 &&
		       !w[0],
	       "exec on the loop: a fresh credential needs no run");
	r[0] = kt_kcfg_refresh_async(&cfg, loop, true, gen - 1, on_fresh, NULL, &w[0], &err);
	tap_ok(r[0] == 1 && runs() == before + 1,
	       "exec on the loop: a 401 for a credential already replaced runs nothing");
	told = 0;
	r[0] = kt_kcfg_refresh_async(&cfg, loop, true, gen, on_fresh, NULL, &w[0], &err);
	r[1] = kt_kcfg_refresh_async(&cfg, loop, true, gen, on_fresh, NULL, &w[1], &err);
	kt_loop_run(loop, &err);
	tap_ok(r[0] == 2 && r[1] == 2 && told == 2 && runs() == before + 2 &&
		       cfg.generation == gen + 1,
	       "exec on the loop: two 401s for the current credential share one run");
	r[0] = kt_kcfg_refresh_async(&cfg, loop, true, cfg.generation, on_fresh, NULL, &w[0],
				     &err);
	kt_kcfg_refresh_cancel(&cfg, w[0]);
	kt_loop_run(loop, &err);
	tap_ok(r[0] == 2 && told == 2, "exec on the loop: the last waiter gone, the run goes");
	kt_kcfg_release(&cfg);
	kt_loop_free(loop);
}

/*
 * Out of memory at one chosen place: the copy of a kubeconfig's directory.
 * This definition takes the place of the C library's for the whole test
 * program, lib included; it fails only for the text it is told to.
 */
static const char *fail_strndup_of;

char *strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d;

	if (fail_strndup_of && len == strlen(fail_strndup_of) &&
	    !strncmp(s, fail_strndup_of, len))
		return NULL;
	d = malloc(len + 1);
	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

/* audit row 18: a failure after the list of files grew leaked it and left
 * it dangling (a double free at release); the sanitizer build checks both */
static void test_oom(void)
{
	struct kt_api_opts o = { .kubeconfig = at("one.yaml") };
	struct kt_kcfg cfg;
	struct kt_err err = { 0 };
	int rc;

	fail_strndup_of = dir;
	rc = kt_kcfg_load(&cfg, &o, &err);
	fail_strndup_of = NULL;
	tap_ok(rc < 0 && strstr(err.msg, "out of memory"),
	       "out of memory while adding a kubeconfig: an error, nothing leaked");
	if (rc == 0)
		kt_kcfg_release(&cfg);
	rc = kt_kcfg_load(&cfg, &o, &err);
	if (rc < 0)
		printf("# %s\n", err.msg);
	tap_ok(rc == 0, "the next load works");
	if (rc == 0)
		kt_kcfg_release(&cfg);
}

static void test_incluster(void)
{
	struct kt_kcfg cfg;
	struct kt_err err = { 0 };
	char want[512];
	int rc;

	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	put("token", "sa-token\n", 0600);
	rc = kt_kcfg_load_incluster(&cfg, dir, &err);
	tap_ok(rc == 0, "in-cluster: loads from the directory given");
	tap_str(cfg.server, "https://10.96.0.1:443", "in-cluster: server");
	tap_str(cfg.token, "sa-token", "in-cluster: token");
	tap_ok(cfg.ca_pem && !strcmp(cfg.ca_pem, CERT), "in-cluster: ca.crt");
	tap_ok(kt_kcfg_refresh(&cfg, false, &err) == 0,
	       "in-cluster: unchanged token kept");
	put("token", "sa-token-rotated\n", 0600);
	tap_ok(kt_kcfg_refresh(&cfg, false, &err) == 1, "in-cluster: rotated token seen");
	tap_str(cfg.token, "sa-token-rotated", "in-cluster: token re-read");
	kt_kcfg_release(&cfg);

	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	rc = kt_kcfg_load_incluster(&cfg, dir, &err);
	tap_str(rc == 0 ? cfg.server : err.msg, "https://[fd00::1]:443",
		"in-cluster: IPv6 host");
	kt_kcfg_release(&cfg);

	unlink(at("ca.crt"));
	rc = kt_kcfg_load_incluster(&cfg, dir, &err);
	snprintf(want, sizeof(want),
		 "cannot read certificate authority '%s': No such file or "
		 "directory",
		 at("ca.crt"));
	tap_str(rc < 0 ? err.msg : "(loaded)", want, "in-cluster: missing ca.crt");

	unsetenv("KUBERNETES_SERVICE_HOST");
	rc = kt_kcfg_load_incluster(&cfg, dir, &err);
	tap_str(rc < 0 ? err.msg : "(loaded)",
		"in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
		"must be set",
		"in-cluster: outside a cluster");
}

int main(void)
{
	setup();
	test_merge();
	test_errors();
	test_kubeconfig_users();
	test_exec();
	test_exec_async();
	test_flags();
	test_oom();
	test_incluster();
	cleanup();
	return tap_done();
}
