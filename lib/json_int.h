/* SPDX-License-Identifier: Apache-2.0 */
/* json_int: what the json module's files share, not for use outside it */
#ifndef KT_JSON_INT_H
#define KT_JSON_INT_H

#include <yaml.h>

#include "json.h"

/* the next YAML document from an initialized libyaml parser: 1, 0 at end, -1 */
int kt_yaml_next(yaml_parser_t *yp, const char *name, size_t max, cJSON **out,
		 struct kt_err *err);

/* valuedouble and valueint of a Raw number item from its valuestring */
void kt_json_num_fill(cJSON *item);

/* one JSON value at the start of text, which may go on after it: *used is
 * how many bytes it took (blanks before it included) */
cJSON *kt_json_parse_prefix(const char *name, const char *text, size_t len, long line,
			    long col, size_t *used, struct kt_err *err);

#endif
