/* SPDX-License-Identifier: Apache-2.0 */
/* channel: exec and attach's channel protocol over SPDY or WebSocket (see channel.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "channel.h"
#include "json.h"

/* the versions SPDY clients may ask for, the kubelet's order */
static const char *const spdy_names[] = { "v5.channel.k8s.io", "v4.channel.k8s.io",
					  "v3.channel.k8s.io", "v2.channel.k8s.io",
					  "channel.k8s.io" };

/* the WebSocket subprotocols, with the version and encoding each means; ""
 * is a client that named none, served as the first version in binary */
static const struct {
	const char *name;
	int version;
	bool base64;
} ws_protos[] = {
	{ "v5.channel.k8s.io", 5, false },	 { "v4.channel.k8s.io", 4, false },
	{ "v4.base64.channel.k8s.io", 4, true }, { "channel.k8s.io", 1, false },
	{ "base64.channel.k8s.io", 1, true },	 { "", 1, false },
};

/* the next comma-separated token of *s, trimmed of spaces and tabs, into tok;
 * false when none is left (a token too long for tok is cut) */
static bool next_token(const char **s, char *tok, size_t size)
{
	const char *p = *s, *e;
	size_t n;

	while (*p == ',' || *p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return false;
	e = p + strcspn(p, ",");
	*s = e;
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	n = (size_t)(e - p) < size - 1 ? (size_t)(e - p) : size - 1;
	memcpy(tok, p, n);
	tok[n] = 0;
	return true;
}

static bool has_token(const char *list, const char *want)
{
	char tok[64];

	while (list && next_token(&list, tok, sizeof(tok)))
		if (!strcasecmp(tok, want))
			return true;
	return false;
}

static int refuse(struct kt_chan_refusal *no, int status, const char *body)
{
	no->status = status;
	no->accepted[0] = 0;
	snprintf(no->body, sizeof(no->body), "%s", body);
	return -1;
}

static int websocket(const char *offered, struct kt_chan_upgrade *up, struct kt_chan_refusal *no)
{
	const char *p = offered ? offered : "";
	char tok[64];
	bool any = false;

	/* each offered protocol in the client's order; none offered is "" */
	for (;;) {
		bool got = next_token(&p, tok, sizeof(tok));

		if (!got && any)
			break;
		if (!got)
			tok[0] = 0;
		any = true;
		for (size_t i = 0; i < sizeof(ws_protos) / sizeof(ws_protos[0]); i++)
			if (!strcmp(tok, ws_protos[i].name)) {
				up->transport = KT_CHAN_WEBSOCKET;
				up->version = ws_protos[i].version;
				up->base64 = ws_protos[i].base64;
				snprintf(up->protocol, sizeof(up->protocol), "%s",
					 ws_protos[i].name);
				return 0;
			}
		if (!got)
			break;
	}
	snprintf(no->body, sizeof(no->body),
		 "requested protocol(s) are not supported: [%.120s]; supports [v5.channel.k8s.io "
		 "v4.channel.k8s.io v4.base64.channel.k8s.io channel.k8s.io base64.channel.k8s.io]",
		 offered ? offered : "");
	no->status = 400;
	no->accepted[0] = 0;
	return -1;
}

int kt_chan_negotiate(const char *connection, const char *upgrade, const char *stream_versions,
		      const char *ws_protocols, struct kt_chan_upgrade *up,
		      struct kt_chan_refusal *no)
{
	const char *p = stream_versions;
	char tok[64];
	bool asked = false;

	memset(up, 0, sizeof(*up));
	if (!has_token(connection, "upgrade") || !upgrade)
		return refuse(no, 400, "unable to upgrade: missing upgrade headers in request");
	if (!strcasecmp(upgrade, "websocket"))
		return websocket(ws_protocols, up, no);
	if (strcasecmp(upgrade, "SPDY/3.1"))
		return refuse(no, 400,
			      "unable to upgrade: the upgrade is neither SPDY/3.1 nor websocket");
	while (p && next_token(&p, tok, sizeof(tok))) {
		asked = true;
		for (size_t i = 0; i < sizeof(spdy_names) / sizeof(spdy_names[0]); i++)
			if (!strcmp(tok, spdy_names[i])) {
				up->transport = KT_CHAN_SPDY;
				up->version = (int)(sizeof(spdy_names) / sizeof(spdy_names[0]) - i);
				snprintf(up->protocol, sizeof(up->protocol), "%s", spdy_names[i]);
				return 0;
			}
	}
	if (!asked)
		return refuse(no, 400, "unable to upgrade: X-Stream-Protocol-Version is required");
	no->status = 403;
	snprintf(no->accepted, sizeof(no->accepted), "%s, %s, %s, %s, %s", spdy_names[0],
		 spdy_names[1], spdy_names[2], spdy_names[3], spdy_names[4]);
	snprintf(
	    no->body, sizeof(no->body),
	    "unable to upgrade: unable to negotiate protocol: client supports [%.100s], server "
	    "accepts [%.100s]",
	    stream_versions, no->accepted);
	return -1;
}

void kt_chan_exit_status(struct kt_sb *out, int version, int code, const char *why)
{
	char msg[300], num[16];
	cJSON *st, *details, *causes, *cause;
	char *text;

	if (code > 0)
		snprintf(msg, sizeof(msg),
			 "command terminated with non-zero exit code: exit status %d", code);
	else if (code < 0)
		snprintf(msg, sizeof(msg),
			 "Internal error occurred: error executing command in container: %.200s",
			 why ? why : "unknown");
	if (version < 4) {
		/* the first versions say only a failure, as text */
		if (code != 0)
			kt_sb_puts(out, msg);
		return;
	}
	/* metav1.Status as Go marshals it: metadata, status, message, reason,
	 * details, code */
	st = cJSON_CreateObject();
	cJSON_AddItemToObject(st, "metadata", cJSON_CreateObject());
	cJSON_AddStringToObject(st, "status", code == 0 ? "Success" : "Failure");
	if (code != 0) {
		cJSON_AddStringToObject(st, "message", msg);
		cJSON_AddStringToObject(st, "reason",
					code > 0 ? "NonZeroExitCode" : "InternalError");
		details = cJSON_AddObjectToObject(st, "details");
		causes = cJSON_AddArrayToObject(details, "causes");
		cause = cJSON_CreateObject();
		if (code > 0) {
			snprintf(num, sizeof(num), "%d", code);
			cJSON_AddStringToObject(cause, "reason", "ExitCode");
			cJSON_AddStringToObject(cause, "message", num);
		} else {
			cJSON_AddStringToObject(cause, "message",
						msg + strlen("Internal error occurred: "));
		}
		cJSON_AddItemToArray(causes, cause);
		if (code < 0)
			cJSON_AddNumberToObject(st, "code", 500);
	}
	text = kt_json_print(st, KT_JSON_GO_ESCAPE | KT_JSON_NO_NEWLINE);
	if (text)
		kt_sb_puts(out, text);
	else
		out->oom = true;
	free(text);
	cJSON_Delete(st);
}

int kt_chan_ws_read(bool base64, const void *msg, size_t len, int *chan, struct kt_sb *data)
{
	const unsigned char *m = msg;
	char *dec;
	size_t n;

	if (len == 0)
		return -1;
	if (!base64) {
		*chan = m[0];
		kt_sb_put(data, (const char *)m + 1, len - 1);
		return 0;
	}
	/* base64: the channel as a digit, then the data encoded */
	if (m[0] < '0' || m[0] > '9')
		return -1;
	*chan = m[0] - '0';
	dec = kt_base64_decode((const char *)m + 1, len - 1, &n);
	if (!dec)
		return -1;
	kt_sb_put(data, dec, n);
	free(dec);
	return 0;
}

void kt_chan_ws_put(bool base64, int chan, const void *data, size_t len, struct kt_sb *msg)
{
	char c;
	char *enc;

	if (!base64) {
		c = (char)chan;
		kt_sb_put(msg, &c, 1);
		kt_sb_put(msg, data, len);
		return;
	}
	c = (char)('0' + chan);
	kt_sb_put(msg, &c, 1);
	enc = kt_base64_encode(data, len);
	if (enc)
		kt_sb_puts(msg, enc);
	else
		msg->oom = true;
	free(enc);
}

/* a size field as Go decodes a uint16: absent is 0 */
static bool size_field(const cJSON *doc, const char *name, unsigned *v)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, name);
	struct kt_err err = { 0 };
	int64_t n;

	if (!f || cJSON_IsNull(f)) {
		*v = 0;
		return true;
	}
	if (!kt_json_is_number(f) || kt_json_num_int64(f, &n, &err) < 0 || n < 0 || n > 65535)
		return false;
	*v = (unsigned)n;
	return true;
}

int kt_chan_resize_parse(const char *text, size_t len, unsigned *width, unsigned *height)
{
	struct kt_err err = { 0 };
	cJSON *doc = kt_json_parse("resize", text, len, &err);
	int rc = -1;

	if (!doc)
		return -1;
	if (cJSON_IsObject(doc) && size_field(doc, "Width", width) &&
	    size_field(doc, "Height", height))
		rc = 0;
	cJSON_Delete(doc);
	return rc;
}
