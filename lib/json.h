/* SPDX-License-Identifier: Apache-2.0 */
/* json: documents and streams in (JSON or YAML), exact numbers, printers out */
#ifndef KT_JSON_H
#define KT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * Numbers.  cJSON keeps numbers as doubles, which loses int64 and float text.
 * Every number this module builds is therefore a cJSON_Raw item whose
 * valuestring is the number's JSON text exactly as read (or as made by
 * kt_json_num_new), with valuedouble filled in too.  Printers print it
 * verbatim.  Code above asks kt_json_is_number(), never cJSON_IsNumber(); a
 * plain cJSON number (made by cJSON_CreateNumber) is accepted everywhere too.
 */

#define KT_JSON_MAX_INPUT_DEFAULT ((size_t)64 << 20)

/* true for a Raw number made here and for a plain cJSON number */
bool kt_json_is_number(const cJSON *item);

/* the number's value as int64 (kt_go_int64's rule); -1 with err when it is
 * not integer text or does not fit */
int kt_json_num_int64(const cJSON *item, int64_t *out, struct kt_err *err);

/* the number's text; lives as long as item. For a plain cJSON number a
 * shortest round-trip text is made into buf (size >= 32) and buf returned. */
const char *kt_json_num_text(const cJSON *item, char *buf, size_t size);

/* new number items; caller owns (cJSON_Delete) */
cJSON *kt_json_num_new_int(int64_t v);
cJSON *kt_json_num_new_text(const char *text);	/* text must be valid JSON number */
/* the shortest text that round-trips; NULL for infinity or NaN, which JSON
 * cannot hold */
cJSON *kt_json_num_new_double(double v);
/* a string item from len bytes that may hold invalid UTF-8 or NUL: each bad
 * byte becomes U+FFFD, as Go's encoding/json writes it; caller owns */
cJSON *kt_json_string_from_bytes(const char *s, size_t len);

/* what a value is, for messages: "an object", "an array", "a string",
 * "a number", "a boolean" or "null"; a static string */
const char *kt_json_type_name(const cJSON *item);

/* deep copy; caller owns. NULL on allocation failure. */
cJSON *kt_json_dup(const cJSON *item);

/*
 * Adopting setters: they take item and free it on failure, so the caller has
 * one path.  kt_json_set replaces an existing key in place (keeping its
 * position) or appends.  Return 0 or -1 (out of memory).
 */
int kt_json_set(cJSON *obj, const char *key, cJSON *item);
/* adds key in first place (where an object from the API has apiVersion and
 * kind); the caller makes sure obj has no such key yet.  Adopts item. */
int kt_json_set_first(cJSON *obj, const char *key, cJSON *item);
int kt_json_append(cJSON *arr, cJSON *item);

/* borrowed lookups, case-sensitive; NULL when absent or of another type */
cJSON *kt_json_get(const cJSON *obj, const char *key);
const char *kt_json_get_string(const cJSON *obj, const char *key);
cJSON *kt_json_get_object(const cJSON *obj, const char *key);
cJSON *kt_json_get_array(const cJSON *obj, const char *key);
/* walk "a.b.c" through objects; borrowed */
cJSON *kt_json_path(const cJSON *obj, const char *dotted);

/* ------------------------------------------------------------------ input */

/*
 * A reader yields documents one by one from a FILE (stdin or a file).  The
 * format is detected from the first non-blank byte: '{' '[' '"' digits etc.
 * mean JSON (one document, or a stream of concatenated/NDJSON texts), anything
 * else means YAML (documents separated by '---').  Errors read
 * "NAME:LINE:COL: what is wrong" in err->msg, NAME being the name given
 * ("-" shows as "<stdin>").
 */
struct kt_json_reader;

enum kt_json_reader_flags {
	KT_JSON_STREAM = 1 << 0,	/* allow more than one document */
	KT_JSON_JSON_ONLY = 1 << 1,	/* refuse YAML */
};

/* opens path ("-" or NULL: stdin); caller owns, kt_json_reader_close (both
 * opens: a reader from memory is closed the same way) */
struct kt_json_reader *kt_json_reader_open(const char *path, size_t max_input,
					   unsigned flags, struct kt_err *err);
/* reads from memory (copied); name is used in messages */
struct kt_json_reader *kt_json_reader_open_mem(const char *name, const char *buf, size_t len,
					       size_t max_input, unsigned flags,
					       struct kt_err *err);
void kt_json_reader_close(struct kt_json_reader *r);

/*
 * Next document: 1 and *out set (caller owns), 0 at end of input, -1 on error
 * (err filled, nothing in *out).  Without KT_JSON_STREAM a second document is
 * an error.  A document over max_input bytes is refused, not truncated.
 */
int kt_json_reader_next(struct kt_json_reader *r, cJSON **out, struct kt_err *err);

/* the line the last document read began on, for messages about its content;
 * 0 when unknown (YAML input) */
long kt_json_reader_line(const struct kt_json_reader *r);

