/* SPDX-License-Identifier: Apache-2.0 */
/* test-bootstrap: keys and requests checked by the openssl command, certificates read,
 * CSR objects and their states, renewal times, the node's kubeconfig */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kt.h"
#include "tap.h"

static char dir[] = "/tmp/test-bootstrap.XXXXXX";

static void put(const char *name, const char *text, size_t len)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fwrite(text, 1, len, f);
		fclose(f);
	}
}

/* a file of dir, read whole (the caller frees), NULL when missing */
static char *get(const char *name, size_t *len)
{
	char path[300], *buf = NULL;
	struct kt_err err = { 0 };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (kt_file_read(path, NULL, 1 << 20, &buf, len, &err) < 0)
		printf("# %s\n", err.msg);
	return buf;
}

/* a shell command run in dir; its exit status */
static int sh(const char *cmd)
{
	char line[2048];

	snprintf(line, sizeof(line), "cd '%s' && { %s; } >out 2>&1", dir, cmd);
	return system(line);
}

static bool out_has(const char *text)
{
	size_t len = 0;
	char *out = get("out", &len);
	bool ok = out && strstr(out, text);

	if (!ok)
		printf("# out: %s\n# want: %s\n", out ? out : "(none)", text);
	free(out);
	return ok;
}

static void test_request(void)
{
	static const char *const addrs[] = { "10.0.0.7", "edge-1.example", "fd00::7", NULL };
	struct kt_err err = { 0 };
	struct kt_x509_req req;
	struct kt_x509_info info;
	char cn[300], *key = NULL, *csr = NULL, *cert = NULL, *other = NULL, *pair = NULL;
	size_t key_len, csr_len, cert_len = 0, other_len, n;

	tap_ok(kt_x509_key_new(&key, &key_len, &err) == 0 && strstr(key, "PRIVATE KEY-----"),
	       "a new key is PEM");
	kt_boot_x509_req(KT_BOOT_SERVING, "edge-1", addrs, cn, sizeof(cn), &req);
	tap_ok(kt_x509_req_new(key, key_len, &req, &csr, &csr_len, &err) == 0,
	       "a request for the key");
	if (!csr) {
		printf("# %s\n", err.msg);
		return;
	}
	put("key.pem", key, key_len);
	put("csr.pem", csr, csr_len);
	tap_ok(sh("openssl pkey -in key.pem -noout -text | grep -q 'NIST CURVE: P-256'") == 0,
	       "the key is ECDSA P-256");
	tap_ok(
	    sh("openssl req -in csr.pem -noout -verify -subject -text") == 0 &&
		out_has("subject=O = system:nodes, CN = system:node:edge-1") &&
		out_has("IP Address:10.0.0.7, DNS:edge-1.example, IP Address:FD00:0:0:0:0:0:0:7"),
	    "openssl reads the request: signature, subject, SANs");
	tap_ok(sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		  "-subj /CN=test-ca -days 2 -keyout ca.key -out ca.pem && "
		  "openssl x509 -req -in csr.pem -CA ca.pem -CAkey ca.key -days 1 "
		  "-copy_extensions copy -set_serial 0x1F2E3D -out cert.pem") == 0,
	       "openssl signs it");
	cert = get("cert.pem", &cert_len);
	tap_ok(cert && kt_x509_cert_info(cert, cert_len, &info, &err) == 0,
	       "the certificate reads");
	tap_str(info.serial, "1F2E3D", "its serial");
	tap_str(info.subject, "CN=system:node:edge-1,O=system:nodes", "its subject");
	tap_ok(info.not_after - info.not_before == 86400, "its validity: one day");
	tap_ok(cert && kt_x509_pair_check(cert, cert_len, key, key_len, &err) == 0,
	       "the certificate is for the key");
	kt_x509_key_new(&other, &other_len, &err);
	tap_ok(kt_x509_pair_check(cert, cert_len, other, other_len, &err) < 0 &&
		   !strcmp(err.msg, "the certificate is not for the private key"),
	       "nor for another key");

	/* the file node-bootstrap writes: key then certificate */
	n = key_len + cert_len;
	pair = malloc(n + 1);
	memcpy(pair, key, key_len);
	memcpy(pair + key_len, cert, cert_len);
	tap_ok(kt_x509_pair_load(pair, n, &info, &err) == 0 && !strcmp(info.serial, "1F2E3D"),
	       "a key and certificate file reads as a pair");
	memcpy(pair, other, other_len < key_len ? other_len : key_len);
	kt_err_clear(&err);
	tap_ok(other_len == key_len && kt_x509_pair_load(pair, n, &info, &err) < 0 &&
		   err.about == KT_ERR_ABOUT_EVENT,
	       "a certificate for another key is told apart");
	kt_err_clear(&err);
	tap_ok(kt_x509_pair_load(cert, cert_len, &info, &err) < 0 && err.kind == KT_ERR_INPUT &&
		   err.about != KT_ERR_ABOUT_EVENT &&
		   !strncmp(err.msg, "no private key that can be read", 31),
	       "a file without a key is corrupt");
	kt_err_clear(&err);
	tap_ok(kt_x509_pair_load("garbage", 7, NULL, &err) < 0 && err.about != KT_ERR_ABOUT_EVENT,
	       "garbage is corrupt");
	free(pair);
	free(cert);
	free(csr);
	kt_x509_secret_free(other, other_len);
	kt_x509_secret_free(key, key_len);
}

