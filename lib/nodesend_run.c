/* SPDX-License-Identifier: Apache-2.0 */
/* nodesend_run: a node status send driven by blocking calls */
#include "api.h"
#include "log.h"
#include "nodesend.h"
#include "timeutil.h"

void kt_nodesend_api_req(const struct kt_nodesend_req *nr, struct kt_api_req *req)
{
	req->method = nr->method;
	req->path = nr->path;
	req->content_type = nr->content_type;
	req->body = nr->body;
	req->body_len = nr->body_len;
}

int kt_nodesend_run(struct kt_nodesend *s, struct kt_api *api)
{
	enum kt_nodesend_next next = KT_NODESEND_SEND;

	while (next == KT_NODESEND_SEND) {
		struct kt_nodesend_req nr;
		struct kt_api_req req = { 0 };
		struct kt_api_resp resp = { 0 };
		struct kt_err err = { 0 };
		struct kt_nodesend_reply r = { 0 };

		if (kt_nodesend_request(s, &nr, &err) < 0) {
			s->err = err;
			s->result = KT_NODESEND_FAILED;
			return -1;
		}
		if (s->step == KT_NODESEND_CREATE)
			KT_V(2, "registering node", "node=\"%s\"", s->name);
		if (s->step == KT_NODESEND_GET && s->writes)
			KT_V(4, "conflict, reading the node again", "node=\"%s\" attempt=%d",
			     s->name, s->writes);
		kt_nodesend_api_req(&nr, &req);
		r.err = kt_api_do(api, &req, &resp, &err) < 0 ? &err : NULL;
		r.json = resp.json;
		next = kt_nodesend_reply(s, &r, kt_now_us());
		kt_api_resp_release(&resp);
	}
	return s->result == KT_NODESEND_FAILED ? -1 : 0;
}