/* one whole document from a path ("-" for stdin); empty input is an error */
cJSON *kt_json_read_file(const char *path, size_t max_input, struct kt_err *err);
/*
 * A document named by its file in an object: obj[file_key], a path, read
 * whole (kt_json_read_file, at most max_input bytes; "-" is a file named so,
 * never stdin) and set as obj[key], file_key removed.  1 when it was, 0 when
 * obj has no file_key (obj untouched), -1 with err ("FILE_KEY: what") and obj
 * untouched when file_key is not a non-empty string or obj gives key too
 * (kind KT_ERR_INPUT), or the file cannot be read or parsed (kind as
 * kt_json_read_file's).
 */
int kt_json_inline_file(cJSON *obj, const char *key, const char *file_key, size_t max_input,
			struct kt_err *err);
/* one document from a string; name for messages */
cJSON *kt_json_parse(const char *name, const char *text, size_t len, struct kt_err *err);
/* exactly one JSON text (no YAML); positions in messages start at line:col, for
 * a text cut from a larger input (a line of a protocol) */
cJSON *kt_json_parse_at(const char *name, const char *text, size_t len, long line, long col,
			struct kt_err *err);

/*
 * The rules that split a stream into documents, one copy for both sides:
 * kt_json_reader pulls (json_read.c), kt_docpush is pushed bytes as they
 * arrive (docpush.c).  Each scan keeps its place between calls, so text fed
 * a byte at a time is still looked at once.
 */

/* line and col (from 1) move past n bytes of text */
void kt_json_pos_advance(long *line, long *col, const char *text, size_t n);

/* the format of a stream from its first bytes (the first not blank at p):
 * 1 JSON ('{' '[' '"' a number, null, true, false), 0 YAML, -1 when more
 * bytes are needed to tell ("-1" from "---", "null" from "nullable: x") */
int kt_json_sniff(const char *p, size_t avail, bool eof);

/* where one JSON text ends: bracket depth outside strings for an object or
 * an array, the next delimiter for a scalar; zero it for each new text */
struct kt_json_scan {
	size_t n;		/* bytes of the text looked at */
	int depth;
	bool in_str, esc;
};
/* text[0] is the text's first byte (not blank); 1 with *end when its end is
 * within avail bytes, 0 when more input is needed */
int kt_json_scan_end(struct kt_json_scan *s, const char *text, size_t avail, size_t *end);

/* where one YAML document of a stream ends: at a line of only "---" or
 * "..." (a comment or content may follow the marker after a blank) */
struct kt_yaml_scan {
	size_t line;		/* where the unfinished line starts */
	size_t n;		/* bytes looked at */
};
/* 1 with *end (the marker line's start) when a marker line is within avail
 * bytes (the last line counts at eof), 0 when more input is needed */
int kt_yaml_scan_end(struct kt_yaml_scan *s, const char *text, size_t avail, bool eof,
		     size_t *end);
/* how long the marker at text is (3), 0 when text (a line, or what is left of
 * the input from a line's start) begins with no marker line */
size_t kt_yaml_marker(const char *text, size_t len);

/* one YAML document from text cut from a stream at line:col (positions in
 * messages are the stream's): 1 with *out (caller owns), 0 for none (blank
 * or comments only), -1 with err */
int kt_yaml_parse_at(const char *name, const char *text, size_t len, long line, long col,
		     size_t max, cJSON **out, struct kt_err *err);

/* ----------------------------------------------------------------- output */

enum kt_json_print_flags {
	KT_JSON_PRETTY = 1 << 0,	/* two-space indent, "key": value, like jq . */
	KT_JSON_SORT_KEYS = 1 << 1,	/* keys sorted bytewise at every level */
	/* strings escaped as Go's encoding/json does since Go 1.22 (the Go that
	 * current Kubernetes and virtual-kubelet are built with): \b \f \n \r
	 * \t short, other controls and < > & as \u00xx, U+2028 and U+2029 as
	 * \u2028 \u2029 */
	KT_JSON_GO_ESCAPE = 1 << 2,
	/* a patch as upstream prints it */
	KT_JSON_SORTED = KT_JSON_SORT_KEYS | KT_JSON_GO_ESCAPE,
	/* no trailing newline: a value inside a message, an annotation or the
	 * environment */
	KT_JSON_NO_NEWLINE = 1 << 3,
};

/* the document as text with a trailing newline (unless KT_JSON_NO_NEWLINE);
 * caller frees with free(); NULL when out of memory */
char *kt_json_print(const cJSON *item, unsigned flags);

/*
 * Writes one whole document and a newline to f, then flushes.  The text is
 * built in memory first, so a failure never leaves half a document behind.
 * -1 with err on a write error.
 */
int kt_json_write(FILE *f, const cJSON *item, unsigned flags, struct kt_err *err);

/*
 * The document as one YAML document in block style (what kubectl -o yaml
 * prints, keys in the document's order): two-space indents, sequences
 * under a key not indented, empty objects and arrays as {} and [], a string
 * that would read back as another type (true, 1.5, 0x1F, null, "") double
 * quoted, a multi-line string as a literal block.  No "---" line.  Reading
 * the text back gives the same document.  Caller frees with free(); NULL
 * with err when out of memory.
 */
char *kt_yaml_print(const cJSON *doc, struct kt_err *err);

#endif
