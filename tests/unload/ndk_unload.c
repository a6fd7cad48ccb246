// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_unload: a consumer module unloaded the moment ndk_close_adapter()
 * returns. Its exit closes a CQ and waits for the close completion, which
 * signals first and then goes on running; the exit closes the adapter as
 * soon as it is signalled and the module is freed. ndk_close_adapter()
 * must therefore not return before that callback has: otherwise the
 * callback returns into freed module text (an oops, reported as a splat).
 * The VM's init checks the order of the two messages below.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/spinlock.h>
#include <ndk/ndk.h>

MODULE_DESCRIPTION("ndk test: consumer unload right after ndk_close_adapter()");
MODULE_LICENSE("Dual BSD/GPL");

static NDK_ADAPTER *nu_adapter;
static NDK_CQ *nu_cq;
static DECLARE_COMPLETION(nu_created);
static DECLARE_COMPLETION(nu_closing);
static NDK_OBJECT_HEADER *nu_obj;
static NTSTATUS nu_status;
static DEFINE_SPINLOCK(nu_lock);

static void nu_create_cb(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj)
{
	nu_status = status;
	nu_obj = obj;
	complete(&nu_created);
}

static void nu_cq_cb(PVOID ctx, NTSTATUS status)
{
}

static void nu_close_cb(PVOID ctx)
{
	complete(&nu_closing);
	/* The exit is closing the adapter meanwhile. */
	mdelay(300);
	pr_info("ndk_unload: close callback returns\n");
}

static int __init nu_init(void)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	struct ndk_adapter_desc desc;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	if (ndk_enum_adapters(&desc, 1) < 1 ||
	    ndk_open_adapter(desc.ifindex, v, &nu_adapter))
		return -ENODEV;
	st = nu_adapter->Dispatch->NdkCreateCq(nu_adapter, 16, nu_cq_cb, NULL,
					       NULL, nu_create_cb, NULL, &cq);
	/* The create cannot be abandoned: its callback is in this module. */
	if (st == STATUS_PENDING) {
		wait_for_completion(&nu_created);
	} else {
		nu_status = st;
		nu_obj = cq ? &cq->Header : NULL;
	}
	if (nu_status) {
		ndk_close_adapter(nu_adapter);
		return -EIO;
	}
	nu_cq = container_of(nu_obj, NDK_CQ, Header);
	return 0;
}
module_init(nu_init);

static void __exit nu_exit(void)
{
	NTSTATUS st;

	/*
	 * From atomic context the close pends, and its callback is what
	 * this case is about; where it could sleep it may finish inline.
	 */
	spin_lock(&nu_lock);
	st = nu_cq->Dispatch->NdkCloseCq(&nu_cq->Header, nu_close_cb, NULL);
	spin_unlock(&nu_lock);
	if (st == STATUS_PENDING)
		wait_for_completion(&nu_closing);
	else
		pr_info("ndk_unload: the close did not pend: %#x\n", st);
	ndk_close_adapter(nu_adapter);
	pr_info("ndk_unload: adapter closed, module goes\n");
}
module_exit(nu_exit);
