# SPDX-License-Identifier: GPL-2.0
#
# ndk: NDKPI provider for Linux RDMA.
#   make                 build ndk/ndk.ko (and the KUnit module if KDIR has KUnit)
#   make KDIR=<tree>     build against another kernel tree or headers
#   make check           build the test kernel, run every suite in QEMU
#   make check-selftest  prove that a kernel splat turns `make check` red
#   make install         install modules and public headers

KDIR ?= /lib/modules/$(shell uname -r)/build
PREFIX ?= /usr/local
INSTALL_HDR_DIR ?= $(DESTDIR)$(PREFIX)/include

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

modules_install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules_install

install: modules_install headers_install

headers_install:
	install -d $(INSTALL_HDR_DIR)/ndk
	install -m 0644 include/ndk/*.h $(INSTALL_HDR_DIR)/ndk/

check:
	bash tools/vm/check.sh

check-selftest:
	bash tools/vm/check-selftest.sh

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf build

.PHONY: all modules modules_install install headers_install check \
	check-selftest clean
