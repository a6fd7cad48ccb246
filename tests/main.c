// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ndk KUnit module: every suite runs when the module is loaded in
 * the test VM, over the Soft-RoCE device the VM's init created.
 */
#include <linux/module.h>
#include "ndk_tests.h"

MODULE_DESCRIPTION("KUnit suites for ndk");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_IMPORT_NS(NDK_KUNIT);

/*
 * Self-test of `make check`: a warning here must turn the run red even
 * though every case passes.
 */
static bool provoke_warn;
module_param(provoke_warn, bool, 0444);
MODULE_PARM_DESC(provoke_warn, "WARN at load to test splat detection");

static int __init ndk_kunit_init(void)
{
	WARN(provoke_warn, "ndk_kunit: warning provoked for the check self-test\n");
	return 0;
}
module_init(ndk_kunit_init);

static void __exit ndk_kunit_exit(void)
{
}
module_exit(ndk_kunit_exit);

kunit_test_suites(&ndk_header_suite, &ndk_status_suite, &ndk_adapter_suite,
		  &ndk_pd_suite, &ndk_cq_suite);
