/* SPDX-License-Identifier: Apache-2.0 */
/* podstream: pods' statuses over a stream of Pods and probe results (pod-status --stream) */
#include <stdlib.h>

#include "core.h"
#include "json.h"
#include "json_go.h"
#include "podstream.h"

/* a pod seen: the last Pod read and the last status given for it */
struct seen {
	cJSON *pod;
	cJSON *status;
};

struct kt_podstream {
	struct kt_probe_results *probes;
	struct kt_podstatus_opts opts;
	kt_podstream_fn *fn;
	kt_podstream_dropped_fn *dropped;
	void *arg;
	struct kt_hmap seen; /* "namespace/name" -> struct seen */
};

struct kt_podstream *kt_podstream_new(struct kt_probe_results *probes,
				      const struct kt_podstatus_opts *opts, kt_podstream_fn *fn,
				      kt_podstream_dropped_fn *dropped, void *arg)
{
	struct kt_podstream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->probes = probes;
	s->opts = *opts;
	s->opts.probes = probes;
	s->fn = fn;
	s->dropped = dropped;
	s->arg = arg;
	s->seen.own_keys = true;
	return s;
}

/*
 * A pod's status: results naming a container the pod does not probe are
 * reported once and dropped, so the pod's later lines still come.
 */
static cJSON *compute(struct kt_podstream *s, const cJSON *pod, const cJSON *current,
		      struct kt_err *err)
{
	cJSON *st;

	s->opts.current = current;
	st = kt_podstatus_compute(pod, &s->opts, err);
	if (!st && err->kind == KT_ERR_INPUT && kt_probe_results_prune(s->probes, pod) > 0) {
		s->dropped(err, s->arg);
		st = kt_podstatus_compute(pod, &s->opts, err);
	}
	return st;
}

/* a probe result (taken): the status of the pod it names, when seen and changed */
static int result_line(struct kt_podstream *s, cJSON *doc, const char *at, struct kt_err *err)
{
	struct seen *p = NULL;
	int rc = kt_probe_results_add(s->probes, doc, at, err);
	cJSON *st;

	if (rc == 0)
		p = kt_hmap_get(&s->seen, kt_json_get_string(doc, "pod"));
	cJSON_Delete(doc);
	if (!p)
		return rc;
	st = compute(s, p->pod, p->status, err);
	if (!st)
		return -1;
	if (kt_go_equal(st, p->status)) {
		cJSON_Delete(st);
		return 0;
	}
	if (s->fn(p->pod, p->status, st, s->arg, err) < 0) {
		cJSON_Delete(st);
		return -1;
	}
	cJSON_Delete(p->status);
	p->status = st;
	return 0;
}

int kt_podstream_feed(struct kt_podstream *s, cJSON *doc, const char *at, struct kt_err *err)
{
	struct seen *p;
	cJSON *st;
	char key[512];

	if (kt_probe_results_is_line(doc))
		return result_line(s, doc, at, err);
	if (cJSON_IsObject(doc) && !kt_json_get_string(kt_json_get(doc, "metadata"), "name")) {
		cJSON_Delete(doc);
		return kt_error_kind(err, KT_ERR_INPUT,
				     "metadata.name: missing: a stream tells pods apart by "
				     "namespace and name");
	}
	p = kt_hmap_get(&s->seen, kt_podstatus_key(doc, key, sizeof(key)));
	st = compute(s, doc, p ? p->status : NULL, err);
	if (!st || s->fn(doc, p ? p->status : NULL, st, s->arg, err) < 0) {
		cJSON_Delete(st);
		cJSON_Delete(doc);
		return -1;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || kt_hmap_put(&s->seen, key, p) < 0) {
			free(p);
			cJSON_Delete(st);
			cJSON_Delete(doc);
			return kt_error(err, "out of memory");
		}
	}
	cJSON_Delete(p->pod);
	cJSON_Delete(p->status);
	p->pod = doc;
	p->status = st;
	return 0;
}

void kt_podstream_free(struct kt_podstream *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->seen.e && i < s->seen.cap; i++) {
		struct seen *p = s->seen.e[i].key ? s->seen.e[i].val : NULL;

		if (p) {
			cJSON_Delete(p->pod);
			cJSON_Delete(p->status);
			free(p);
		}
	}
	kt_hmap_release(&s->seen);
	free(s);
}
