// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for `NDK_BENCH_PROFILE=1 make bench` (host side, not
 * part of ndkperf.ko): the guest instructions executed per translation
 * block, keyed by the block's first address, written as "address count"
 * lines when QEMU exits. Under -icount these are the same instructions
 * the bench counts, so profile.py can say which functions a figure is
 * made of. User-space blocks are summed under address 1.
 *
 * An inline add counts a block's instructions each time it runs, which
 * adds no guest instruction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tbprof.h"

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* Open addressing: a counter must not move once QEMU's code adds to it. */
#define TB_SLOTS	(4u * 1024 * 1024)
#define KERNEL_START	0xffff800000000000ULL

struct tb_count {
	unsigned long long addr;
	unsigned long long n;
};

static struct tb_count *tbs;
static unsigned int used;
static const char *out_path = "tbprof.out";

static struct tb_count *tb_slot(unsigned long long addr)
{
	unsigned int h = (unsigned int)((addr * 0x9E3779B97F4A7C15ULL) >> 42);

	for (;; h = (h + 1) & (TB_SLOTS - 1)) {
		if (tbs[h].addr == addr)
			return &tbs[h];
		if (!tbs[h].addr) {
			/* Full: lump the rest under one address, 2. */
			if (++used > TB_SLOTS / 2)
				return tb_slot(2);
			tbs[h].addr = addr;
			return &tbs[h];
		}
	}
}

static void tb_translated(unsigned long long id, struct qemu_plugin_tb *tb)
{
	unsigned long long addr = qemu_plugin_tb_vaddr(tb);

	if (addr < KERNEL_START)
		addr = 1;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, TBPROF_INLINE_ADD_U64,
						 &tb_slot(addr)->n,
						 qemu_plugin_tb_n_insns(tb));
}

static void tb_write(unsigned long long id, void *data)
{
	FILE *f = fopen(out_path, "w");
	unsigned int i;

	if (!f) {
		perror(out_path);
		return;
	}
	for (i = 0; i < TB_SLOTS; i++)
		if (tbs[i].n)
			fprintf(f, "%llx %llu\n", tbs[i].addr, tbs[i].n);
	fclose(f);
}

/* Arguments: out=<file>, where the counts go. */
__attribute__((visibility("default")))
int qemu_plugin_install(unsigned long long id, const void *info, int argc,
			char **argv)
{
	int i;

	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
	tbs = calloc(TB_SLOTS, sizeof(*tbs));
	if (!tbs)
		return -1;
	tb_slot(2);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_translated);
	qemu_plugin_register_atexit_cb(id, tb_write, NULL);
	return 0;
}
