/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-serve: kubelet-serve's route and query parser.  Byte 0 picks the
 * method; the rest is the request target.  Properties: a request is routed or
 * refused with a status the kubelet gives (400, 404, 405, 501) and a body;
 * a routed log request has names that are DNS labels and a subdomain, and
 * options within their bounds; the subresource is one of four.
 */
#include <string.h>

#include "fuzz.h"
#include "serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH" };
	struct kt_serve_req r;
	struct kt_serve_refusal no;
	const char *sub;
	char *target;

	if (size < 1)
		return 0;
	target = malloc(size);
	if (!target)
		return 0;
	memcpy(target, data + 1, size - 1);
	target[size - 1] = '\0';
	if (kt_serve_parse(methods[data[0] % 6], target, &r, &no) == 0) {
		if (r.route == KT_SERVE_LOGS) {
			FUZZ_CHECK(kt_serve_dns_label(r.ns, strlen(r.ns)) == 0);
			FUZZ_CHECK(kt_serve_dns_subdomain(r.pod, strlen(r.pod)) == 0);
			FUZZ_CHECK(kt_serve_dns_label(r.container, strlen(r.container)) == 0);
			FUZZ_CHECK(!strstr(r.pod, "..") && !strchr(r.pod, '/'));
			FUZZ_CHECK(r.log.tail_lines >= -1);
			FUZZ_CHECK(r.log.limit_bytes == -1 || r.log.limit_bytes >= 1);
			FUZZ_CHECK(r.log.since_seconds >= 0);
			FUZZ_CHECK(!(r.log.since_seconds && r.log.since_time_ns));
		}
		if (r.route == KT_SERVE_EXEC || r.route == KT_SERVE_ATTACH ||
		    r.route == KT_SERVE_PORTFORWARD) {
			size_t used = 0;

			FUZZ_CHECK(kt_serve_dns_label(r.ns, strlen(r.ns)) == 0);
			FUZZ_CHECK(kt_serve_dns_subdomain(r.pod, strlen(r.pod)) == 0);
			FUZZ_CHECK(r.route == KT_SERVE_PORTFORWARD ||
				   kt_serve_dns_label(r.container, strlen(r.container)) == 0);
			FUZZ_CHECK(strspn(r.uid, "0123456789abcdefABCDEF-") == strlen(r.uid));
			/* the words lie within the buffer, each NUL-ended */
			for (size_t i = 0; i < r.st.argc; i++) {
				FUZZ_CHECK(used < sizeof(r.st.argv));
				used += strnlen(r.st.argv + used, sizeof(r.st.argv) - used) + 1;
			}
			FUZZ_CHECK(used <= sizeof(r.st.argv));
			FUZZ_CHECK(r.route != KT_SERVE_EXEC || r.st.argc > 0);
			FUZZ_CHECK(r.route == KT_SERVE_PORTFORWARD ||
				   (r.st.in || r.st.out || r.st.err));
			FUZZ_CHECK(!(r.st.tty && r.st.err));
		}
	} else {
		FUZZ_CHECK(no.status == 400 || no.status == 404 || no.status == 405 ||
			   no.status == 501);
		FUZZ_CHECK(no.body[0] != '\0');
	}
	sub = kt_serve_subresource(target);
	FUZZ_CHECK(!strcmp(sub, "stats") || !strcmp(sub, "metrics") || !strcmp(sub, "log") ||
		   !strcmp(sub, "proxy"));
	free(target);
	return 0;
}
