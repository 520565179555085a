# SPDX-License-Identifier: Apache-2.0
# bash completion for kubelet-tools.  Long options come from each tool's --help,
# so they are never out of date; what an option or operand takes is in the two
# tables below, one line per tool and option.  A new tool: add its lines to the
# tables (if it takes fixed words) and its name to the complete line at the end.
# Needs nothing but bash: the bash-completion package is used when it is there.

# _kt_values TOOL OPTION: the words the long OPTION of TOOL takes, when it takes
# one of a fixed set (each tool its own: node-ping --output takes json only)
_kt_values()
{
	case $1:$2 in
	strategic-patch:--kind) echo Node Pod Lease ConfigMap Service Deployment ObjectMeta ;;
	node-patch3way:--output) echo patch node both ;;
	# the condition types node-problem-detector's default monitors add
	node-patch3way:--remove-condition) echo KernelDeadlock ReadonlyFilesystem \
		FrequentKubeletRestart FrequentDockerRestart FrequentContainerdRestart ;;
	node-ping:--output) echo json ;;
	pod-status:--output) echo status patch pod brief ;;
	kube-request:--output) echo json yaml ;;
	node-history:--output) echo text json ;;
	node-doctor:--output) echo text json ;;
	kube-wait:--output) echo text json ;;
	# the five forms, condition= with the types CI waits for most
	kube-wait:--for) echo condition=Ready condition=Available condition=Complete \
		condition=Failed condition=Progressing jsonpath= create delete rollout ;;
	kubelet-serve:--authorization-mode | kt-agent:--authorization-mode) echo AlwaysAllow Webhook ;;
	probe-run:--probe) echo liveness readiness startup ;;
	kube-request:--type) echo strategic merge json ;;
	kube-request:--store-file) echo object.json pod.json ;;
	*:--v) echo 0 1 2 3 4 5 6 7 8 9 ;;
	*) return 1 ;;
	esac
}

# _kt_operands TOOL N: the words the Nth operand of TOOL takes, when a fixed set
_kt_operands()
{
	case $1:$2 in
	strategic-patch:1) echo diff diff3 apply ;;
	node-history:1) echo record log ;;
	kube-request:1) echo GET POST PUT PATCH DELETE HEAD ;;
	*) return 1 ;;
	esac
}

# the option lines of a tool's --help (not the options its descriptions
# mention), one "SHORT LONG KIND" a line: "-o --output= json", "- --once -";
# LONG ends in '=' when it takes a value, KIND is what is between <> after it
_kt_options()
{
	"$1" --help 2>/dev/null | sed -n '
		s/^  \{1,\}\(-[[:alnum:]]\), \(--[[:alnum:]-]*=\{0,1\}\)\(.*\)$/\1 \2 \3/
		t found
		s/^  \{1,\}\(--[[:alnum:]-]*=\{0,1\}\)\(.*\)$/- \1 \2/
		t found
		d
		:found
		s/^\([^ ]* [^ ]*=\) <\([a-z]*\)>.*/\1 \2/
		s/^\([^ ]* [^ ]*=\) \([a-z]*\).*/\1 \2/
		s/^\([^ ]* [^ ]*[^=]\) .*/\1 -/
		p'
}

_kt_longopts()
{
	_kt_options "$1" | cut -d ' ' -f 2
}

# _kt_option TOOL WORD: "LONG KIND" of the option WORD names (short or long),
# when it takes a value
_kt_option()
{
	# awk reads to the end: the tool is never cut off mid --help (SIGPIPE)
	_kt_options "$1" | awk -v w="$2" '!done && ($1 == w || $2 == w "=") && $2 ~ /=$/ {
		sub(/=$/, "", $2); print $2, $3; done = 1 }'
}

