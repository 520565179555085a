/* SPDX-License-Identifier: Apache-2.0 */
/* yaml_print: a JSON document as one block-style YAML document, through libyaml */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <yaml.h>

#include "json.h"
#include "core.h"

static int on_write(void *arg, unsigned char *buf, size_t size)
{
	kt_sb_put(arg, (const char *)buf, size);
	return 1;
}

/* words that a YAML 1.1 or 1.2 reader takes for null, a boolean or a float */
static bool special_word(const char *s)
{
	static const char words[] = "|~|null|Null|NULL|true|True|TRUE|false|False|FALSE"
				    "|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N"
				    "|.inf|.Inf|.INF|-.inf|-.Inf|-.INF|+.inf|+.Inf|+.INF"
				    "|.nan|.NaN|.NAN|";
	size_t n = strlen(s);

	for (const char *p = strstr(words, s); p; p = strstr(p + 1, s))
		if (p > words && p[-1] == '|' && p[n] == '|')
			return true;
	return false;
}

/*
 * A string that a reader could take for something else unquoted: empty,
 * a special word, or anything shaped like a number (decimal, hex, octal,
 * sexagesimal, a date).  Quoting too often is harmless; too rarely is not.
 */
static bool needs_quotes(const char *s)
{
	if (!*s || special_word(s))
		return true;
	if (!strchr("0123456789+-.", s[0]))
		return false;
	/* a YAML 1.1 timestamp (2026-12-01, 2026-12-01T12:04:06Z) */
	if (strspn(s, "0123456789") == 4 && s[4] == '-')
		return true;
	return strspn(s, "0123456789abcdefABCDEFxXoO_.:+-") == strlen(s);
}

static int emit_scalar(yaml_emitter_t *em, const char *text, bool string)
{
	yaml_event_t ev;
	yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
	bool quote = string && needs_quotes(text);

	if (quote)
		style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	else if (string && strchr(text, '\n'))
		style = YAML_LITERAL_SCALAR_STYLE;
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text,
					  (int)strlen(text), !quote, 1, style))
		return -1;
	return yaml_emitter_emit(em, &ev) ? 0 : -1;
}

static int emit_node(yaml_emitter_t *em, const cJSON *v)
{
	yaml_event_t ev;
	char num[40];
	bool empty = !v->child;

	if (cJSON_IsObject(v)) {
		if (!yaml_mapping_start_event_initialize(
			    &ev, NULL, NULL, 1,
			    empty ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			return -1;
		for (const cJSON *c = v->child; c; c = c->next)
			if (emit_scalar(em, c->string, true) < 0 || emit_node(em, c) < 0)
				return -1;
		yaml_mapping_end_event_initialize(&ev);
		return yaml_emitter_emit(em, &ev) ? 0 : -1;
	}
	if (cJSON_IsArray(v)) {
		if (!yaml_sequence_start_event_initialize(
			    &ev, NULL, NULL, 1,
			    empty ? YAML_FLOW_SEQUENCE_STYLE
				  : YAML_BLOCK_SEQUENCE_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			return -1;
		for (const cJSON *c = v->child; c; c = c->next)
			if (emit_node(em, c) < 0)
				return -1;
		yaml_sequence_end_event_initialize(&ev);
		return yaml_emitter_emit(em, &ev) ? 0 : -1;
	}
	if (cJSON_IsString(v))
		return emit_scalar(em, v->valuestring, true);
	if (kt_json_is_number(v))
		return emit_scalar(em, kt_json_num_text(v, num, sizeof(num)), false);
	if (cJSON_IsBool(v))
		return emit_scalar(em, cJSON_IsTrue(v) ? "true" : "false", false);
	return emit_scalar(em, "null", false);
}

static int emit_document(yaml_emitter_t *em, const cJSON *doc)
{
	yaml_event_t ev;

	if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ||
	    !yaml_emitter_emit(em, &ev) ||
	    !yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) ||
	    !yaml_emitter_emit(em, &ev) || emit_node(em, doc) < 0 ||
	    !yaml_document_end_event_initialize(&ev, 1) || !yaml_emitter_emit(em, &ev) ||
	    !yaml_stream_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
		return -1;
	return 0;
}

char *kt_yaml_print(const cJSON *doc, struct kt_err *err)
{
	yaml_emitter_t em;
	struct kt_sb sb = { 0 };
	char *out = NULL;

	if (!yaml_emitter_initialize(&em)) {
		kt_error(err, "out of memory");
		return NULL;
	}
	yaml_emitter_set_output(&em, on_write, &sb);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_indent(&em, 2);
	yaml_emitter_set_width(&em, -1);
	if (emit_document(&em, doc) < 0 || !yaml_emitter_flush(&em)) {
		kt_error(err, "cannot write YAML: %s",
			 em.problem ? em.problem : "out of memory");
		goto out;
	}
	if (sb.oom) {
		kt_error(err, "out of memory");
		goto out;
	}
	out = sb.buf ? sb.buf : strdup("");
	sb.buf = NULL;
	if (!out)
		kt_error(err, "out of memory");
out:
	kt_sb_release(&sb);
	yaml_emitter_delete(&em);
	return out;
}
