// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for `NDK_BENCH_PROFILE=1 make bench` (host side, not
 * part of ndkperf.ko): the guest instructions executed per translation
 * block, keyed by the block's first address, written when QEMU exits.
 * Under -icount these are the same instructions the bench counts, so
 * profile.py can say which functions a figure is made of. User-space
 * blocks are summed under address 1.
 *
 * ndkperf marks the phases of a workload with an instruction that does
 * nothing, xchg of a 16-bit register with itself (perf_phase() in
 * ndkperf.h; no compiler emits it), one register per phase. The plugin
 * keeps a count per phase, and a line reads
 * "address total phase1 phase2 phase3", the phases only once a marker
 * ran; phase 0 is the rest.
 *
 * A block's count is added by a callback, which adds no guest
 * instruction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tbprof.h"

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* Open addressing: a counter must not move once a callback holds it. */
#define TB_SLOTS	(4u * 1024 * 1024)
#define KERNEL_START	0xffff800000000000ULL
#define PHASES		4

/*
 * A block is kept by its address and length: QEMU may translate the same
 * address again into a block of another length (at most TB_MAX_INSNS).
 */
#define TB_MAX_INSNS	512

struct tb_count {
	unsigned long long addr;
	unsigned long long insns;
	unsigned long long n[PHASES];
};

static struct tb_count *tbs;
/* Once the table is half full, blocks are lumped by length, address 2. */
static struct tb_count lumps[TB_MAX_INSNS + 1];
static unsigned int used;
static const char *out_path = "tbprof.out";
static unsigned int phase;
static int phases_seen;

static struct tb_count *tb_slot(unsigned long long addr, size_t insns)
{
	unsigned long long key = addr ^ ((unsigned long long)insns << 48);
	unsigned int h = (unsigned int)((key * 0x9E3779B97F4A7C15ULL) >> 42);

	for (;; h = (h + 1) & (TB_SLOTS - 1)) {
		if (tbs[h].addr == addr && tbs[h].insns == insns)
			return &tbs[h];
		if (!tbs[h].addr)
			break;
	}
	if (++used > TB_SLOTS / 2 || insns > TB_MAX_INSNS) {
		insns = insns > TB_MAX_INSNS ? 0 : insns;
		lumps[insns].addr = 2;
		lumps[insns].insns = insns;
		return &lumps[insns];
	}
	tbs[h].addr = addr;
	tbs[h].insns = insns;
	return &tbs[h];
}

static void tb_run(unsigned int vcpu, void *data)
{
	struct tb_count *c = data;

	c->n[phase] += c->insns;
}

/* The phase a marker sets: its ModRM byte names the register. */
static int marker_phase(const unsigned char *b, size_t len)
{
	static const unsigned char modrm[PHASES] = {
		0xf6,	/* %si: none */
		0xc9,	/* %cx: 1 */
		0xd2,	/* %dx: 2 */
		0xdb,	/* %bx: 3 */
	};
	int i;

	if (len != 3 || b[0] != 0x66 || b[1] != 0x87)
		return -1;
	for (i = 0; i < PHASES; i++)
		if (b[2] == modrm[i])
			return i;
	return -1;
}

static void marker_run(unsigned int vcpu, void *data)
{
	phase = (unsigned int)(unsigned long)data;
	phases_seen = 1;
}

static void tb_translated(unsigned long long id, struct qemu_plugin_tb *tb)
{
	unsigned long long addr = qemu_plugin_tb_vaddr(tb);
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct qemu_plugin_insn *insn;
	int p;

	if (addr < KERNEL_START)
		addr = 1;
	for (i = 0; addr != 1 && i < n; i++) {
		insn = qemu_plugin_tb_get_insn(tb, i);
		p = marker_phase(qemu_plugin_insn_data(insn),
				 qemu_plugin_insn_size(insn));
		if (p < 0)
			continue;
		qemu_plugin_register_vcpu_insn_exec_cb(insn, marker_run,
						       TBPROF_CB_NO_REGS,
						       (void *)(unsigned long)p);
	}
	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_run, TBPROF_CB_NO_REGS,
					     tb_slot(addr, n));
}

static void tb_print(FILE *f, const struct tb_count *c)
{
	unsigned long long total = 0;
	int p;

	for (p = 0; p < PHASES; p++)
		total += c->n[p];
	if (!total)
		return;
	fprintf(f, "%llx %llu", c->addr, total);
	for (p = 1; phases_seen && p < PHASES; p++)
		fprintf(f, " %llu", c->n[p]);
	fputc('\n', f);
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
		tb_print(f, &tbs[i]);
	for (i = 0; i <= TB_MAX_INSNS; i++)
		tb_print(f, &lumps[i]);
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
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_translated);
	qemu_plugin_register_atexit_cb(id, tb_write, NULL);
	return 0;
}
