# SPDX-License-Identifier: GPL-2.0
#
# ndk: NDKPI provider for Linux RDMA.
#   make                 build ndk/ndk.ko (and the KUnit module if KDIR has KUnit)
#   make KDIR=<tree>     build against another kernel tree or headers
#   make check           build the test kernel, run every suite in QEMU
#   make check-selftest  prove that a kernel splat turns `make check` red
#   make demo            boot a VM and run the sample consumer samples/ndk_demo
#   make install         install modules and public headers

KDIR ?= /lib/modules/$(shell uname -r)/build
PREFIX ?= /usr/local
INSTALL_HDR_DIR ?= $(DESTDIR)$(PREFIX)/include

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

modules_install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules_install

install: modules_install headers_install tools_install

headers_install:
	install -d $(INSTALL_HDR_DIR)/ndk
	install -m 0644 include/ndk/*.h $(INSTALL_HDR_DIR)/ndk/

tools_install:
	install -D -m 0755 tools/ndkstat $(DESTDIR)$(PREFIX)/sbin/ndkstat

check:
	bash tools/vm/check.sh

check-selftest:
	bash tools/vm/check-selftest.sh

demo:
	bash tools/vm/demo.sh

# Works without a kernel tree too (the host's may not exist).
clean:
	if [ -d $(KDIR) ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	find ndk tests samples \( -name '*.o' -o -name '*.ko' -o -name '*.mod' \
		-o -name '*.mod.c' -o -name '.*.cmd' -o -name modules.order \) \
		-delete
	rm -rf build Module.symvers modules.order .tmp_versions

.PHONY: all modules modules_install install headers_install tools_install check \
	check-selftest demo clean
