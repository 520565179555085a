/* SPDX-License-Identifier: Apache-2.0 */
/* time: kubectl durations and RFC 3339 times */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timeutil.h"

static const struct {
	const char *name;
	double ms;
} units[] = {
	{ "ns", 1e-6 }, { "us", 1e-3 }, { "\xc2\xb5s", 1e-3 }, { "ms", 1 },
	{ "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
};

/* Go's [0-9]*(\.[0-9]*)? with at least one digit; *end == p when there is none
 * (strtod would take "nan", "inf", hexadecimal and exponents too) */
static double number(const char *p, const char **end)
{
	const char *q = p;
	double v = 0, scale = 1;
	bool any = false;

	for (; *q >= '0' && *q <= '9'; q++, any = true)
		v = v * 10 + (*q - '0');
	if (*q == '.')
		for (q++; *q >= '0' && *q <= '9'; q++, any = true)
			v += (*q - '0') * (scale /= 10);
	*end = any ? q : p;
	return v;
}

int kt_duration_parse(const char *s, int64_t *ms, struct kt_err *err)
{
	const char *p = s;
	double total = 0;
	bool neg = false;

	if (!s || !*s)
		return kt_error_kind(err, KT_ERR_INPUT, "invalid duration ''");
	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (!strcmp(p, "0")) {
		*ms = 0;
		return 0;
	}
	while (*p) {
		const char *end;
		double v = number(p, &end);
		size_t best = 0, bi = 0;

		if (end == p)
			return kt_error_kind(err, KT_ERR_INPUT,
					     "invalid duration '%s': expected a number and a unit such as 500ms, 10s, 1m30s",
					     s);
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t n = strlen(units[i].name);

			if (!strncmp(end, units[i].name, n) && n > best) {
				best = n;
				bi = i;
			}
		}
		if (!best)
			return kt_error_kind(err, KT_ERR_INPUT,
					     "invalid duration '%s': missing or unknown unit (use ns, us, ms, s, m or h)",
					     s);
		total += v * units[bi].ms;
		p = end + best;
	}
	if (!(total <= 9.2e15))
		return kt_error_kind(err, KT_ERR_INPUT, "invalid duration '%s': too large", s);
	*ms = (int64_t)(total + 0.5);
	if (neg)
		*ms = -*ms;
	return 0;
}

char *kt_duration_format(int64_t ms, char *buf, size_t size)
{
	/* unsigned, so INT64_MIN has a magnitude too */
	uint64_t u = ms < 0 ? -(uint64_t)ms : (uint64_t)ms, frac = u % 1000;
	const char *sign = ms < 0 ? "-" : "";
	size_t o = 0;
	int digits = 3;

	if (u == 0) {
		snprintf(buf, size, "0s");
		return buf;
	}
	if (u < 1000) {
		snprintf(buf, size, "%s%" PRIu64 "ms", sign, u);
		return buf;
	}
	o += (size_t)snprintf(buf, size, "%s", sign);
	if (u >= 3600000)
		o += (size_t)snprintf(buf + o, size - o, "%" PRIu64 "h", u / 3600000);
	if (u >= 60000)
		o += (size_t)snprintf(buf + o, size - o, "%" PRIu64 "m", u / 60000 % 60);
	if (frac == 0) {
		snprintf(buf + o, size - o, "%" PRIu64 "s", u / 1000 % 60);
		return buf;
	}
	/* as time.Duration.String: the fraction without trailing zeros */
	for (; frac % 10 == 0; frac /= 10)
		digits--;
	snprintf(buf + o, size - o, "%" PRIu64 ".%0*" PRIu64 "s", u / 1000 % 60, digits, frac);
	return buf;
}

int64_t kt_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t kt_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* the date and time of RFC 3339, the year in four digits: strftime's %Y
 * writes the year 148 as "148", which no RFC 3339 reader takes back */
static size_t date_time(char *buf, size_t size, const struct tm *tm)
{
	int n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d", tm->tm_year + 1900,
			 tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min, tm->tm_sec);

	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

char *kt_time_format(int64_t us, bool micro, char *buf, size_t size)
{
	time_t sec = (time_t)(us >= 0 ? us / 1000000 : (us - 999999) / 1000000);
	int64_t frac = us - (int64_t)sec * 1000000;
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = date_time(buf, size, &tm);
	if (micro)
		snprintf(buf + n, size - n, ".%06" PRId64 "Z", frac);
	else
		snprintf(buf + n, size - n, "Z");
	return buf;
}

static int digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static int parse_parts(const char *s, int64_t *sec, int *nsec, struct kt_err *err);

int kt_time_parse(const char *s, int64_t *us, struct kt_err *err)
{
	int64_t sec;
	int nsec;

	if (parse_parts(s, &sec, &nsec, err) < 0)
		return -1;
	*us = sec * 1000000 + nsec / 1000;
	return 0;
}

/* int64 nanoseconds reach from 1677 to 2262 */
int kt_time_parse_ns(const char *s, int64_t *ns, struct kt_err *err)
{
	int64_t sec;
	int nsec;

	if (parse_parts(s, &sec, &nsec, err) < 0)
		return -1;
	if (sec <= INT64_MIN / 1000000000 || sec >= INT64_MAX / 1000000000)
		return kt_error_kind(err, KT_ERR_INPUT,
				     "time '%s' out of range: nanoseconds reach from 1678 to 2261", s);
	*ns = sec * 1000000000 + nsec;
	return 0;
}

char *kt_time_format_ns(int64_t ns, bool fixed, char *buf, size_t size)
{
	time_t sec = (time_t)(ns >= 0 ? ns / 1000000000 : (ns - 999999999) / 1000000000);
	int64_t frac = ns - (int64_t)sec * 1000000000;
	struct tm tm;
	size_t n;
	int digits = 9;

	gmtime_r(&sec, &tm);
	n = date_time(buf, size, &tm);
	if (!fixed)
		for (; digits > 0 && frac % 10 == 0; digits--)
			frac /= 10;
	if (digits)
		snprintf(buf + n, size - n, ".%0*" PRId64 "Z", digits, frac);
	else
		snprintf(buf + n, size - n, "Z");
	return buf;
}

/* the days from 1970-01-01 to y-m-d (proleptic Gregorian), counted in 400-year
 * eras of 146097 days from a year that starts in March, so that February's
 * length is the last day of the year; a day past the month's end counts on */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int parse_parts(const char *s, int64_t *secs, int *nsec, struct kt_err *err)
{
	int y, mo, d, h, mi, sec, frac = 0, fdig = 0, oh = 0, om = 0, sign = 0;
	const char *p = s + 19;

	if (!s || strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) ||
	    s[7] != '-' || digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
	    digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
	    digits(s + 17, 2, &sec))
		goto bad;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, fdig++)
			if (fdig < 9)
				frac = frac * 10 + (*p - '0');
		if (!fdig)
			goto bad;
		for (int i = fdig; i < 9; i++)
			frac *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && !digits(p + 1, 2, &oh) && p[3] == ':' &&
		   !digits(p + 4, 2, &om)) {
		sign = *p == '-' ? -1 : 1;
		p += 6;
	} else {
		goto bad;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		goto bad;
	/* as timegm, without its time zone machinery: a log's every line is parsed */
	*secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
		sign * (oh * 3600 + om * 60);
	*nsec = frac;
	return 0;
bad:
	return kt_error_kind(err, KT_ERR_INPUT,
			     "invalid time '%s': expected RFC 3339, such as 2026-11-30T07:22:21Z",
			     s ? s : "");
}
