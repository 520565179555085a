/* SPDX-License-Identifier: Apache-2.0 */
/* test-channel: which stream protocol an upgrade gets, and what each version says */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "tap.h"

static void test_negotiate(void)
{
	struct kt_chan_upgrade up;
	struct kt_chan_refusal no;

	/* what kubectl 1.32 sends when WebSockets are turned off */
	tap_ok(kt_chan_negotiate("Upgrade", "SPDY/3.1",
				 "v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io, "
				 "v2.channel.k8s.io, channel.k8s.io",
				 NULL, &up, &no) == 0 &&
		   up.transport == KT_CHAN_SPDY && up.version == 5 &&
		   !strcmp(up.protocol, "v5.channel.k8s.io"),
	       "SPDY: the client's first known version is taken");
	tap_ok(kt_chan_negotiate("keep-alive, Upgrade", "spdy/3.1",
				 "v9.channel.k8s.io,v3.channel.k8s.io", NULL, &up, &no) == 0 &&
		   up.version == 3,
	       "SPDY: an unknown version is passed over; Connection is a list, Upgrade any case");
	tap_ok(kt_chan_negotiate("Upgrade", "SPDY/3.1", "v9.channel.k8s.io", NULL, &up, &no) < 0 &&
		   no.status == 403 && strstr(no.accepted, "v4.channel.k8s.io") &&
		   strstr(no.body, "v9.channel.k8s.io"),
	       "SPDY: no common version is 403 with the accepted ones, as the kubelet answers");
	tap_ok(kt_chan_negotiate("Upgrade", "SPDY/3.1", NULL, NULL, &up, &no) < 0 &&
		   no.status == 400 && strstr(no.body, "X-Stream-Protocol-Version is required"),
	       "SPDY: no version named is 400");
	tap_ok(kt_chan_negotiate(NULL, NULL, NULL, NULL, &up, &no) < 0 && no.status == 400 &&
		   kt_chan_negotiate("close", "websocket", NULL, NULL, &up, &no) < 0 &&
		   no.status == 400,
	       "a request that is no upgrade is 400");
	tap_ok(kt_chan_negotiate("Upgrade", "h2c", NULL, NULL, &up, &no) < 0 && no.status == 400,
	       "an upgrade to another protocol is 400");
	/* what kubectl 1.31 and later send first */
	tap_ok(kt_chan_negotiate("Upgrade", "websocket", NULL,
				 "v5.channel.k8s.io, v4.channel.k8s.io", &up, &no) == 0 &&
		   up.transport == KT_CHAN_WEBSOCKET && up.version == 5 && !up.base64,
	       "WebSocket: v5 as kubectl offers it");
	tap_ok(kt_chan_negotiate("Upgrade", "WebSocket", NULL, "x.k8s.io, v4.base64.channel.k8s.io",
				 &up, &no) == 0 &&
		   up.version == 4 && up.base64 && !strcmp(up.protocol, "v4.base64.channel.k8s.io"),
	       "WebSocket: the base64 variant of v4");
	tap_ok(kt_chan_negotiate("Upgrade", "websocket", NULL, NULL, &up, &no) == 0 &&
		   up.version == 1 && !up.base64 && up.protocol[0] == 0,
	       "WebSocket: no protocol named is the first version, binary");
	tap_ok(kt_chan_negotiate("Upgrade", "websocket", NULL, "chat", &up, &no) < 0 &&
		   no.status == 400 && strstr(no.body, "chat"),
	       "WebSocket: an unknown protocol is 400 naming it");
}

