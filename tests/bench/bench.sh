#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: build (or reuse) the non-debug bench kernel, build ndk and
# tests/bench/ndkperf.ko against it, boot QEMU once with Soft-RoCE, run each
# workload over NDK and over raw verbs interleaved for several rounds,
# then print the table and write build/bench/results.csv and the chart.
#
# NDK_BENCH_CLOCK=icount (the default) counts guest instructions: one
# vCPU under -icount shift=0, whose clock advances one nanosecond per
# instruction, the guest told its TSC runs at 1 GHz, and nothing of the
# host's randomness or time in the guest, so a figure is the same on every
# run whatever the host does. NDK_BENCH_CLOCK=wall is wall-clock TCG with
# NDK_VM_CPUS vCPUs, for what needs two CPUs: send_bw_2cpu, and perftest,
# whose user-space busy polling needs a CPU of its own.
set -euo pipefail
. "$(dirname "$0")/../../tools/vm/lib.sh"

clock=${NDK_BENCH_CLOCK:-icount}
# NDK_BENCH_GATE=1: the CI gate, the per-call workloads and the
# notification ping-pong for two rounds, and fail when a bound breaks.
gate=${NDK_BENCH_GATE:-}
outdir=${NDK_BENCH_OUT:-$NDK_TOP/build/bench${gate:+-gate}}
mkdir -p "$outdir"
# NDK_BENCH_ONLY: an extended regex of the workloads to run (all by default),
# matched from the start of a spec line below: 'conn_scale .*=4096' runs
# one size.
only=${NDK_BENCH_ONLY:-[a-z0-9_]+}
# NDK_BENCH_MODE: ndk or raw runs that mode alone (both by default).
mode=${NDK_BENCH_MODE:-both}
case $mode in
ndk | raw | both) ;;
*) die "NDK_BENCH_MODE=$mode: ndk, raw or both" ;;
esac
# NDK_BENCH_PROFILE=1: count the instructions of every kernel function
# as well, with tbprof.c in QEMU; tests/bench/profile.py reads them
# (performance.rst, "Profiles").
profile=${NDK_BENCH_PROFILE:-}
[ -z "$profile" ] || [ "$clock" = icount ] || die "a profile counts instructions"
if [ -n "$gate" ]; then
	[ "$clock" = icount ] || die "the gate counts instructions"
	only='send_bw|write_bw|poll_empty|notify_lat|objects|conn'
fi
case $clock in
icount)
	# Instruction counts repeat exactly; a few rounds show that they do.
	rounds=${NDK_BENCH_ROUNDS:-${gate:+2}}
	rounds=${rounds:-3}
	# These need a second CPU: they belong to the wall-clock table.
	two_cpus=
	NDK_VM_CPUS=1
	NDK_QEMU_CPU=max,rdrand=off,rdseed=off
	export NDK_QEMU_CPU
	;;
wall)
	rounds=${NDK_BENCH_ROUNDS:-15}
	two_cpus=y
	;;
*) die "NDK_BENCH_CLOCK=$clock: icount or wall" ;;
esac

"$NDK_VM_DIR/install-deps.sh"
install_missing perftest gnuplot-nox
ktree=$(build_for_vm "$outdir" bench)
plugin=()
if [ -n "$profile" ]; then
	gcc -O2 -Wall -Werror -shared -fPIC -o "$outdir/tbprof.so" \
		"$NDK_TOP/tests/bench/tbprof.c"
	plugin=(-plugin "$outdir/tbprof.so,arg=out=$outdir/profile.raw")
fi

# Sized for wall-clock TCG on a shared machine: a round takes about half a
# minute; many short rounds give the medians more pairs than a few long
# ones. Counted in instructions, a round takes a few seconds. nvmeof is
# no ndkperf workload (bench-init.sh): its iterations are the I/Os per
# figure; its size and depths, 4 KiB at 1 and at 32, are fixed by the
# two hosts' programs.
specs='
send_lat 8 4000 16
write_lat 8 4000 16
send_bw 64 10000 32
send_bw 4096 4000 32
send_bw 65536 400 16
send_bw 262144 100 8
write_bw 64 10000 32
read_bw 65536 400 16
reg_mr 65536 500 16
conn 8 50 16
poll_empty 8 50000 16
notify_lat 8 2000 16 mode=all
send_bw_2cpu 64 4000 32
conn_scale 8 20 2 conns=64
conn_scale 8 2 2 conns=1024
conn_scale 8 2 2 conns=4096
objects 8 200 16
nvmeof 4096 2000 32
'
perftest='
send_lat ib_send_lat -s 8 -n 2000
send_bw ib_send_bw -s 64 -n 4000
write_bw ib_write_bw -s 64 -n 4000
write_lat ib_write_lat -s 8 -n 2000
'
specs=$(grep -E "^($only)( |$)" <<<"$specs" || true)
# The gate's bounds are on 64 B messages.
[ -z "$gate" ] || specs=$(grep -Ev '^send_bw (4096|65536|262144) ' <<<"$specs")
perftest=$(grep -E "^($only)( |$)" <<<"$perftest" || true)
if [ -z "$two_cpus" ]; then
	specs=$(grep -v '^send_bw_2cpu ' <<<"$specs" || true)
	perftest=
