# SPDX-License-Identifier: Apache-2.0
# plan.jq: what the built-in provider needs of a pod to start its containers, as
# one line of shell assignments for eval, so that no jq runs when it does:
# pods.jq (one jq for the node) writes it into the pod's directory with the pod
# (POD_DIR/plan), and the provider falls back to running it itself (jq -L DIR
# 'include "plan"; plan' pod.json) when the file is not there.  The assignments:
# n_containers; for container I (1..n) c_name_I and c_argv_I, its argv as the
# kubelet builds it (env as NAME=VALUE, then command and args, with $(VAR)
# references expanded from the env before it, $$ being a '$'), shell-quoted for
# eval, or "no-command" when there is nothing to run; restart_policy and grace
# (the pod's terminationGracePeriodSeconds).  A newline or a tab in a value is
# written as "$NL" or "$TAB" outside the quotes: the provider sets both.

def expand($env):
	def go:
		index([36]) as $i
		| if $i == null then implode
		  else (.[:$i] | implode) + (.[$i + 1:] as $r
			| if $r[0] == 36 then "$" + ($r[1:] | go)
			  elif $r[0] == 40 and ($r | index([41])) != null then
				($r | index([41])) as $j | ($r[1:$j] | implode) as $n
				| (if $env | has($n) then $env[$n] else "$(" + $n + ")" end)
				  + ($r[$j + 1:] | go)
			  else "$" + ($r | go) end)
		  end;
	explode | go;
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
def plan:
	[.spec.containers[]?] as $cs
	| ["n_containers=\($cs | length)",
	   "restart_policy=\(.spec.restartPolicy // "Always" | word)",
	   "grace=\(.spec.terminationGracePeriodSeconds // 30 | tostring | word)",
	   ($cs | to_entries[] | "c_name_\(.key + 1)=\(.value.name | word)",
		"c_argv_\(.key + 1)=\(.value | argv | word)")]
	| join("; ");
