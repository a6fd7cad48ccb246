// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ndk KUnit module: every suite runs when the module is loaded in
 * the test VM, over the soft RDMA device the VM's init created.
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/slab.h>
#include "ndk_tests.h"

MODULE_DESCRIPTION("KUnit suites for ndk");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_IMPORT_NS(NDK_KUNIT_NS);

/*
 * Self-test of `make check`: each of these must turn the run red even
 * though every case passes.
 */
static char *provoke = "";
module_param(provoke, charp, 0444);
MODULE_PARM_DESC(provoke,
		 "warn, leak or sleep: provoke a splat at load (ndk_check.provoke=open on the kernel command line keeps an adapter open)");

static void *ndk_kunit_leak;

/*
 * Whether the kernel command line holds @arg. The harness's settings
 * that the suites read come from there, not from module parameters:
 * 6.1's KUnit runs a module's suites before the module's parameters are
 * parsed, and before its init.
 */
static bool ndk_test_cmdline(const char *arg)
{
	char *cmdline = kmalloc(PAGE_SIZE, GFP_KERNEL);
	bool found;

	found = cmdline && !ndk_rw_file("/proc/cmdline", cmdline, PAGE_SIZE,
					false) && strstr(cmdline, arg);
	kfree(cmdline);
	return found;
}

/**
 * ndk_test_cmdline_u64s() - numbers the harness set on the command line
 * @name: the setting, ndk_check.@name=N[,N...]
 * @v: receives them
 * @max: room in @v
 *
 * Return: how many were read; 0 if the setting is absent or malformed.
 */
u32 ndk_test_cmdline_u64s(const char *name, u64 *v, u32 max)
{
	char *cmdline = kmalloc(PAGE_SIZE, GFP_KERNEL);
	char key[48], *p, *tok;
	u32 n = 0;

	snprintf(key, sizeof(key), "ndk_check.%s=", name);
	if (!cmdline || ndk_rw_file("/proc/cmdline", cmdline, PAGE_SIZE, false))
		goto out;
	p = strstr(cmdline, key);
	if (!p)
		goto out;
	p += strlen(key);
	p[strcspn(p, "\n ")] = '\0';
	while ((tok = strsep(&p, ",")) && n < max) {
		if (kstrtou64(tok, 0, &v[n])) {
			n = 0;
			break;
		}
		n++;
	}
out:
	kfree(cmdline);
	return n;
}

/*
 * The cases that repeat one scenario many times, to meet a race more
 * often, run a few rounds in `make check` and all of them in `make
 * matrix`, whose VM boots with ndk_check.thorough=1.
 */
int ndk_test_rounds(int all, int few)
{
	static int thorough = -1;
	int t = READ_ONCE(thorough);

	if (t < 0) {
		t = ndk_test_cmdline("ndk_check.thorough=1");
		WRITE_ONCE(thorough, t);
	}
	return t ? all : few;
}

/*
 * ndk_check.provoke=open: an adapter the module never closes, as a
 * failed case's; the harness must then keep the module loaded.
 */
static bool ndk_kunit_kept;

bool ndk_test_kept_open(void)
{
	return ndk_kunit_kept;
}

static void ndk_kunit_keep_open(void)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	struct ndk_adapter_desc desc;
	NDK_ADAPTER *a;

	ndk_kunit_kept = ndk_enum_adapters(&desc, 1) >= 1 &&
			 ndk_open_adapter(desc.ifindex, v, &a) == STATUS_SUCCESS;
	if (!ndk_kunit_kept)
		pr_err("ndk_kunit: provoke=open: no adapter to keep open\n");
}

/*
 * Opened before the suites, whichever of the module's init and its
 * suites comes first: after them the device is gone (ndk_main removes
 * it).
 */
int ndk_test_first_suite(struct kunit_suite *suite)
{
	if (ndk_test_cmdline("ndk_check.provoke=open"))
		ndk_kunit_keep_open();
	return 0;
}

static int __init ndk_kunit_init(void)
{
	if (!strcmp(provoke, "warn")) {
		WARN(1, "ndk_kunit: warning provoked for the check self-test\n");
	} else if (!strcmp(provoke, "leak")) {
		ndk_kunit_leak = kmalloc(64, GFP_KERNEL);
		ndk_kunit_leak = NULL;
	} else if (!strcmp(provoke, "sleep")) {
		spin_lock(&ndk_test_lock);
		msleep(20);
		spin_unlock(&ndk_test_lock);
	}
	return 0;
}
module_init(ndk_kunit_init);

static void __exit ndk_kunit_exit(void)
{
}
module_exit(ndk_kunit_exit);

/* ndk_main removes the device: it must come last. */
kunit_test_suites(&ndk_ndkpi_suite, &ndk_status_suite, &ndk_adapter_suite,
		  &ndk_pd_suite, &ndk_cq_suite, &ndk_qp_suite, &ndk_ring_suite,
		  &ndk_sweep_suite,
		  &ndk_connector_suite, &ndk_listener_suite,
		  &ndk_endpoint_suite, &ndk_mr_suite, &ndk_mdl_suite,
		  &ndk_mw_suite, &ndk_srq_suite, &ndk_trace_suite,
		  &ndk_debugfs_suite, &ndk_fault_suite, &ndk_object_suite,
		  &ndk_wdk_suite, &ndk_fuzz_suite, &ndk_main_suite);
