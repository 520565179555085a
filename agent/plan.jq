# SPDX-License-Identifier: Apache-2.0
# plan.jq: what the built-in provider needs of a pod to start its containers, as
# one line of shell assignments for eval, so that jq runs once per pod: the
# provider's first script for a pod (pod_plan in provider/common.sh) runs
# made_plan on its pod.json and keeps the plan in the pod's directory
# (POD_DIR/plan), which every later one sources.  The assignments:
# n_containers; for container I (1..n) c_name_I, c_user_I (see user),
# c_stdin_I ("open" for stdin, "once" for stdinOnce too, or empty) and
# c_argv_I, its argv as the kubelet builds it (env as NAME=VALUE, then command and args, with $(VAR)
# references expanded from the env before it, $$ being a '$'), shell-quoted for
# eval, or "no-command" when there is nothing to run; restart_policy and grace
# (the pod's terminationGracePeriodSeconds).  A newline or a tab in a value is
# written as "$NL" or "$TAB" outside the quotes: the provider sets both.
# A container name that is not a DNS label is an error: it names a directory.

# one pass over the code points, so that its cost grows with the string's length
# alone (no string is grown in a loop: jq copies it each time): a '$' waits for
# the next code point; "$(" starts a name only when a ')' comes later, as the
# kubelet's expansion has it.  Each step gives the code points it adds.
def expand($env):
	explode as $cs
	| ($cs | rindex([41]) // -1) as $close
	| [foreach range(0; ($cs | length) + 1) as $i ({m: 0, s: 0, out: []};
		($cs[$i] // -1) as $c
		| if .m == 0 then
			if $c == 36 then {m: 1, out: []} else {m: 0, out: [$c | select(. >= 0)]} end
		  elif .m == 1 then
			if $c == 36 then {m: 0, out: [36]}
			elif $c == 40 and $close > $i then {m: 2, s: ($i + 1), out: []}
			else {m: 0, out: [36, ($c | select(. >= 0))]} end
		  elif $c == 41 then
			($cs[.s:$i] | implode) as $n
			| {m: 0, out: (if $env | has($n) then $env[$n] else "$(" + $n + ")" end | explode)}
		  else .out = [] end;
		.out[])]
	| implode;
def argv:
	. as $c
	| (reduce ($c.env // [])[] as $e ({};
		. as $known
		| if $e | has("valueFrom") then . else .[$e.name] = ($e.value // "" | expand($known)) end))
		as $env
	| [$env | to_entries[] | "\(.key)=\(.value)"] as $pairs
	| [($c.command // [])[], ($c.args // [])[] | expand($env)] as $argv
	| if $argv == [] then "no-command" else ($pairs + $argv | @sh) end;
# one word for eval, on one line
def word: @sh | gsub("\n"; "'\"$NL\"'") | gsub("\t"; "'\"$TAB\"'");
# the user a container runs as, "UID:GID" from its securityContext or the pod's,
# or "" when neither says
def user($pod):
	(.securityContext.runAsUser // $pod.spec.securityContext.runAsUser) as $u
	| (.securityContext.runAsGroup // $pod.spec.securityContext.runAsGroup // $u) as $g
	| if ($u | type) == "number" and ($g | type) == "number" then "\($u):\($g)" else "" end;
# a DNS-1123 label, as the API server wants container names
def dns_label: type == "string" and length <= 63 and test("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
def plan:
	. as $pod
	| [.spec.containers[]?] as $cs
	| [(.spec.initContainers // [])[]?, $cs[] | .name | select(dns_label | not) | tojson] as $bad
	| if $bad != [] then error("invalid container name \($bad[0]): not a DNS label") else . end
	| ["n_containers=\($cs | length)",
	   "restart_policy=\(.spec.restartPolicy // "Always" | word)",
	   "grace=\(.spec.terminationGracePeriodSeconds // 30 | tostring | word)",
	   ($cs | to_entries[] | "c_name_\(.key + 1)=\(.value.name | word)",
		"c_argv_\(.key + 1)=\(.value | argv | word)",
		"c_user_\(.key + 1)=\(.value | user($pod) | word)",
		"c_stdin_\(.key + 1)=\(.value | if .stdin != true then "" elif .stdinOnce == true then "once" else "open" end | word)")]
	| join("; ");

# what pod_plan reads: the plan, then the time it is made (RFC 3339, whole
# seconds: a container started now takes it, and no date runs), a line each;
# or one line, "!" and why there is no plan
def made_plan: try (plan, (now | todate)) catch "!\(.)";
