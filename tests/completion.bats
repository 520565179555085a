#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# completion: the bash completion, driven as bash drives it: the function that
# `complete -p TOOL` names, called with COMP_WORDS split as bash splits a line
# (so --opt=value is the three words --opt, = and value)

load helper

setup() {
	cd "$BATS_TEST_TMPDIR"
	touch desired.json desired.yaml notes.txt
	mkdir -p state.d
	cat >kubeconfig <<-'EOF'
	apiVersion: v1
	kind: Config
	clusters:
	- name: cluster-one
	  cluster:
	    server: https://127.0.0.1:1
	users:
	- name: user-one
	  user:
	    exec:
	      command: plugin
	      env:
	      - name: PLUGIN_ENV
	        value: x
	contexts:
	- name: prod
	  context:
	    cluster: cluster-one
	    user: user-one
	- context:
	    cluster: cluster-one
	    extensions:
	    - name: an-extension
	      extension: {}
	    user: user-one
	  name: "staging"
	current-context: prod
	EOF
	export KUBECONFIG=$BATS_TEST_TMPDIR/kubeconfig
}

# complete [--with-bash-completion] WORD...: what TAB offers for the last word,
# one a line, in a bash that loaded only kt.bash (or bash-completion first)
complete() {
	local pre=:
	if [ "$1" = --with-bash-completion ]; then
		[ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
		pre='. /usr/share/bash-completion/bash_completion'
		shift
	fi
	bash --norc --noprofile -c '
		eval "$1"
		shift
		. "$KT_SRCDIR/completions/kt.bash" || exit 1
		spec=$(complete -p "$1") || exit 1
		fn=$(sed -n "s/.* -F \([^ ]*\) .*/\1/p" <<<"$spec")
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		"$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$pre" "$@"
}

@test "completion: every tool is registered, and TAB needs no bash-completion package" {
	for t in $(kt_tools); do
		run -0 --separate-stderr bash --norc --noprofile -c \
			'. "$KT_SRCDIR/completions/kt.bash" && complete -p "$1"' _ "$t"
		[ "$output" = "complete -F _kt_tool $t" ] || fail "$t: $output"
		[ -z "$stderr" ] || fail "$t: $stderr"
		run -0 --separate-stderr complete "$t" --hel
		[ "$output" = --help ] || fail "$t --hel: $output"
		[ -z "$stderr" ] || fail "$t --hel: $stderr"
	done
}

@test "completion: long options come from --help's option lines, values marked by '='" {
	run -0 complete podworker-step --st
	[ "$output" = "$(printf '%s\n' --state= --stream)" ]
	run -0 complete node-ping --status
	[ "$output" = --status-interval= ]
	run -0 complete --with-bash-completion node-ping --status
	[ "$output" = --status-interval= ]
}

@test "completion: the --opt= form completes values as the --opt value form does" {
	run -0 complete node-patch3way --output = ""
	[ "$output" = "$(printf '%s\n' both node patch)" ]
	run -0 complete node-patch3way --output = b
	[ "$output" = both ]
	run -0 complete node-patch3way --output ""
	[ "$output" = "$(printf '%s\n' both node patch)" ]
	run -0 complete node-patch3way -o n
	[ "$output" = node ]
	run -0 complete --with-bash-completion node-patch3way --output = p
	[ "$output" = patch ]
	run -0 complete node-patch3way --current = desired.
	[ "$output" = "$(printf '%s\n' desired.json desired.yaml)" ]
}

@test "completion: each tool offers its own values" {
	run -0 complete node-ping -o ""
	[ "$output" = json ]
	run -0 complete node-ping --output = ""
	[ "$output" = json ]
	run -0 complete kubelet-serve --authorization-mode = A
	[ "$output" = AlwaysAllow ]
	run -0 complete node-doctor -o ""
	[ "$output" = "$(printf '%s\n' json text)" ]
	run -0 complete probe-run --probe = ""
	[ "$output" = "$(printf '%s\n' liveness readiness startup)" ]
	run -0 complete kube-request --type ""
	[ "$output" = "$(printf '%s\n' json merge strategic)" ]
	run -0 complete strategic-patch --kind = P
	[ "$output" = Pod ]
	run -0 complete node-patch3way --remove-condition Kern
	[ "$output" = KernelDeadlock ]
	run -0 complete node-patch3way --field-
	[ "$output" = --field-manager= ]
	run -0 complete node-ping --field-
	[ "$output" = --field-manager= ]
	run -0 complete kube-request --field-
	[ "$output" = --field-manager= ]
	run -0 complete strategic-patch -v ""
	[ "${#lines[@]}" = 10 ]
	[ "${lines[9]}" = 9 ]
}

@test "completion: kube-wait's options and --for forms" {
	run -0 complete kube-wait --for = ""
	[ "$output" = "$(printf '%s\n' condition=Available condition=Complete condition=Failed \
		condition=Progressing condition=Ready create delete jsonpath= rollout)" ]
	run -0 complete kube-wait --for r
	[ "$output" = rollout ]
	run -0 complete kube-wait -o ""
	[ "$output" = "$(printf '%s\n' json text)" ]
	run -0 complete kube-wait --f
	[ "$output" = "$(printf '%s\n' --field-selector= --filename= --for=)" ]
	run -0 complete kube-wait --
	local o
	for o in --any --for= --filename= --selector= --field-selector= --namespace= --timeout= \
		--no-fail-fast --output= --kubeconfig= --context= --server= --token= --request-timeout=; do
		grep -qxF -- "$o" <<<"$output" || fail "kube-wait -- does not offer $o"
	done
}

@test "completion: --context offers the kubeconfig's contexts only" {
	run -0 complete node-ping --context ""
	[ "$output" = "$(printf '%s\n' prod staging)" ]
	run -0 complete kube-request --context = st
	[ "$output" = staging ]
	run -0 complete --with-bash-completion kt-agent --context = ""
	[ "$output" = "$(printf '%s\n' prod staging)" ]
}

@test "completion: strategic-patch's commands and kube-request's methods" {
	run -0 complete strategic-patch d
	[ "$output" = "$(printf '%s\n' diff diff3)" ]
	run -0 complete strategic-patch --kind Node a
	[ "$output" = apply ]
	run -0 complete strategic-patch diff desired.j
	[ "$output" = desired.json ]
	run -0 complete kube-request G
	[ "$output" = GET ]
	run -0 complete kube-request --pretty --type = merge P
	[ "$output" = "$(printf '%s\n' PATCH POST PUT)" ]
	run -0 complete kube-request PATCH /api/v1/nodes/n desired.y
	[ "$output" = desired.yaml ]
}

@test "completion: options that take a file or a directory complete paths" {
	run -0 complete kt-agent --state-dir = state
	[ "$output" = state.d ]
	# podworker-step keeps its state in a directory: -s offers directories only
	run -0 complete podworker-step -s state
	[ "$output" = state.d ]
	run -0 complete podworker-step -s no
	[ -z "$output" ]
}

@test "completion: zsh runs the same functions through bashcompinit" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	[ -f "$KT_BUILDDIR/completions/_kt" ] || skip "no completions/_kt in the build"
	# LeakSanitizer's stop-the-world hangs in the tools zsh runs for completion
	# (a sanitizer build): leaks are checked by every other test, not here
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		run -0 --separate-stderr timeout 120 zsh -f -c '
		fpath=("$KT_BUILDDIR/completions" $fpath)
		autoload -U +X compinit && compinit -u -d "$PWD/zcompdump"
		for t in strategic-patch node-patch3way node-ping podworker-step probe-run \
			kube-request kt-agent; do
			[[ ${_comps[$t]} = _kt ]] || { echo "$t: ${_comps[$t]}"; exit 1; }
		done
		autoload -U +X bashcompinit && bashcompinit
		source "$KT_SRCDIR/completions/kt.bash"
		print -r -- ${_comps[node-ping]}
		COMP_WORDS=(node-ping --output=) COMP_CWORD=1
		compgen -F _kt_tool -- --output=
		COMP_WORDS=(strategic-patch apply --kind "") COMP_CWORD=3
		compgen -F _kt_tool -- ""
		COMP_WORDS=(kube-request --context=) COMP_CWORD=1
		compgen -F _kt_tool -- --context='
	[ "$output" = "$(printf '%s\n' '_bash_complete -F _kt_tool' json \
		Node Pod Lease ConfigMap Service Deployment ObjectMeta prod staging)" ]
	[ -z "$stderr" ]
}
