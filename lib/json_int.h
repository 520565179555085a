/* SPDX-License-Identifier: Apache-2.0 */
/* json_int: what the json module's files share, not for use outside it */
#ifndef KT_JSON_INT_H
#define KT_JSON_INT_H

#include <yaml.h>

#include "json.h"

/* the next YAML document from an initialized libyaml parser: 1, 0 at end, -1 */
int kt_yaml_next(yaml_parser_t *yp, const char *name, size_t max, cJSON **out,
		 struct kt_err *err);

#endif
