/* SPDX-License-Identifier: Apache-2.0 */
/* schema: strategic merge patch metadata (patch strategy, merge key) per field */
#ifndef KT_SCHEMA_H
#define KT_SCHEMA_H

#include <stdbool.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * A schema answers one question for the SMP engine: for field KEY of the type
 * at hand, what is its patch strategy, its merge key, and the type below it.
 * Two sources give the same answers: a built-in table of core Kubernetes
 * types, and an OpenAPI v2 (definitions) or v3 (components.schemas) document
 * carrying x-kubernetes-patch-strategy and x-kubernetes-patch-merge-key.
 */
struct kt_schema;      /* opaque: patch metadata for one root type, caller owns */
struct kt_schema_node; /* one type inside a schema; lives as long as the schema */

/*
 * The built-in table for "Node", "Pod", "Lease", "ConfigMap", "Service",
 * "Deployment", "ObjectMeta" (and the types they reach).  Fields the table does
 * not list carry no patch metadata and never fail a lookup.  Caller owns the
 * result (kt_schema_free).  NULL with err (KT_ERR_INPUT) if kind is unknown.
 */
struct kt_schema *kt_schema_builtin(const char *kind, struct kt_err *err);

/*
 * Loads an OpenAPI v2 (swagger "definitions") or v3 ("components.schemas")
 * document, JSON or YAML, and roots the schema at definition `type`.  $ref
 * and v3's allOf[0] are followed.  A field missing from a definition fails
 * the lookup ("unable to find api field"), as upstream does.  Caller owns the
 * result (kt_schema_free).  NULL with err (KT_ERR_INPUT for a document that
 * is not OpenAPI or has no such type, KT_ERR_FAIL when the file cannot be read).
 */
struct kt_schema *kt_schema_openapi_load(const char *path, const char *type,
					 struct kt_err *err);

/* the same from a document already parsed (borrowed); name is for messages */
struct kt_schema *kt_schema_openapi_from_doc(const cJSON *doc, const char *name,
					     const char *type, struct kt_err *err);

/* frees a schema and every node in it; NULL is fine */
void kt_schema_free(struct kt_schema *schema);

/* the built-in kind names, NULL-terminated; static storage */
const char *const *kt_schema_builtin_kinds(void);

/* ------------------------------------------------------------ lookups */

/* the root type; borrowed, lives as long as schema (NULL schema: NULL) */
const struct kt_schema_node *kt_schema_root(const struct kt_schema *schema);

/* what a lookup finds; strings borrowed from the schema */
struct kt_schema_meta {
	const char *strategy;  /* raw strategy text ("merge,retainKeys"), "" when none */
	const char *merge_key; /* "" when none */
	const struct kt_schema_node *sub; /* the field's type; NULL = unknown */
};

/*
 * Looks up field `key` of `node`.  as_list selects upstream's
 * LookupPatchMetadataForSlice (sub is then the element type) instead of
 * LookupPatchMetadataForStruct.  A NULL node (a type nothing is known about)
 * answers with empty metadata and a NULL sub.  -1 with err (KT_ERR_INPUT) when
 * the field is unknown in a closed type or the shape does not fit
 * ("unable to find api field", "expected kind, but got slice", ...).
 */
int kt_schema_lookup(const struct kt_schema_node *node, const char *key, bool as_list,
		     struct kt_schema_meta *meta, struct kt_err *err);

/* the node's type name for messages ("" when it has none); borrowed */
const char *kt_schema_node_name(const struct kt_schema_node *node);

#endif
