/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The calls of QEMU's TCG plugin API that tbprof.c makes, as QEMU 7.2
 * exports them (plugin API version 1). An id or an address is a uint64_t
 * in QEMU's header: unsigned long long here, the same on x86-64.
 */
#ifndef _NDK_BENCH_TBPROF_H
#define _NDK_BENCH_TBPROF_H

#include <stddef.h>

struct qemu_plugin_tb;
struct qemu_plugin_insn;

/* QEMU_PLUGIN_CB_NO_REGS */
#define TBPROF_CB_NO_REGS	0

void qemu_plugin_register_vcpu_tb_trans_cb(unsigned long long id,
					   void (*cb)(unsigned long long id,
						      struct qemu_plugin_tb *tb));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
unsigned long long qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *
qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  void (*cb)(unsigned int vcpu,
						     void *data),
					  int flags, void *data);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    void (*cb)(unsigned int vcpu,
						       void *data),
					    int flags, void *data);
void qemu_plugin_register_atexit_cb(unsigned long long id,
				    void (*cb)(unsigned long long id,
					       void *data),
				    void *data);

#endif /* _NDK_BENCH_TBPROF_H */