static void test_exit_status(void)
{
	struct kt_sb sb = { 0 };

	kt_chan_exit_status(&sb, 4, 0, NULL);
	tap_str(kt_sb_str(&sb), "{\"metadata\":{},\"status\":\"Success\"}", "v4: success");
	kt_sb_trunc(&sb, 0);
	kt_chan_exit_status(&sb, 5, 3, NULL);
	tap_str(kt_sb_str(&sb),
		"{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with "
		"non-zero exit code: exit status 3\",\"reason\":\"NonZeroExitCode\",\"details\":"
		"{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"3\"}]}}",
		"v5: the exit code as the ExitCode cause kubectl exits with");
	kt_sb_trunc(&sb, 0);
	kt_chan_exit_status(&sb, 4, -1, "no such file <x>");
	tap_str(kt_sb_str(&sb),
		"{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error occurred: "
		"error executing command in container: no such file \\u003cx\\u003e\",\"reason\":"
		"\"InternalError\",\"details\":{\"causes\":[{\"message\":\"error executing command "
		"in container: no such file \\u003cx\\u003e\"}]},\"code\":500}",
		"v4: a command that could not run is an InternalError, escaped as Go escapes");
	kt_sb_trunc(&sb, 0);
	kt_chan_exit_status(&sb, 3, 0, NULL);
	tap_ok(sb.len == 0, "v3: nothing on success");
	kt_chan_exit_status(&sb, 2, 7, NULL);
	tap_str(kt_sb_str(&sb), "command terminated with non-zero exit code: exit status 7",
		"v2: a failure as text");
	kt_sb_release(&sb);
}

static void test_ws_messages(void)
{
	struct kt_sb m = { 0 }, d = { 0 };
	int chan = -1;

	kt_chan_ws_put(false, 1, "out\n", 4, &m);
	tap_ok(m.len == 5 && m.buf[0] == 1 &&
		   kt_chan_ws_read(false, m.buf, m.len, &chan, &d) == 0 && chan == 1 &&
		   d.len == 4 && !memcmp(d.buf, "out\n", 4),
	       "binary: the channel byte, then the data");
	kt_sb_trunc(&m, 0);
	kt_sb_trunc(&d, 0);
	kt_chan_ws_put(true, 0, "foo\n", 4, &m);
	tap_str(kt_sb_str(&m), "0Zm9vCg==", "base64: the channel digit, then the data encoded");
	tap_ok(kt_chan_ws_read(true, m.buf, m.len, &chan, &d) == 0 && chan == 0 && d.len == 4 &&
		   !memcmp(d.buf, "foo\n", 4),
	       "base64: read back");
	tap_ok(kt_chan_ws_read(false, "", 0, &chan, &d) < 0 &&
		   kt_chan_ws_read(true, "x", 1, &chan, &d) < 0 &&
		   kt_chan_ws_read(true, "1!!", 3, &chan, &d) < 0,
	       "an empty message, a channel that is no digit, or bad base64 is refused");
	tap_ok(kt_chan_ws_read(false, "\xff\x00", 2, &chan, &d) == 0 && chan == KT_CHAN_CLOSE,
	       "v5's close signal names the closed channel after 255");
	kt_sb_release(&m);
	kt_sb_release(&d);
}

static void test_resize(void)
{
	unsigned w = 1, h = 1;
	const char *s = "{\"Width\":132,\"Height\":43}";

	tap_ok(kt_chan_resize_parse(s, strlen(s), &w, &h) == 0 && w == 132 && h == 43,
	       "a terminal size");
	s = "{\"Width\":80}";
	tap_ok(kt_chan_resize_parse(s, strlen(s), &w, &h) == 0 && w == 80 && h == 0,
	       "a size left out is 0, as Go decodes it");
	s = "{\"Width\":70000,\"Height\":1}";
	tap_ok(kt_chan_resize_parse(s, strlen(s), &w, &h) < 0, "a size past 65535 is refused");
	s = "[1,2]";
	tap_ok(kt_chan_resize_parse(s, strlen(s), &w, &h) < 0 &&
		   kt_chan_resize_parse("{", 1, &w, &h) < 0,
	       "what is not an object is refused");
}

int main(void)
{
	test_negotiate();
	test_exit_status();
	test_ws_messages();
	test_resize();
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
