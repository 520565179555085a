/* SPDX-License-Identifier: Apache-2.0 */
/* changes: the CPU node-history spends on one event of a node with N conditions
 * (each with reason, message and lastTransitionTime, owned by one manager's
 * managedFields entry), every condition flipped: kt_history_changes and
 * kt_history_author, as the recorder calls them.  Prints N, the CPU of one
 * event, and its ratio to the previous row's (2 is linear, 4 quadratic). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kt.h"

static cJSON *node(int n, const char *status)
{
	cJSON *nd = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(nd, "metadata");
	cJSON *mf = cJSON_AddArrayToObject(md, "managedFields"), *e = cJSON_CreateObject();
	cJSON *conds = cJSON_AddArrayToObject(cJSON_AddObjectToObject(nd, "status"), "conditions");
	cJSON *fv;
	char t[32], k[64];

	cJSON_AddStringToObject(md, "name", "big");
	cJSON_AddStringToObject(e, "manager", "node-problem-detector");
	cJSON_AddStringToObject(e, "time", "2026-12-01T10:00:00Z");
	fv = cJSON_AddObjectToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "fieldsV1"),
							     "f:status"),
				     "f:conditions");
	cJSON_AddItemToArray(mf, e);
	for (int i = 0; i < n; i++) {
		cJSON *c = cJSON_CreateObject(), *own;

		snprintf(t, sizeof(t), "C%d", i);
		snprintf(k, sizeof(k), "k:{\"type\":\"%s\"}", t);
		cJSON_AddStringToObject(c, "type", t);
		cJSON_AddStringToObject(c, "status", status);
		cJSON_AddStringToObject(c, "reason", "SomeReason");
		cJSON_AddStringToObject(c, "message", "a message of a usual length about the node");
		cJSON_AddStringToObject(c, "lastTransitionTime", "2026-12-01T10:00:00Z");
		cJSON_AddItemToArray(conds, c);
		own = cJSON_AddObjectToObject(fv, k);
		cJSON_AddObjectToObject(own, "f:status");
		cJSON_AddObjectToObject(own, "f:reason");
	}
	return nd;
}

int main(int argc, char **argv)
{
	int top = argc > 1 ? atoi(argv[1]) : 8000;
	double prev = 0;

	printf("%8s %14s %8s\n", "N", "ms per event", "ratio");
	for (int n = 500; n <= top; n *= 2) {
		cJSON *a = node(n, "True"), *b = node(n, "False"), *ch;
		clock_t t0 = clock();
		const char *who;
		double ms;

		ch = kt_history_changes(a, b, false);
		who = ch ? kt_history_author(b, ch) : NULL;
		ms = (double)(clock() - t0) * 1000 / CLOCKS_PER_SEC;
		if (!ch || cJSON_GetArraySize(ch) != n || !who)
			return 1;
		if (prev > 0)
			printf("%8d %14.1f %8.2f\n", n, ms, ms / prev);
		else
			printf("%8d %14.1f %8s\n", n, ms, "-");
		prev = ms;
		cJSON_Delete(ch);
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
	return 0;
}
