/* SPDX-License-Identifier: Apache-2.0 */
/* bootstrap: CertificateSigningRequests, their states, renewal times, the node's kubeconfig */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "bootstrap.h"
#include "core.h"
#include "json.h"
#include "kt_err.h"
#include "x509.h"

const char *kt_boot_kind_name(enum kt_boot_kind kind)
{
	return kind == KT_BOOT_SERVING ? "serving" : "client";
}

void kt_boot_x509_req(enum kt_boot_kind kind, const char *node, const char *const *addresses,
		      char *node_cn, size_t cn_size, struct kt_x509_req *req)
{
	static const char *const orgs[] = { "system:nodes", NULL };

	snprintf(node_cn, cn_size, "system:node:%s", node);
	req->cn = node_cn;
	req->orgs = orgs;
	req->addresses = kind == KT_BOOT_SERVING ? addresses : NULL;
}

cJSON *kt_boot_csr_new(enum kt_boot_kind kind, const char *request_pem, size_t len)
{
	char *b64 = kt_base64_encode(request_pem, len);
	cJSON *csr = cJSON_CreateObject();
	cJSON *meta = cJSON_AddObjectToObject(csr, "metadata");
	cJSON *spec = cJSON_AddObjectToObject(csr, "spec");
	const char *usages[] = { "digital signature",
				 kind == KT_BOOT_SERVING ? "server auth" : "client auth" };
	bool ok = b64 && csr && meta && spec;

	/* usages as the kubelet asks for them with an ECDSA key: no key
	 * encipherment, which only an RSA key's usages carry */
	ok = ok && cJSON_AddStringToObject(csr, "apiVersion", "certificates.k8s.io/v1") &&
	     cJSON_AddStringToObject(csr, "kind", "CertificateSigningRequest") &&
	     cJSON_AddStringToObject(meta, "generateName", "csr-") &&
	     cJSON_AddStringToObject(spec, "request", b64) &&
	     cJSON_AddStringToObject(spec, "signerName",
				     kind == KT_BOOT_SERVING ? KT_BOOT_SIGNER_SERVING
							     : KT_BOOT_SIGNER_CLIENT) &&
	     kt_json_set(spec, "usages", cJSON_CreateStringArray(usages, 2)) == 0;
	free(b64);
	if (!ok) {
		cJSON_Delete(csr);
		return NULL;
	}
	/* apiVersion and kind first, as the objects the project builds read */
	cJSON_DetachItemViaPointer(csr, meta);
	cJSON_DetachItemViaPointer(csr, spec);
	cJSON_AddItemToObject(csr, "metadata", meta);
	cJSON_AddItemToObject(csr, "spec", spec);
	return csr;
}

static void condition_why(const cJSON *c, char *why, size_t size)
{
	const char *reason = kt_json_get_string(c, "reason");
	const char *msg = kt_json_get_string(c, "message");
	char text[600];

	snprintf(text, sizeof(text), "%s%s%s", reason && *reason ? reason : "no reason given",
		 msg && *msg ? ": " : "", msg && *msg ? msg : "");
	kt_plain_text(why, size, text);
}

enum kt_boot_csr_state kt_boot_csr_state(const cJSON *csr, char **cert, size_t *len, char *why,
					 size_t size)
{
	const cJSON *status = kt_json_get_object(csr, "status");
	const cJSON *c;
	const char *crt = kt_json_get_string(status, "certificate");
	bool approved = false;

	*cert = NULL;
	*len = 0;
	why[0] = '\0';
	cJSON_ArrayForEach (c, kt_json_get_array(status, "conditions")) {
		const char *type = kt_json_get_string(c, "type");
		const char *st = kt_json_get_string(c, "status");

		/* a condition without a status counts as True, as the API's
		 * defaulting makes it */
		if (!type || (st && strcmp(st, "True")))
			continue;
		if (!strcmp(type, "Denied")) {
			condition_why(c, why, size);
			return KT_BOOT_CSR_DENIED;
		}
		if (!strcmp(type, "Failed")) {
			condition_why(c, why, size);
			return KT_BOOT_CSR_FAILED;
		}
		if (!strcmp(type, "Approved"))
			approved = true;
	}
	if (!approved)
		return KT_BOOT_CSR_PENDING;
	if (!crt || !*crt)
		return KT_BOOT_CSR_APPROVED;
	*cert = kt_base64_decode(crt, strlen(crt), len);
	if (!*cert || !memmem(*cert, *len, "-----BEGIN CERTIFICATE-----", 27)) {
		free(*cert);
		*cert = NULL;
		*len = 0;
		snprintf(why, size, "status.certificate is not base64-encoded PEM");
		return KT_BOOT_CSR_INVALID;
	}
	return KT_BOOT_CSR_ISSUED;
}

