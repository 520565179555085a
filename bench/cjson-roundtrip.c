/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/cjson-roundtrip: the floor for any tool that reads a JSON document
 * with cJSON and prints it again: read the file, cJSON_Parse,
 * cJSON_PrintUnformatted, write, free.  Nothing else.
 *
 * usage: cjson-roundtrip <file>
 */
#include <stdio.h>
#include <stdlib.h>

#include <cJSON.h>

int main(int argc, char **argv)
{
	FILE *f;
	char *buf, *out;
	long n;
	cJSON *doc;

	if (argc != 2 || !(f = fopen(argv[1], "rb")))
		return 2;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		return 2;
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		return 2;
	buf[n] = '\0';
	fclose(f);
	doc = cJSON_Parse(buf);
	if (!doc)
		return 2;
	out = cJSON_PrintUnformatted(doc);
	if (!out || puts(out) == EOF)
		return 1;
	free(out);
	cJSON_Delete(doc);
	free(buf);
	return 0;
}