# the contexts of the kubeconfig files in use: the name of each item of the
# top-level contexts list, and nothing else
_kt_contexts()
{
	local cfg=${KUBECONFIG:-$HOME/.kube/config} f
	local IFS=:
	for f in $cfg; do
		[ -r "$f" ] || continue
		awk -v q="'" '
		/^[^ #-]/ { in_ctx = ($0 ~ /^contexts:/); item = -1; dash = -1; next }
		!in_ctx { next }
		{
			line = $0
			if (match(line, /^ *- /) && (dash < 0 || RLENGTH == dash)) {
				dash = item = RLENGTH
				line = substr(line, 1, RLENGTH - 2) "  " substr(line, RLENGTH + 1)
			}
			if (item < 0 || !match(line, /^ *name:[ \t]*/)) next
			indent = line
			sub(/[^ ].*/, "", indent)
			if (length(indent) != item) next
			v = substr(line, RLENGTH + 1)
			sub(/[ \t]+#.*/, "", v)
			sub(/[ \t]+$/, "", v)
			gsub("^[\"" q "]|[\"" q "]$", "", v)
			print v
		}' "$f"
	done 2>/dev/null
}

# COMPREPLY from compgen's lines; a loop, not mapfile, which zsh lacks (it runs
# these functions too, through bashcompinit)
_kt_compgen()
{
	local w
	COMPREPLY=()
	while IFS= read -r w; do
		COMPREPLY+=("$w")
	done < <(compgen "$@")
}

_kt_reply() # WORDS CUR
{
	_kt_compgen -W "$1" -- "$2"
}

_kt_files() # CUR [-d]
{
	_kt_compgen "${2:--f}" -- "$1"
	compopt -o filenames 2>/dev/null
}

_kt_tool()
{
	# zsh: arrays from 0 and bash's word splitting, as in bash
	[ -n "${ZSH_VERSION-}" ] && emulate -L ksh
	local tool=${COMP_WORDS[0]##*/} cur word="" spec long kind i n words
	cur=${COMP_WORDS[COMP_CWORD]}
	# bash splits --opt=value at '=': the words are --opt, = and value
	if [ "$cur" = = ] && [ "$COMP_CWORD" -ge 1 ]; then
		word=${COMP_WORDS[COMP_CWORD-1]} cur=""
	elif [ "$COMP_CWORD" -ge 2 ] && [ "${COMP_WORDS[COMP_CWORD-1]}" = = ]; then
		word=${COMP_WORDS[COMP_CWORD-2]}
	elif [[ $cur == --*=* ]]; then
		word=${cur%%=*} cur=${cur#*=}
	elif [ "$COMP_CWORD" -ge 1 ] && [[ ${COMP_WORDS[COMP_CWORD-1]} == -?* ]]; then
		word=${COMP_WORDS[COMP_CWORD-1]}
	fi
	spec=""
	[ -n "$word" ] && spec=$(_kt_option "$tool" "$word")
	if [ -n "$spec" ]; then
		long=${spec% *} kind=${spec#* }
		if [ "$long" = --context ]; then
			_kt_reply "$(_kt_contexts)" "$cur"
		elif words=$(_kt_values "$tool" "$long"); then
			_kt_reply "$words" "$cur"
		elif [ "$kind" = file ]; then
			_kt_files "$cur"
		elif [ "$kind" = dir ]; then
			_kt_files "$cur" -d
		else
			COMPREPLY=()
		fi
		return
	fi
	if [[ $cur == -* ]]; then
		_kt_reply "$(_kt_longopts "$tool")" "$cur"
		[[ ${COMPREPLY[0]-} == *= ]] && compopt -o nospace 2>/dev/null
		return
	fi
	# which operand this word is: count the words that are not options or values
	n=1
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		=) ((i++)) ;;
		--*=*) ;;
		-?*)
			[ "${COMP_WORDS[i+1]-}" != = ] && [ -n "$(_kt_option "$tool" "${COMP_WORDS[i]}")" ] &&
				((i++))
			;;
		*) ((n++)) ;;
		esac
	done
	if words=$(_kt_operands "$tool" "$n"); then
		_kt_reply "$words" "$cur"
		return
	fi
	_kt_files "$cur"
}

complete -F _kt_tool strategic-patch node-patch3way node-ping podworker-step probe-run \
	pod-status kube-request kt-agent node-history node-doctor kube-wait kubelet-serve \
	node-bootstrap