static void test_client_request(void)
{
	struct kt_err err = { 0 };
	struct kt_x509_req req;
	char cn[300], *key = NULL, *csr = NULL;
	size_t key_len = 0, csr_len = 0;

	kt_boot_x509_req(KT_BOOT_CLIENT, "vk-1", NULL, cn, sizeof(cn), &req);
	kt_x509_key_new(&key, &key_len, &err);
	tap_ok(kt_x509_req_new(key, key_len, &req, &csr, &csr_len, &err) == 0, "a client request");
	put("client.csr", csr, csr_len);
	tap_ok(sh("openssl req -in client.csr -noout -verify -subject -text") == 0 &&
		   out_has("subject=O = system:nodes, CN = system:node:vk-1") &&
		   sh("openssl req -in client.csr -noout -text | grep -q 'Alternative'") != 0,
	       "a client request has the subject and no SANs");
	free(csr);
	kt_x509_secret_free(key, key_len);
}

static void test_csr_object(void)
{
	cJSON *c = kt_boot_csr_new(KT_BOOT_CLIENT, "PEM", 3);
	char *text = c ? kt_json_print(c, KT_JSON_NO_NEWLINE) : NULL;

	tap_str(text,
		"{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\","
		"\"metadata\":{\"generateName\":\"csr-\"},\"spec\":{\"request\":\"UEVN\","
		"\"signerName\":\"kubernetes.io/kube-apiserver-client-kubelet\","
		"\"usages\":[\"digital signature\",\"client auth\"]}}",
		"the client CSR");
	free(text);
	cJSON_Delete(c);
	c = kt_boot_csr_new(KT_BOOT_SERVING, "PEM", 3);
	text = c ? kt_json_print(c, KT_JSON_NO_NEWLINE) : NULL;
	tap_ok(text && strstr(text, "\"signerName\":\"kubernetes.io/kubelet-serving\","
				    "\"usages\":[\"digital signature\",\"server auth\"]"),
	       "the serving CSR");
	free(text);
	cJSON_Delete(c);
}

static enum kt_boot_csr_state state(const char *doc, char *why, size_t size, char **cert)
{
	cJSON *d = tap_doc(doc);
	size_t len = 0;
	char *c = NULL;
	enum kt_boot_csr_state st = kt_boot_csr_state(d, &c, &len, why, size);

	if (cert)
		*cert = c;
	else
		free(c);
	cJSON_Delete(d);
	return st;
}

