# SPDX-License-Identifier: GPL-2.0
#
# ndk: NDKPI provider for Linux RDMA.
#   make                 build ndk/ndk.ko, the WDK layer, the self-test, the
#                        samples and the test modules (the KUnit one if KDIR
#                        has KUnit)
#   make KDIR=<tree>     build against another kernel tree or headers
#   make NDK_ONLY=1      build ndk.ko alone: no KUnit module, no sample
#   make NDK_PACKAGE=1   build what DKMS installs: ndk.ko, the WDK layer, the
#                        self-test and the NVMe over Fabrics host sample
#   make check           build the test kernel, run every suite in QEMU
#                        (NDK_SANITIZER=kcsan: on the data-race detector's
#                        kernel instead of KASAN's; =none: on a kernel
#                        without checkers, as distributions build them)
#   make coverage        make check on a kernel with gcov, ndk built with it:
#                        line and branch coverage of each file of ndk/, HTML
#                        and the uncovered lines under build/coverage/
#   make check-selftest  prove that a kernel splat turns `make check` red
#   make selftest-loop   boot one test VM and load tests/selftest in loopback
#                        NDK_LOOPS times over NDK_TRANSPORT (rxe or siw), each
#                        run judged like make check's; build/selftest-loop/
#   make check-cross     two VMs on a virtual wire: ndk against ndk and against
#                        rdma-core's rping across it, and ndk_nvmeof against
#                        Linux's NVMe over Fabrics target, over rxe and siw
#   make demo            boot a VM and run the sample consumer samples/ndk_demo
#   make bench           boot a non-debug VM once and run tests/bench (NDK
#                        against raw verbs), counting guest instructions
#                        (NDK_BENCH_CLOCK=wall: wall time, two vCPUs, and
#                        perftest too); build/bench/
#   make bench-repeat    make bench twice; the two runs' figures side by side
#   make bench-gate      the CI gate: a short instruction-count bench that
#                        fails when a bound is broken
#   make fuzz            the seeded fuzzers only (suite ndk_fuzz), with
#                        NDK_FUZZ_SEED=S[,S...] and NDK_FUZZ_OPS=N; a failure
#                        names its seed and the shortest prefix that fails
#   make stress          churn objects and connections with tests/stress
#                        in the test VM for NDK_STRESS_SECONDS (600); not
#                        part of `make check`; build/stress/
#   make install         install modules, public headers, Module.symvers and
#                        tools/ndkstat
#   make lint            checkpatch, docs-check, W=1 and sparse builds against
#                        the test kernel and Debian's headers; fails on any finding
#   make docs-check      docutils over Documentation/, the targets, paths and
#                        suite catalogue the docs name, kernel-doc over the sources
#   make dkms-check      ndk-dkms installed, built and purged in a Debian root
#   make distro-check    ndk-dkms installed in a Debian root (NDK_DISTRO), its
#                        modules on Debian's own kernel image in two VMs:
#                        tests/selftest in loopback and across; build/distro-check/
#   make deb             the ndk-dkms Debian package (dh-dkms); build/deb/
#   make matrix          every test target on every series and Debian image,
#                        one after the other; build/matrix/summary.txt

KDIR ?= /lib/modules/$(shell uname -r)/build
PREFIX ?= /usr/local
INSTALL_HDR_DIR ?= $(DESTDIR)$(PREFIX)/include
# Symbol versions belong to one kernel build, hence one directory per
# release; UTS_RELEASE, as Debian's headers have another kernel.release.
KRELEASE = $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
	$(KDIR)/include/generated/utsrelease.h)
INSTALL_SYMVERS_DIR ?= $(DESTDIR)$(PREFIX)/lib/ndk/$(KRELEASE)

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

modules_install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules_install

install: modules_install headers_install symvers_install tools_install

headers_install:
	install -d $(INSTALL_HDR_DIR)/ndk
	install -m 0644 include/ndk/*.h $(INSTALL_HDR_DIR)/ndk/
	install -d $(INSTALL_HDR_DIR)/ndk/wdk
	install -m 0644 include/ndk/wdk/*.h $(INSTALL_HDR_DIR)/ndk/wdk/

# For consumers' KBUILD_EXTRA_SYMBOLS.
symvers_install: modules
	install -d $(INSTALL_SYMVERS_DIR)
	install -m 0644 Module.symvers $(INSTALL_SYMVERS_DIR)/

tools_install:
	install -D -m 0755 tools/ndkstat $(DESTDIR)$(PREFIX)/sbin/ndkstat

check:
	bash tools/vm/check.sh

coverage:
	bash tools/vm/coverage.sh

check-selftest:
	bash tools/vm/check-selftest.sh

selftest-loop:
	bash tools/vm/selftest-loop.sh

check-cross:
	bash tools/vm/cross.sh

demo:
	bash tools/vm/demo.sh

bench:
	bash tests/bench/bench.sh

bench-repeat:
	bash tests/bench/bench-repeat.sh

bench-gate:
	NDK_BENCH_GATE=1 bash tests/bench/bench.sh

stress:
	bash tools/vm/stress.sh

fuzz:
	NDK_CHECK_FILTER=ndk_fuzz bash tools/vm/check.sh

lint:
	bash tools/lint.sh

docs-check:
	bash tools/docs-check.sh

dkms-check:
	bash tools/dkms-check.sh

distro-check:
	bash tools/vm/distro.sh

deb:
	bash tools/deb.sh

matrix:
	bash tools/matrix.sh

# Works without a kernel tree too (the host's may not exist).
clean:
	if [ -d $(KDIR) ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	find ndk wdk tests samples compat \
		\( -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' \
		-o -name '.*.cmd' -o -name modules.order -o -name '*.gcno' \) \
		-delete
	rm -f compat/ndk_compat_config.h
	rm -rf build Module.symvers modules.order .tmp_versions

.PHONY: all modules modules_install install headers_install symvers_install \
	tools_install check coverage check-selftest selftest-loop check-cross \
	demo bench bench-repeat bench-gate stress fuzz lint docs-check dkms-check \
	distro-check deb matrix clean
