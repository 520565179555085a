/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-x509: a key and certificate file as node-bootstrap reads one.  Byte 0
 * picks the reader (even: kt_x509_pair_load, odd: kt_x509_cert_info); the
 * rest is the file.  The readers must say corrupt or for another key, never
 * crash, and agree: a pair that loads has a certificate that reads the same.
 */
#include <string.h>

#include "fuzz.h"
#include "x509.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_x509_info a, b;
	struct kt_err err = { 0 };
	const char *pem;
	size_t len;

	if (size < 1)
		return 0;
	pem = (const char *)data + 1;
	len = size - 1;
	if (data[0] & 1) {
		if (kt_x509_cert_info(pem, len, &a, &err) == 0)
			FUZZ_CHECK(memchr(a.serial, '\0', sizeof(a.serial)) &&
				   memchr(a.subject, '\0', sizeof(a.subject)));
		else
			FUZZ_CHECK(err.kind == KT_ERR_INPUT && err.msg[0]);
		return 0;
	}
	if (kt_x509_pair_load(pem, len, &a, &err) == 0) {
		FUZZ_CHECK(kt_x509_cert_info(pem, len, &b, &err) == 0);
		FUZZ_CHECK(!strcmp(a.serial, b.serial) && a.not_after == b.not_after &&
			   a.not_before == b.not_before && !strcmp(a.subject, b.subject));
	} else {
		FUZZ_CHECK(err.kind == KT_ERR_INPUT && err.msg[0]);
	}
	return 0;
}
