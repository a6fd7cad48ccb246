#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: install what is missing, build the test kernel (cached),
# build ndk against it, boot QEMU, run the KUnit suites over Soft-RoCE and
# judge the console log. Ends with "N passed, N failed[, N skipped]".
#
# Environment: NDK_KERNEL (6.1, 6.12 or 7.3), NDK_QEMU_ACCEL (tcg),
# NDK_CHECK_TIMEOUT (seconds, 1500, more for a long fuzz),
# NDK_CHECK_PROVOKE=warn|leak|sleep|open makes the test module provoke that
# splat, to prove the detection turns the run red (`make check-selftest`),
# NDK_CHECK_TRANSPORTS=rxe,siw (the default) picks the soft devices,
# NDK_CHECK_FILTER=glob runs only the matching suites (kunit.filter_glob;
# not 6.1, whose KUnit does not filter a module's suites): for work on
# one object, never for a verdict. NDK_CHECK_THOROUGH=1 runs every round
# of the cases that repeat a scenario (`make matrix` does), where `make
# check` runs a few (tests/main.c, ndk_test_rounds()). NDK_COVERAGE=1
# (`make coverage`, coverage.sh) boots the coverage kernel instead, with
# ndk built with gcov, in build/coverage/; the guest dumps the counters.
# NDK_FUZZ_SEED=S[,S...] and NDK_FUZZ_OPS=N set the seeds and calls of the
# ndk_fuzz suite (`make fuzz`; tests/fuzz_test.c).
# NDK_SANITIZER=kcsan boots the KCSAN kernel (kernel-kcsan.config) in
# place of the debug kernel's KASAN and kmemleak, output in
# build/check-kcsan/: a data race KCSAN reports in ndk's code fails the
# run, one between other code only is listed (splats.py).
# NDK_SANITIZER=none boots the benchmark kernel (kernel-bench.config), as
# a distribution builds it: no lockdep, KASAN or kmemleak, output in
# build/check-none/; the cases a driver's own lockdep report would fail
# on a debug kernel run there (deviations.rst).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=debug outdir=$NDK_TOP/build/check
case ${NDK_SANITIZER:-} in
'') ;;
kcsan) flavour=kcsan outdir=$NDK_TOP/build/check-kcsan ;;
none) flavour=bench outdir=$NDK_TOP/build/check-none ;;
*) die "NDK_SANITIZER=$NDK_SANITIZER: only kcsan and none are known" ;;
esac
if [ "${NDK_COVERAGE:-0}" = 1 ]; then
	flavour=coverage outdir=$NDK_TOP/build/coverage
fi
mkdir -p "$outdir"

ktree=$(build_for_vm "$outdir" "$flavour")

# make coverage counts ndk's tracepoints through perf too (init.sh).
extra=()
if [ "${NDK_COVERAGE:-0}" = 1 ]; then
	gcc -static -O2 -Wall -o "$outdir/tpcount" "$NDK_VM_DIR/tpcount.c"
	extra+=("$outdir/tpcount")
fi
NDK_INITRAMFS_ELF="$(command -v kmod) $(command -v nvme)" \
	"$NDK_VM_DIR/mkinitramfs.sh" "$ktree" "$outdir/initramfs.cpio.gz" \
	"$NDK_VM_DIR/init.sh" "${extra[@]}" "$NDK_TOP/ndk/ndk.ko" "$NDK_TOP/tests/ndk_kunit.ko" \
	"$NDK_TOP/tests/rping/ndk_rping.ko" \
	"$NDK_TOP/tests/unload/ndk_unload.ko" "$NDK_TOP/wdk/ndk_wdk.ko" \
	"$NDK_TOP/samples/wdk_rdma/wdk_rdma.ko" \
	"$NDK_TOP/samples/ndk_nvmeof/ndk_nvmeof.ko" \
	"$NDK_TOP/tests/selftest/ndk_selftest.ko"

append="console=ttyS0 panic=-1 kasan.fault=report"
[ -n "${NDK_CHECK_PROVOKE:-}" ] && append+=" ndk_check.provoke=$NDK_CHECK_PROVOKE"
[ -n "${NDK_CHECK_TRANSPORTS:-}" ] &&
	append+=" ndk_check.transports=$NDK_CHECK_TRANSPORTS"
[ -n "${NDK_CHECK_FILTER:-}" ] && append+=" kunit.filter_glob=$NDK_CHECK_FILTER"
[ "${NDK_CHECK_THOROUGH:-0}" = 1 ] && append+=" ndk_check.thorough=1"
[ -n "${NDK_FUZZ_SEED:-}" ] && append+=" ndk_check.fuzz_seeds=$NDK_FUZZ_SEED"
[ -n "${NDK_FUZZ_OPS:-}" ] && append+=" ndk_check.fuzz_ops=$NDK_FUZZ_OPS"
[ "${NDK_COVERAGE:-0}" = 1 ] && append+=" ndk_check.coverage=1"

log "booting the test VM (${NDK_QEMU_ACCEL:-tcg})"
# The results as the guest prints them (follow.py); judge.py decides.
rm -f "$outdir/console.log" "$outdir/vm.done"
python3 "$NDK_VM_DIR/follow.py" "$outdir/console.log" "$outdir/vm.done" &
follower=$!
rc=0
# A long fuzz takes its time: 10 ms per call and seed, more than the
# three fuzzers take together over both transports on a debug kernel.
limit=1500
if [ -n "${NDK_FUZZ_OPS:-}" ]; then
	seeds=$(tr ',' '\n' <<<"${NDK_FUZZ_SEED:-1,2,3}" | wc -l)
	limit=$((limit + seeds * NDK_FUZZ_OPS / 100))
fi
boot_vm "$ktree" "$outdir" "$append" "${NDK_CHECK_TIMEOUT:-$limit}" \
	"$test_vm_mem" || rc=$?
touch "$outdir/vm.done"
wait "$follower" || true
[ "$rc" = 124 ] && log "the VM timed out"

exec python3 "$NDK_VM_DIR/judge.py" --ktree "$ktree" --qemu-rc "$rc" \
	"$outdir/console.log"
