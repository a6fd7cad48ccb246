#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make matrix`: every test target on every kernel series and Debian image,
# one after the other, and one table at the end. .ci/run covers a part of
# this on every submission; the matrix is the rest, run before an issue
# that changes ndk/, tests/ or tools/vm/ is resolved.
#
# Each run's output is in build/matrix/<target>-<series>[-<image>].log;
# the table, one line per run (the commit it ran on, its counts, or its
# exit status where the target prints none, and its minutes), in
# build/matrix/summary.txt.
# NDK_MATRIX_ONLY=<extended regex> runs only the rows whose name
# ("check 6.12", "check 6.12 kcsan", "distro-check 7.3 debian13",
# "selftest-loop 6.1 siw")
# matches.  The table keeps the rows of earlier runs in the same tree
# (build/matrix/rows), each with its commit, so that a matrix longer than
# a sitting can be run in parts; a row run again replaces its line.  The
# exit status is non-zero if any run of this invocation failed.
set -uo pipefail
. "$(dirname "$0")/vm/lib.sh"

cd "$NDK_TOP" || exit 1
out=build/matrix
mkdir -p "$out"
summary=$out/summary.txt
rowfile=$out/rows
only=${NDK_MATRIX_ONLY:-}
status=0
# The commit the rows of this invocation run on, "+" if the tree differs.
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo none)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] ||
	commit+=+
touch "$rowfile"
# A row's count, as its target prints it: the test targets', the gate's,
# the loop's runs, the stress run's operations.
counts='^[0-9]+ passed, [0-9]+ failed|^gate: [0-9]+ bounds broken'
counts+='|^selftest-loop: [0-9]+ of [0-9]+ runs passed'
counts+='|^stress: [0-9]+ operations'

# Run `make $1` on series $2 with the environment "${@:3}"; an image or a
# transport in it names the row's variant.
run() {
	local target=$1 series=$2 name log start rc line v variant
	shift 2
	name="$target $series"
	for v in "$@"; do
		case $v in
		NDK_DISTRO=* | NDK_TRANSPORT=* | NDK_SANITIZER=*) name+=" ${v#*=}" ;;
		esac
	done
	if [ -n "$only" ] && ! grep -Eq "$only" <<<"$name"; then
		return
	fi
	log=$out/${name// /-}.log
	log "matrix: $name"
	start=$(date +%s)
	rc=0
	env NDK_KERNEL="$series" "$@" make "$target" >"$log" 2>&1 || rc=$?
	line=$(grep -E "$counts" "$log" | tail -n 1)
	if [ -z "$line" ] || [ "$rc" != 0 ]; then
		line+="${line:+; }exit $rc"
	fi
	[ "$rc" = 0 ] || status=1
	variant=${name#"$target $series"}
	record "$name" "$(printf '%-15s %-6s %-9s %-13s %6s  %s' "$target" \
		"$series" "${variant# }" "$commit" \
		"$(awk -v s="$(($(date +%s) - start))" 'BEGIN { printf "%.1f", s / 60 }')" \
		"$line")"
	log "matrix: $name: $line"
	table >"$summary"
}

# Row $1's line of the table becomes $2, in its place, or last if new.
record() {
	awk -F '\t' -v name="$1" -v row="$2" '
		$1 == name { print name "\t" row; done = 1; next }
		{ print }
		END { if (!done) print name "\t" row }' "$rowfile" >"$rowfile.new" &&
		mv "$rowfile.new" "$rowfile"
}

# The table of every row run in this tree: a matrix cut short has one.
table() {
	printf '%-15s %-6s %-9s %-13s %6s  %s\n' target series variant commit \
		min result
	cut -f 2- "$rowfile"
}

run docs-check 6.1
run deb 6.1
for k in $NDK_KERNELS; do
	run lint "$k"
	run check "$k" NDK_CHECK_THOROUGH=1
	run check "$k" NDK_SANITIZER=kcsan
	run check "$k" NDK_SANITIZER=none
	run check-cross "$k" NDK_CHECK_THOROUGH=1
	run check-selftest "$k"
	run selftest-loop "$k" NDK_TRANSPORT=rxe
	run selftest-loop "$k" NDK_TRANSPORT=siw
	run stress "$k"
	run bench-gate "$k"
	run bench "$k"
	run demo "$k"
done
# Every Debian image of each series (lib.sh's distro_select).
for img in debian12:6.1 debian12:6.12 debian13:6.12 debian13:7.3; do
	run dkms-check "${img#*:}" NDK_DISTRO="${img%:*}"
	run distro-check "${img#*:}" NDK_DISTRO="${img%:*}"
done

table >"$summary"
cat "$summary"
exit "$status"
