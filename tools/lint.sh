#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Code hygiene gate: checkpatch --strict over every tracked C file, the
# documentation check, the doctests of the console judges and of the bench
# report, a W=1 build with sparse against the test kernel and against
# Debian's distribution headers (Debian 12's on the host; those of a
# series only Debian 13 ships in its root, without sparse), the seams
# between ndk/'s files in each build (tools/seams.py), and the WDK layer's
# build-time refusals (tools/wdk-refusals.sh).  Any finding fails; every
# step runs, so one run reports them all.  Logs in build/lint/.
#
# NDK_LINT_KERNELS="6.1 6.12 7.3" lints every series named in one pass:
# checkpatch and the documentation once (with NDK_KERNEL's checkpatch),
# the builds against each series' trees and headers.  Logs of a series'
# builds in build/lint/<series>/ then.
#
# NDK_LINT_TEST_BUILDS=0 leaves out the build against the test kernel:
# `make check` builds the same tree against it with W=1 and fails on a
# warning, so only sparse over tests/ and over that kernel's
# configuration, and the seams of its objects, are lost (the build
# against Debian's headers keeps sparse over ndk/ and the seams on 6.1
# and 6.12). .ci/run, which runs `make check` on every series, sets it.
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

# The test kernel is built here on a fresh machine; it needs what
# `make check` needs, and `make check` then reuses it.
"$NDK_VM_DIR/install-deps.sh"
install_missing perl
[ -z "$NDK_KHDR_PKG" ] || install_missing "$NDK_KHDR_PKG"
cd "$NDK_TOP"
out=build/lint
# A series' builds, run by the pass over NDK_LINT_KERNELS.
builds_only=${NDK_LINT_BUILDS_ONLY:-}
if [ -n "$builds_only" ]; then
	out=build/lint/$NDK_KERNEL
fi
rm -rf "$out"
mkdir -p "$out"
fail=0

