#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# DKMS POST_BUILD, run in the build directory: keep Module.symvers in $1,
# the per-kernel directory that holds the built module.
set -e
install -m 0644 Module.symvers "$1/Module.symvers"
