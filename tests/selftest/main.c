// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_selftest: a conformance pass over what an NDK consumer relies on,
 * on a device the user names, without KUnit (distribution kernels have
 * none). It is a consumer itself: public headers only.
 *
 *   insmod ndk_selftest.ko ifname=eth0              loopback on one device
 *   insmod ndk_selftest.ko ifname=eth0 listen=1     passive side of a pair
 *   insmod ndk_selftest.ko ifname=eth0 peer=A.B.C.D active side of a pair
 *
 * Each check prints a KTAP line; the last line is "ndk_selftest: N passed,
 * N failed, N skipped", and insmod fails if anything failed. The module
 * has done its work once loaded and may be removed at once.
 *
 * The active side drives sessions, one connection each, told apart by the
 * private data of its connect; the passive side accepts, publishes its
 * memory (a region, a fast-registered region and a window) in a message
 * and answers echo and invalidate requests until the connection ends. In
 * loopback both sides run in this module, the passive one in a thread.
 */
#define pr_fmt(fmt) fmt

#include <linux/completion.h>
#include <linux/inet.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "selftest.h"

char *st_ifname;
module_param_named(ifname, st_ifname, charp, 0444);
MODULE_PARM_DESC(ifname, "network interface of the RDMA device to test");
static char *peer;
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "IPv4 address of a host running ndk_selftest listen=1");
static bool listen;
module_param(listen, bool, 0444);
MODULE_PARM_DESC(listen, "serve one peer= run from another host, then finish");
ushort st_port = 18700;
module_param_named(port, st_port, ushort, 0444);
MODULE_PARM_DESC(port, "port of the passive side (18700)");
uint st_wait_s = 300;
module_param_named(wait_s, st_wait_s, uint, 0444);
MODULE_PARM_DESC(wait_s, "seconds the passive side waits for its peer (300)");
uint st_teardown_rounds = 3;
module_param_named(teardown_rounds, st_teardown_rounds, uint, 0444);
MODULE_PARM_DESC(teardown_rounds, "rounds of each teardown case (3)");

/* ------------------------------------------------------------------ */
/* The run                                                            */
/* ------------------------------------------------------------------ */

static int st_run(struct st *s)
{
	bool serve = !peer;
	NDK_PD *pd = NULL;
	struct st_wait w;
	NTSTATUS st;
	int err;

	err = st_open(s);
	if (err)
		return err;
	st_wait_init(&w);
	st = s->a->Dispatch->NdkCreatePd(s->a, st_create_cb, &w, &pd);
	s->pd = st_obj(st_created(&w, st, pd, NULL), NDK_PD);
	if (!s->pd) {
		st_report("protection_domain", "NdkCreatePd failed");
		return -EIO;
	}
	st_objects(s);
	st_memory_local(s);
	st_receive_queue(s);
	st_srq_local(s);
	st_cq_resize(s);
	st_qp_limits(s);
	st_listeners(s);

	s->remote = s->local;
	s->remote.sin_port = htons(st_port);
	if (peer && !in4_pton(peer, -1, (u8 *)&s->remote.sin_addr.s_addr, -1,
			      NULL)) {
		st_report("peer_address", "peer= is no IPv4 address");
		return -EINVAL;
	}
	if (serve) {
		st = st_listen_on(s, &s->listener, st_listen_cb, st_port);
		if (st) {
			st_report("listen", "NdkListen failed");
			return -EIO;
		}
		pr_info("ndk_selftest: listening on %pI4:%u\n",
			&s->local.sin_addr, st_port);
		init_completion(&s->server_done);
		s->server = kthread_run(st_server_fn, s, "ndk_selftest");
		if (IS_ERR(s->server)) {
			s->server = NULL;
			return -ENOMEM;
		}
	}
	if (!listen)
		st_client(s);
	if (s->server) {
		if (!listen)
			WRITE_ONCE(s->server_stop, true);
		wake_up(&s->incoming_wq);
		wait_for_completion(&s->server_done);
		if (listen)
			st_report("peer_run", s->pdata_seen ? NULL :
				  "no peer came");
	}
	return 0;
}

static void st_teardown(struct st *s)
{
	if (s->listener)
		st_close(&s->listener->Header,
			 s->listener->Dispatch->NdkCloseListener);
	if (s->pd)
		st_close(&s->pd->Header, s->pd->Dispatch->NdkClosePd);
	if (s->a && !st_abandoned)
		ndk_close_adapter(s->a);
}

static int __init st_init(void)
{
	struct st *s;
	int err;

	if (!st_ifname) {
		pr_err("ndk_selftest: ifname= names the RDMA device's interface\n");
		return -EINVAL;
	}
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	spin_lock_init(&s->lock);
	init_waitqueue_head(&s->incoming_wq);
	/*
	 * No plan line: the passive side's checks, run only in loopback
	 * and with listen=1, vary the count.
	 */
	pr_info("KTAP version 1\n");
	pr_info("# ndk_selftest on %s: %s\n", st_ifname,
		listen ? "passive side" : peer ? "active side" : "loopback");
	err = st_run(s);
	st_teardown(s);
	pr_info("ndk_selftest: %u passed, %u failed, %u skipped\n", st_passed,
		st_failed, st_skipped);
	if (!err && st_failed)
		err = -EIO;
	/* A callback may still come for what timed out: stay loaded. */
	if (st_abandoned) {
		pr_err("ndk_selftest: requests did not complete; staying loaded\n");
		return 0;
	}
	kfree(s);
	return err;
}

static void __exit st_exit(void)
{
}

module_init(st_init);
module_exit(st_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("ndk conformance self-test on a user's RDMA device");