# Run checkpatch.pl over files "${@:2}" ignoring message types $1, with
# the extra options of $checkpatch_opts; a batch of files per CPU at a
# time (one file takes about a second). 7.3's ALLOC_WITH_SIZEOF asks for
# kzalloc_obj(), which 6.1 and 6.12 do not have.
checkpatch_opts=()
checkpatch() {
	local ignore=$1,ALLOC_WITH_SIZEOF
	shift
	[ $# = 0 ] && return 0
	printf '%s\0' "$@" |
		xargs -0 -n 8 -P "$(nproc)" "$scripts/checkpatch.pl" --strict \
			--no-tree --terse --show-types "${checkpatch_opts[@]}" \
			--ignore "$ignore" --file >>"$out/checkpatch.log" 2>&1 ||
		fail=1
}

# A build against $3 that ended with status $1, logged in $2: a failure
# or any warning is a finding, quoted with the paths below $4 shortened.
judge_build() {
	if [ "$1" != 0 ]; then
		cat "$2" >&2
		log "build against $3 failed"
		fail=1
	elif grep -E 'warning:|error:' "$2" | sed "s|$4/||" >&2; then
		fail=1
	fi
}

# W=1 build with sparse (C=2: every file, whether rebuilt or not) of a
# fresh copy of the sources in build/lint/$1, against kernel tree $2, so
# objects of different trees never mix and every file is compiled.
build() {
	local dir=$out/$1 kdir=$2 rc=0
	log "W=1 C=2 build against $kdir"
	mkdir -p "$dir"
	tracked | tar --null -T - -cf - | tar -xf - -C "$dir"
	make -j"$(nproc)" -C "$dir" KDIR="$kdir" W=1 C=2 modules \
		>"$dir.log" 2>&1 || rc=$?
	judge_build "$rc" "$dir.log" "$kdir" "$NDK_TOP/$dir"
	# kbuild drops C=2 with a note, not a warning, when its
	# scripts/checker-valid.sh finds sparse unable to parse its headers.
	if grep -q 'specified, but sparse is not available or not up to date' \
		"$dir.log"; then
		nosparse+=("$kdir")
	fi
	# The seams between ndk/'s files, read from the objects just built.
	if [ -e "$dir/ndk/ndk.o" ] &&
	   ! tools/seams.py "$dir/ndk" >"$dir.seams.log" 2>&1; then
		sed "s|$dir/||" "$dir.seams.log" >&2
		fail=1
	fi
}

# W=1 build of a fresh copy of the sources in the Debian root of
# NDK_DISTRO against its headers of release $2, logged in build/lint/$1.log.
# Without sparse: Debian's sparse (0.6.4 in Debian 12 and 13) cannot parse
# the headers of the series only Debian 13 has (7.3).
build_in_root() {
	local dir=/tmp/ndk-lint kdir=/usr/src/linux-headers-$2 rc=0
	log "W=1 build against Debian $NDK_DISTRO_CODENAME's $kdir, in its root"
	rm -rf "$NDK_DISTRO_ROOT$dir"
	mkdir -p "$NDK_DISTRO_ROOT$dir"
	tracked | tar --null -T - -cf - | tar -xf - -C "$NDK_DISTRO_ROOT$dir"
	in_root make -j"$(nproc)" -C "$dir" KDIR="$kdir" W=1 modules \
		>"$out/$1.log" 2>&1 || rc=$?
	judge_build "$rc" "$out/$1.log" "$kdir" "$dir"
	rm -rf "$NDK_DISTRO_ROOT$dir"
}

# NDKPI's names are Windows-style by specification, and the typedefs of
# include/ndk/ are the specification's own. TRACE_EVENT() bodies are laid
# out the way every kernel trace header is, which --strict dislikes.
# The WDK layer (include/ndk/wdk/) and the Windows-style sample written on
# it use the WDK's names and typedefs, whose types checkpatch learns from
# tools/wdk-typedefs; the WDK's macros (min, max, KeRaiseIrql...) are plain
# expressions that name an argument twice, as Windows defines them, and SAL
# annotations and WDK arguments with no Linux meaning (pool priorities,
# wait reasons, lookaside depths) are dropped by design; FORCEINLINE is
# MSVC's storage class and inline keyword in one, two tokens.
sources_checks() {
	log "checkpatch"
	scripts=$(kernel_scripts)
	mapfile -d '' spec < <(tracked 'include/ndk/*.[ch]' ':!include/ndk/wdk/*')
	mapfile -d '' wdk < <(tracked 'include/ndk/wdk/*.[ch]' 'samples/wdk_rdma/*.[ch]')
	mapfile -d '' trace < <(tracked 'ndk/trace.h')
	mapfile -d '' rest < <(tracked '*.[ch]' ':!include/ndk/*' ':!ndk/trace.h' \
		':!samples/wdk_rdma/*')
	checkpatch CAMELCASE,NEW_TYPEDEFS "${spec[@]}"
	checkpatch_opts=(--typedefsfile tools/wdk-typedefs)
	checkpatch CAMELCASE,NEW_TYPEDEFS,MACRO_ARG_REUSE,MACRO_ARG_UNUSED,COMPLEX_MACRO "${wdk[@]}"
	checkpatch_opts=()
	checkpatch CAMELCASE,OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT "${trace[@]}"
	checkpatch CAMELCASE "${rest[@]}"
	if [ -s "$out/checkpatch.log" ]; then
		cat "$out/checkpatch.log" >&2
		fail=1
	fi

	log "docs-check"
	tools/docs-check.sh || fail=1

	# The worked examples of the console judges and of the bench report
	# (a misread console turns a run red or green for the wrong reason,
	# or gives a figure that no run measured).
	log "the judges' examples"
	python3 -B -m doctest tools/vm/splats.py || fail=1
	python3 -B -m doctest tests/bench/report.py || fail=1
}

if [ -z "$builds_only" ]; then
	sources_checks
	if [ -n "${NDK_LINT_KERNELS:-}" ]; then
		for k in $NDK_LINT_KERNELS; do
			log "lint: the builds of $k"
			NDK_KERNEL=$k NDK_LINT_BUILDS_ONLY=1 NDK_LINT_KERNELS= \
				bash "$0" || fail=1
		done
		[ "$fail" = 0 ] || die "lint found problems"
		log "lint clean on $NDK_LINT_KERNELS"
		exit 0
	fi
fi

nosparse=()
# The test kernel only where a build needs it: with NDK_LINT_TEST_BUILDS=0
# a series whose headers Debian 12 ships lints without it, so CI lints
# while that kernel is still being built.
ktree=
if [ "${NDK_LINT_TEST_BUILDS:-1}" != 0 ] || [ -z "$NDK_KHDR_PKG" ]; then
	ktree=$(kernel_tree debug)
fi
if [ -n "$NDK_KHDR_PKG" ]; then
	release=$(distro_release)
	[ -n "$release" ] || die "cannot tell the release of $NDK_KHDR_PKG"
	kdir=/usr/src/linux-headers-$release
	build distro "$kdir"
else
	# Debian 13's headers of the series are built against in its root
	# (distro_root), with its own compiler, as its users build.
	distro_select
	exec 8>"$NDK_DISTRO_ROOT.lock"
	flock 8
	distro_root
	release=$(distro_root_headers)
	build_in_root "distro-$NDK_DISTRO" "$release"
	exec 8>&-
	kdir=$ktree
fi
log "WDK layer refusals"
tools/wdk-refusals.sh "$kdir" || fail=1
[ "${NDK_LINT_TEST_BUILDS:-1}" = 0 ] || build test "$ktree"

# Debian 12's sparse, 0.6.4 (the last release), cannot parse
# __typeof_unqual__, which 7.3's headers use, and Debian 12 has no newer
# one: on 7.3 that is said, not hidden; anywhere else it is a finding.
if [ ${#nosparse[@]} != 0 ]; then
	log "sparse did not run against ${nosparse[*]}: sparse $(sparse --version) cannot parse its headers (its scripts/checker-valid.sh)"
	[ "$NDK_KERNEL" = 7.3 ] || fail=1
fi
[ "$fail" = 0 ] || die "lint found problems"
if [ ${#nosparse[@]} != 0 ]; then
	log "lint clean, without sparse"
else
	log "lint clean"
fi
