/* SPDX-License-Identifier: Apache-2.0 */
/* schema_int: the node model shared by the OpenAPI loader and the built-in table */
#ifndef KT_SCHEMA_INT_H
#define KT_SCHEMA_INT_H

#include "schema.h"

enum kt_sk {
	KT_SK_ANY,    /* nothing known: lookups inside find empty metadata */
	KT_SK_STRUCT, /* named fields */
	KT_SK_MAP,    /* string keys, one value type */
	KT_SK_ARRAY,  /* one element type */
	KT_SK_PRIM,   /* string, number, boolean */
};

struct kt_schema_field {
	char *name;
	char *strategy;
	char *merge_key;
	struct kt_schema_node *node;
};

struct kt_schema_node {
	enum kt_sk kind;
	char *name;
	bool open; /* a struct whose unlisted fields are simply unknown */
	struct kt_schema_field *fields; /* sorted by name */
	size_t nfields, capfields;
	struct kt_schema_node *elem; /* MAP and ARRAY */
	struct kt_schema_node *next_alloc;
};

struct kt_schema {
	struct kt_schema_node *root;
	struct kt_schema_node *nodes; /* every node, for freeing */
};

/* a new node owned by schema; NULL when out of memory */
struct kt_schema_node *kt_schema_node_new(struct kt_schema *s, enum kt_sk kind,
					  const char *name);
/* adds a field (strings copied); -1 when out of memory */
int kt_schema_field_add(struct kt_schema_node *n, const char *name, const char *strategy,
			const char *merge_key, struct kt_schema_node *type);
/* sorts the fields of every node so lookups can bisect */
void kt_schema_seal(struct kt_schema *s);

#endif