fi
cat >"$outdir/bench.conf" <<CONF
NIC=$two_cpus
MODE=$mode
PROFILE=$profile
ROUNDS=$rounds
SPECS='
$specs
'
PERFTEST='
$perftest
'
CONF

elf="/usr/bin/ib_send_lat /usr/bin/ib_send_bw /usr/bin/ib_write_bw /usr/bin/ib_write_lat"
extra=()
# Only a run with nvmeof packs what it needs, so that the others boot
# the same initramfs as before it existed.
if grep -q '^nvmeof ' <<<"$specs"; then
	gcc -static -O2 -Wall -Werror -o "$outdir/nvmeio" \
		"$NDK_TOP/tests/bench/nvmeio.c"
	elf+=" $(command -v nvme)"
	extra=("$NDK_TOP/samples/ndk_nvmeof/ndk_nvmeof.ko" "$outdir/nvmeio")
fi
NDK_INITRAMFS_ELF=$elf \
	"$NDK_VM_DIR/mkinitramfs.sh" "$ktree" "$outdir/initramfs.cpio.gz" \
	"$NDK_TOP/tests/bench/bench-init.sh" "$NDK_TOP/ndk/ndk.ko" \
	"$NDK_TOP/tests/bench/ndkperf.ko" "$outdir/bench.conf" "${extra[@]}"

# The host's TSC frequency in kHz, from its boot log or else /proc/cpuinfo.
host_tsc_khz() {
	local mhz
	mhz=$(dmesg 2>/dev/null | sed -n \
		-e 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' \
		-e 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
	[ -n "$mhz" ] ||
		mhz=$(awk -F': *' '/^cpu MHz/ { print $2; exit }' /proc/cpuinfo)
	[ -n "$mhz" ] && awk -v m="$mhz" 'BEGIN { printf "%d", m * 1000 }'
}

# Under TCG the clocksource watchdog finds the TSC unstable against
# jiffies and falls back to 4 ms ticks; tsc=reliable keeps ns timing.
# On a loaded host the guest's TSC calibration against the emulated PIT
# fails as well ("Unable to calibrate against PIT"), which leaves the
# jiffies clocksource; TCG's TSC is the host's, so give its frequency.
append="console=ttyS0 panic=-1 quiet loglevel=7 tsc=reliable"
# x86 kernels from 6.13 on have lazy and full preemption, not voluntary.
# Under lazy preemption a thread that polls a CQ gives the CPU to the
# driver's work items (rxe's) only at the next tick, cond_resched() or
# not: a one-CPU round trip would count ticks, for NDK and raw alike.
# Full preemption hands the CPU over at the wakeup, as voluntary
# preemption's cond_resched() does on 6.1 and 6.12.
if grep -qx CONFIG_PREEMPT_LAZY=y "$ktree/.config"; then
	append+=" preempt=full"
fi
# What bench-init.sh prints goes to records.log through a serial port
# that the kernel's console does not share.
records=(-chardev "file,id=records,path=$outdir/records.log"
	-device "isa-serial,chardev=records,index=1")
log "booting the bench VM (${NDK_QEMU_ACCEL:-tcg}, clock $clock), $rounds rounds"
start=$(date +%s)
if [ "$clock" = icount ]; then
	[ "${NDK_QEMU_ACCEL:-tcg}" = tcg ] || die "icount needs TCG"
	# One instruction per ns: a TSC of 1 GHz counts instructions. The
	# RTC starts at a fixed time and follows the instruction count. No
	# NIC: its host-side backend would interrupt the guest at host
	# times, which no instruction count repeats.
	run_vm "$outdir/console.log" "$ktree" "$outdir/initramfs.cpio.gz" \
		"$append tsc_early_khz=1000000" "${NDK_BENCH_TIMEOUT:-1020}" 2G \
		-nic none -icount shift=0,sleep=off \
		-rtc base=2026-01-01T00:00:00,clock=vm "${records[@]}" \
		"${plugin[@]}" || true
else
	if [ "${NDK_QEMU_ACCEL:-tcg}" = tcg ] && khz=$(host_tsc_khz); then
		append+=" tsc_early_khz=$khz"
	fi
	boot_vm "$ktree" "$outdir" "$append" "${NDK_BENCH_TIMEOUT:-1020}" 2G \
		"${records[@]}" || true
fi
grep -q 'clocksource: Switched to clocksource tsc' "$outdir/console.log" ||
	log "warning: the VM did not time with the TSC; ktime steps are coarse"
log "VM ran $(($(date +%s) - start)) s"
# A VM that ran out of time still leaves the rounds it finished.
grep -q 'NDK-BENCH: done' "$outdir/records.log" ||
	log "the bench did not finish; see $outdir/records.log and console.log"
rc=0
python3 "$NDK_TOP/tests/bench/report.py" --clock "$clock" ${gate:+--gate} \
	"$outdir/console.log" "$outdir/records.log" "$outdir" || rc=$?
case $rc in
0) ;;
3) die "bench: a bound the gate enforces is broken" ;;
*) die "bench: the report failed (status $rc)" ;;
esac
grep -q 'NDK-BENCH: done' "$outdir/records.log" ||
	die "the bench did not finish; see $outdir/records.log and console.log"
if [ "$clock" = wall ]; then
	python3 -B "$NDK_VM_DIR/splats.py" cpus "$outdir/console.log" ||
		die "the two-CPU rows mean nothing"
fi