static void test_csr_state(void)
{
	char why[200], *cert = NULL;

	tap_ok(state("{\"status\":{}}", why, sizeof(why), NULL) == KT_BOOT_CSR_PENDING,
	       "no condition: pending");
	tap_ok(state("{\"status\":{\"conditions\":[{\"type\":\"Approved\",\"status\":\"True\"}]}}",
		     why, sizeof(why), NULL) == KT_BOOT_CSR_APPROVED,
	       "approved, no certificate yet");
	tap_ok(state("{\"status\":{\"certificate\":\"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\","
		     "\"conditions\":[{\"type\":\"Approved\",\"status\":\"True\"}]}}",
		     why, sizeof(why), &cert) == KT_BOOT_CSR_ISSUED &&
		   cert && !strcmp(cert, "-----BEGIN CERTIFICATE-----\n"),
	       "issued: the certificate decoded");
	free(cert);
	tap_ok(state("{\"status\":{\"certificate\":\"LS0t\"}}", why, sizeof(why), NULL) ==
		   KT_BOOT_CSR_PENDING,
	       "a certificate without approval is not taken");
	tap_ok(
	    state("{\"status\":{\"certificate\":\"!!\",\"conditions\":[{\"type\":\"Approved\"}]}}",
		  why, sizeof(why), NULL) == KT_BOOT_CSR_INVALID,
	    "a certificate that is not base64 PEM");
	tap_ok(state("{\"status\":{\"conditions\":[{\"type\":\"Approved\",\"status\":\"True\"},"
		     "{\"type\":\"Denied\",\"status\":\"True\",\"reason\":\"NotOurs\","
		     "\"message\":\"no\\u001b[31m such node\"}]}}",
		     why, sizeof(why), NULL) == KT_BOOT_CSR_DENIED,
	       "Denied wins over Approved");
	tap_str(why, "NotOurs: no?[31m such node", "the reason and message, made plain");
	tap_ok(state("{\"status\":{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\"}]}}",
		     why, sizeof(why), NULL) == KT_BOOT_CSR_FAILED &&
		   !strcmp(why, "no reason given"),
	       "Failed without a reason");
	tap_ok(state("{\"status\":{\"conditions\":[{\"type\":\"Denied\",\"status\":\"False\"}]}}",
		     why, sizeof(why), NULL) == KT_BOOT_CSR_PENDING,
	       "a False condition does not count");
}

static void test_times(void)
{
	struct kt_x509_info in = { .not_before = 1000, .not_after = 2000 };

	tap_ok(kt_boot_renew_at(1000, 2000, 0) == 1700, "renewal at 70% for frac 0");
	tap_ok(kt_boot_renew_at(1000, 2000, 0.5) == 1800, "at 80% for frac 0.5");
	tap_ok(kt_boot_renew_at(1000, 2000, 0.9999) == 1899, "below 90% for frac near 1");
	tap_ok(kt_boot_reusable(&in, 1899) && !kt_boot_reusable(&in, 1900),
	       "reusable with more than 10% left");
	tap_ok(!kt_boot_reusable(&in, 999), "not before it is valid");
}

static void test_kubeconfig(void)
{
	struct kt_boot_cluster cl = { .server = "https://127.0.0.1:6443",
				      .ca_pem = "CA",
				      .ca_len = 2 };
	cJSON *doc = kt_boot_kubeconfig(&cl, "/var/lib/kt/pki/kubelet-client-current.pem");
	char *text = doc ? kt_json_print(doc, KT_JSON_NO_NEWLINE) : NULL;

	tap_str(text,
		"{\"apiVersion\":\"v1\",\"kind\":\"Config\",\"clusters\":[{\"name\":"
		"\"default-cluster\",\"cluster\":{\"server\":\"https://127.0.0.1:6443\","
		"\"certificate-authority-data\":\"Q0E=\"}}],\"contexts\":[{\"name\":"
		"\"default-context\",\"context\":{\"cluster\":\"default-cluster\",\"namespace\":"
		"\"default\",\"user\":\"default-auth\"}}],\"current-context\":\"default-context\","
		"\"users\":[{\"name\":\"default-auth\",\"user\":{\"client-certificate\":"
		"\"/var/lib/kt/pki/kubelet-client-current.pem\",\"client-key\":"
		"\"/var/lib/kt/pki/kubelet-client-current.pem\"}}]}",
		"the node's kubeconfig");
	free(text);
	cJSON_Delete(doc);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_request();
	test_client_request();
	test_csr_object();
	test_csr_state();
	test_times();
	test_kubeconfig();
	{
		char rm[300];

		snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
		if (system(rm) != 0)
			printf("# cannot remove %s\n", dir);
	}
	return tap_done();
}
