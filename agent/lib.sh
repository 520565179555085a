# SPDX-License-Identifier: Apache-2.0
# lib.sh: what kt-agent and its built-in provider share: JSON fields from sh, logging.
# POSIX sh and awk only.  Sourced, never run.

TAB=$(printf '\t')

# json_flat: reads one JSON document on stdin and prints a line per scalar,
# "PATH<TAB>VALUE", PATH like .spec.containers[0].name, VALUE the JSON text of
# the scalar (strings keep their quotes and escapes).  Empty objects and
# arrays print as {} and [] so their presence shows.
json_flat() {
	awk '
	function fail(m) { printf "kt-agent: malformed JSON: %s at byte %d\n", m, i > "/dev/stderr"; bad = 1; exit 2 }
	function ws() { while (i <= n && index(" \t\r\n", substr(s, i, 1))) i++ }
	function str(   j, c) {
		j = i; i++
		while (i <= n) {
			c = substr(s, i, 1)
			if (c == "\\") { i += 2; continue }
			if (c == "\"") { i++; return substr(s, j, i - j) }
			i++
		}
		fail("unterminated string")
	}
	function lit(   j) {
		j = i
		while (i <= n && !index(",]} \t\r\n", substr(s, i, 1))) i++
		if (i == j) fail("expected a value")
		return substr(s, j, i - j)
	}
	function value(path,   c, k, idx, any) {
		ws(); c = substr(s, i, 1)
		if (c == "{") {
			i++; any = 0
			for (;;) {
				ws()
				if (substr(s, i, 1) == "}") { i++; break }
				if (substr(s, i, 1) != "\"") fail("expected a key")
				k = str(); k = substr(k, 2, length(k) - 2)
				ws(); if (substr(s, i, 1) != ":") fail("expected :"); i++
				value(path "." k); any = 1
				ws(); c = substr(s, i, 1); i++
				if (c == "}") break
				if (c != ",") fail("expected , or }")
			}
			if (!any) print path "\t{}"
		} else if (c == "[") {
			i++; idx = 0
			for (;;) {
				ws()
				if (substr(s, i, 1) == "]") { i++; break }
				value(path "[" idx "]"); idx++
				ws(); c = substr(s, i, 1); i++
				if (c == "]") break
				if (c != ",") fail("expected , or ]")
			}
			if (!idx) print path "\t[]"
		} else if (c == "\"") {
			print path "\t" str()
		} else {
			print path "\t" lit()
		}
	}
	{ s = s $0 "\n" }
	END { if (bad) exit 2; n = length(s); i = 1; if (n > 1) value("") }'
}

# the awk that turns a JSON scalar's text into plain text (null: nothing)
_UNQUOTE='
function unquote(v,   out, p, c, h, cp, k) {
	if (v == "null") return ""
	if (substr(v, 1, 1) != "\"") return v
	v = substr(v, 2, length(v) - 2); out = ""
	while ((p = index(v, "\\")) > 0) {
		out = out substr(v, 1, p - 1); c = substr(v, p + 1, 1)
		if (c == "n") out = out "\n"; else if (c == "t") out = out "\t"
		else if (c == "r") out = out "\r"; else if (c == "b") out = out "\b"
		else if (c == "f") out = out "\f"; else if (c == "u") {
			h = substr(v, p + 2, 4); cp = 0
			for (k = 1; k <= 4; k++) cp = cp * 16 + index("0123456789abcdef", tolower(substr(h, k, 1))) - 1
			if (cp < 128) out = out sprintf("%c", cp)
			else if (cp < 2048) out = out sprintf("%c%c", 192 + int(cp / 64), 128 + cp % 64)
			else out = out sprintf("%c%c%c", 224 + int(cp / 4096), 128 + int(cp / 64) % 64, 128 + cp % 64)
			v = substr(v, p + 6); continue
		} else out = out c
		v = substr(v, p + 2)
	}
	return out v
}'

# json_unquote VALUE: a JSON scalar's text (a string with its quotes) as plain text
json_unquote() {
	# through the environment: awk -v would expand the backslashes itself
	_KT_V=$1 awk "$_UNQUOTE"' BEGIN { printf "%s", unquote(ENVIRON["_KT_V"]) }'
}

# json_get FLAT PATH: the plain text of PATH in a json_flat listing held in FLAT
json_get() {
	printf '%s\n' "$1" | awk -F '\t' -v p="$2" "$_UNQUOTE"'
		$1 == p { printf "%s", unquote($2); exit }'
}

# json_str TEXT: TEXT as a JSON string, quotes included
json_str() {
	printf '%s' "$1" | awk 'BEGIN { ORS = "" } {
		gsub(/\\/, "\\\\\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); gsub(/\r/, "\\r")
		line[NR] = $0 } END { printf "\""; for (k = 1; k <= NR; k++) printf "%s%s", (k > 1 ? "\\n" : ""), line[k]; printf "\"" }'
}

# now_rfc3339: the UTC time in whole seconds, as metav1.Time fields want it
now_rfc3339() {
	date -u +%Y-%m-%dT%H:%M:%SZ
}

# say: one narration line on stderr, prefixed by the program's name
say() {
	printf '%s: %s\n' "${KT_PROG:-kt-agent}" "$*" >&2
}

# is_ours PID NAME: PID is alive and runs NAME (a pid file may outlive its process)
is_ours() {
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q -- "$2"
}
