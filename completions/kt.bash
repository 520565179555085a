# SPDX-License-Identifier: Apache-2.0
# bash completion for kubelet-tools: options come from each tool's --help

_kt_contexts()
{
	local cfg=${KUBECONFIG:-$HOME/.kube/config}
	local IFS=:
	for f in $cfg; do
		[ -r "$f" ] && sed -n 's/^[[:space:]]*-\{0,1\}[[:space:]]*name:[[:space:]]*//p' "$f"
	done 2>/dev/null
}

_kt_tool()
{
	local cur prev words
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	--context)
		mapfile -t COMPREPLY < <(compgen -W "$(_kt_contexts)" -- "$cur")
		return
		;;
	-o|--output)
		case ${COMP_WORDS[0]##*/} in
		pod-status) words="status patch pod" ;;
		kube-request) words="json yaml" ;;
		*) words="patch node both json yaml" ;;
		esac
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
		;;
	--type)
		mapfile -t COMPREPLY < <(compgen -W "liveness readiness startup strategic merge json" -- "$cur")
		return
		;;
	esac
	_longopt "$@"
}

complete -F _kt_tool strategic-patch node-patch3way node-ping podworker-step probe-run \
	pod-status kube-request kt-agent node-history