int64_t kt_boot_renew_at(int64_t not_before, int64_t not_after, double frac)
{
	int64_t life = not_after - not_before;

	if (frac < 0 || frac >= 1)
		frac = 0;
	if (life <= 0)
		return not_before;
	/* in thousandths, so that the ends are exact: 700 to 899 */
	return not_before + life * (700 + (int64_t)(frac * 200)) / 1000;
}

bool kt_boot_reusable(const struct kt_x509_info *info, int64_t now)
{
	int64_t life = info->not_after - info->not_before;

	if (life <= 0 || now < info->not_before)
		return false;
	/* more than 10% left: now before 90% of the lifetime */
	return (info->not_after - now) * 10 > life;
}

/* [{"name": name, field: value}], adopting value; NULL when out of memory */
static cJSON *named_list(const char *name, const char *field, cJSON *value)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *a = cJSON_CreateArray();

	if (!o || !a || !cJSON_AddStringToObject(o, "name", name) ||
	    kt_json_set(o, field, value) < 0) {
		if (!o || !a || !cJSON_GetObjectItemCaseSensitive(o, "name"))
			cJSON_Delete(value);
		cJSON_Delete(o);
		cJSON_Delete(a);
		return NULL;
	}
	cJSON_AddItemToArray(a, o);
	return a;
}

cJSON *kt_boot_kubeconfig(const struct kt_boot_cluster *cl, const char *pem_file)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON *cluster = cJSON_CreateObject(), *context = cJSON_CreateObject(),
	      *user = cJSON_CreateObject();
	char *ca = cl->ca_pem ? kt_base64_encode(cl->ca_pem, cl->ca_len) : NULL;
	bool ok = doc && cluster && context && user && (ca || !cl->ca_pem);

	ok = ok && cJSON_AddStringToObject(cluster, "server", cl->server) &&
	     (!ca || cJSON_AddStringToObject(cluster, "certificate-authority-data", ca)) &&
	     (!cl->tls_server_name ||
	      cJSON_AddStringToObject(cluster, "tls-server-name", cl->tls_server_name)) &&
	     (!cl->insecure || cJSON_AddTrueToObject(cluster, "insecure-skip-tls-verify")) &&
	     cJSON_AddStringToObject(context, "cluster", "default-cluster") &&
	     cJSON_AddStringToObject(context, "namespace", "default") &&
	     cJSON_AddStringToObject(context, "user", "default-auth") &&
	     cJSON_AddStringToObject(user, "client-certificate", pem_file) &&
	     cJSON_AddStringToObject(user, "client-key", pem_file);
	free(ca);
	if (!ok) {
		cJSON_Delete(cluster);
		cJSON_Delete(context);
		cJSON_Delete(user);
		cJSON_Delete(doc);
		return NULL;
	}
	if (!cJSON_AddStringToObject(doc, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(doc, "kind", "Config") ||
	    kt_json_set(doc, "clusters", named_list("default-cluster", "cluster", cluster)) < 0 ||
	    kt_json_set(doc, "contexts", named_list("default-context", "context", context)) < 0 ||
	    !cJSON_AddStringToObject(doc, "current-context", "default-context") ||
	    kt_json_set(doc, "users", named_list("default-auth", "user", user)) < 0) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}
