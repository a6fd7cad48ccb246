// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_demo: a small NDK consumer, the first example to read.
 *
 * Loading the module runs one round trip through ndk on the first NDK
 * adapter, both ends in this module: a listener and a client connect
 * over the adapter's own address, exchange a message that carries a
 * registered buffer's address and token, then the client writes into
 * that buffer with RDMA and reads it back, measures a short burst of
 * writes, and everything is torn down in order. It uses the public
 * headers only, and every asynchronous call goes through one small
 * helper that waits for the completion callback.
 */
#define pr_fmt(fmt) "ndk_demo: " fmt

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/inetdevice.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <ndk/ndk.h>

#define DEMO_PORT	18600
#define DEMO_BUF	(64 * 1024)
#define DEMO_BURST	256

/* A pause with the connection up, for tools such as ndkstat to see it. */
static unsigned int hold_ms;
module_param(hold_ms, uint, 0444);
MODULE_PARM_DESC(hold_ms, "keep the connection up this long before teardown");

/* One asynchronous NDK request, made synchronous. */
struct demo_wait {
	struct completion done;
	NTSTATUS status;
	NDK_OBJECT_HEADER *obj;
};

static void demo_wait_init(struct demo_wait *w)
{
	init_completion(&w->done);
	w->obj = NULL;
}

static void demo_create_done(PVOID ctx, NTSTATUS status,
			     NDK_OBJECT_HEADER *obj)
{
	struct demo_wait *w = ctx;

	w->status = status;
	w->obj = obj;
	complete(&w->done);
}

static void demo_request_done(PVOID ctx, NTSTATUS status)
{
	struct demo_wait *w = ctx;

	w->status = status;
	complete(&w->done);
}

static void demo_close_done(PVOID ctx)
{
	complete(&((struct demo_wait *)ctx)->done);
}

/* NDK calls return STATUS_PENDING and finish in the callback, or fail. */
static NTSTATUS demo_wait(struct demo_wait *w, NTSTATUS status)
{
	if (status != STATUS_PENDING)
		return status;
	wait_for_completion(&w->done);
	return w->status;
}

static void demo_close(NDK_OBJECT_HEADER *obj, NDK_FN_CLOSE_OBJECT close,
		       const char *what)
{
	struct demo_wait w;

	demo_wait_init(&w);
	if (close(obj, demo_close_done, &w) == STATUS_PENDING &&
	    !wait_for_completion_timeout(&w.done, 10 * HZ))
		pr_err("closing the %s did not complete\n", what);
}

/* Everything the demo creates, closed in reverse in demo_teardown(). */
struct demo {
	NDK_ADAPTER *adapter;
	NDK_ADAPTER_INFO info;
	struct sockaddr_in addr;
	NDK_PD *pd;
	NDK_CQ *cq;
	NDK_LISTENER *listener;
	NDK_CONNECTOR *client, *server;
	struct completion incoming;
	NDK_QP *cqp, *sqp;
	void *cbuf, *sbuf;
	struct ndk_mdl cmdl, smdl;
	NDK_MR *cmr, *smr;
	NDK_RESULT result[8];
	unsigned long seen;
};

/* The message the server sends: where the client may write. */
struct demo_hello {
	__le64 addr;
	__le32 token;
	__le32 length;
};

static void demo_connect_event(PVOID ctx, NDK_CONNECTOR *connector)
{
	struct demo *d = ctx;

	d->server = connector;
	complete(&d->incoming);
}

/*
 * The object a create call made: the one it stored through its object
 * argument (@obj) if it completed inline, else the completion's.
 */
static NDK_OBJECT_HEADER *demo_create(struct demo_wait *w, NTSTATUS status,
				      void *obj, const char *what)
{
	bool pending = status == STATUS_PENDING;

	status = demo_wait(w, status);
	if (status) {
		pr_err("creating the %s failed: %#x\n", what, status);
		return NULL;
	}
	/* The header is the first member of every NDK object. */
	return pending ? w->obj : obj;
}

/* The object a create completion returned, as its NDKPI type. */
#define demo_obj(hdr, type)						\
	({								\
		NDK_OBJECT_HEADER *__h = (hdr);				\
									\
		__h ? container_of(__h, type, Header) : NULL;		\
	})

static NDK_QP *demo_qp(struct demo *d, const char *what)
{
	NDK_QP *qp = NULL;
	struct demo_wait w;

	NTSTATUS st;

	demo_wait_init(&w);
	st = d->pd->Dispatch->NdkCreateQp(d->pd, d->cq, d->cq, d, 64, 64, 1, 1,
					  0, demo_create_done, &w, &qp);
	return demo_obj(demo_create(&w, st, qp, what), NDK_QP);
}

/*
 * Wait for the completion of request @ctx (a small number) on the CQ,
 * polling; results of other requests that arrive first are kept.
 */
static NTSTATUS demo_poll(struct demo *d, uintptr_t ctx, ULONG *bytes)
{
	unsigned long end = jiffies + 10 * HZ;
	NDK_RESULT r;
	uintptr_t id;

	while (!(d->seen & BIT(ctx)) && time_before(jiffies, end)) {
		if (!d->cq->Dispatch->NdkGetCqResults(d->cq, &r, 1)) {
			usleep_range(100, 200);
			continue;
		}
		id = (uintptr_t)r.RequestContext;
		if (id >= ARRAY_SIZE(d->result))
			continue;
		d->result[id] = r;
		d->seen |= BIT(id);
	}
	if (!(d->seen & BIT(ctx)))
		return STATUS_IO_TIMEOUT;
	d->seen &= ~BIT(ctx);
	if (bytes)
		*bytes = d->result[ctx].BytesTransferred;
	return d->result[ctx].Status;
}

/* Register @len bytes at @buf for local and remote access. */
static NDK_MR *demo_register(struct demo *d, void *buf, struct ndk_mdl *mdl)
{
	NDK_MR *mr = NULL;
	struct demo_wait w;
	NTSTATUS status;

	demo_wait_init(&w);
	status = d->pd->Dispatch->NdkCreateMr(d->pd, FALSE, demo_create_done,
					      &w, &mr);
	mr = demo_obj(demo_create(&w, status, mr, "memory region"), NDK_MR);
	if (!mr)
		return NULL;
	/* The MDL names the memory; its address is what the peer uses. */
	ndk_mdl_init_kva(mdl, buf, DEMO_BUF);
	demo_wait_init(&w);
	status = mr->Dispatch->NdkRegisterMr(mr, mdl, DEMO_BUF,
					     NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					     NDK_MR_FLAG_ALLOW_REMOTE_READ |
					     NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
					     demo_request_done, &w);
	status = demo_wait(&w, status);
	if (status)
		pr_err("registering memory failed: %#x\n", status);
	return status ? NULL : mr;
}

static int demo_setup(struct demo *d)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	const NDK_ADAPTER_DISPATCH *a;
	NDK_CONNECTOR *connector = NULL;
	NDK_LISTENER *listener = NULL;
	ULONG size = sizeof(d->info);
	struct ndk_adapter_desc desc;
	struct net_device *ndev;
	struct demo_wait w;
	NDK_PD *pd = NULL;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	if (ndk_enum_adapters(&desc, 1) < 1) {
		pr_err("no NDK adapter: is an RDMA device up?\n");
		return -ENODEV;
	}
	if (ndk_open_adapter(desc.ifindex, v, &d->adapter))
		return -ENODEV;
	a = d->adapter->Dispatch;
	a->NdkQueryAdapterInfo(d->adapter, &d->info, &size);
	pr_info("adapter %s: NDK %u.%u, %s, vendor %#x, max transfer %u B, inline %u B, FRMR pages %u\n",
		desc.ibdev_name, d->info.Version.Major, d->info.Version.Minor,
		d->info.RdmaTechnology == NdkiWarp ? "iWARP" : "RoCE/IB",
		d->info.VendorId, d->info.MaxTransferLength,
		d->info.MaxInlineDataSize, d->info.FRMRPageCount);

	ndev = dev_get_by_index(&init_net, desc.ifindex);
	if (!ndev)
		return -ENODEV;
	d->addr.sin_family = AF_INET;
	d->addr.sin_addr.s_addr = inet_select_addr(ndev, 0, RT_SCOPE_UNIVERSE);
	dev_put(ndev);

	demo_wait_init(&w);
	st = a->NdkCreatePd(d->adapter, demo_create_done, &w, &pd);
	d->pd = demo_obj(demo_create(&w, st, pd, "protection domain"),
			 NDK_PD);
	if (!d->pd)
		return -ENOMEM;
	/* Polled only: no notification callback. */
	demo_wait_init(&w);
	st = a->NdkCreateCq(d->adapter, 256, NULL, NULL, NULL,
			    demo_create_done, &w, &cq);
	d->cq = demo_obj(demo_create(&w, st, cq, "completion queue"),
			 NDK_CQ);
	if (!d->cq)
		return -ENOMEM;
	demo_wait_init(&w);
	st = a->NdkCreateListener(d->adapter, demo_connect_event, d,
				  demo_create_done, &w, &listener);
	d->listener = demo_obj(demo_create(&w, st, listener, "listener"),
			       NDK_LISTENER);
	if (!d->listener)
		return -ENOMEM;
	demo_wait_init(&w);
	st = a->NdkCreateConnector(d->adapter, demo_create_done, &w,
				   &connector);
	d->client = demo_obj(demo_create(&w, st, connector, "connector"),
			     NDK_CONNECTOR);
	if (!d->client)
		return -ENOMEM;
	d->cqp = demo_qp(d, "client QP");
	d->sqp = demo_qp(d, "server QP");
	d->cbuf = kzalloc(DEMO_BUF, GFP_KERNEL);
	d->sbuf = kzalloc(DEMO_BUF, GFP_KERNEL);
	if (!d->cqp || !d->sqp || !d->cbuf || !d->sbuf)
		return -ENOMEM;
	d->cmr = demo_register(d, d->cbuf, &d->cmdl);
	d->smr = demo_register(d, d->sbuf, &d->smdl);
	return d->cmr && d->smr ? 0 : -EIO;
}

/* Listen, connect, accept, complete: the NDK handshake. */
static int demo_connect(struct demo *d)
{
	struct sockaddr_in dst = d->addr;
	struct demo_wait lw, cw, aw, ccw;
	NTSTATUS status;

	dst.sin_port = htons(DEMO_PORT);
	demo_wait_init(&lw);
	status = d->listener->Dispatch->NdkListen(d->listener,
						  (struct sockaddr *)&dst,
						  sizeof(dst),
						  demo_request_done, &lw);
	status = demo_wait(&lw, status);
	if (status) {
		pr_err("listen failed: %#x\n", status);
		return -EIO;
	}
	pr_info("listening on %pI4:%u\n", &dst.sin_addr, DEMO_PORT);

	demo_wait_init(&cw);
	status = d->client->Dispatch->NdkConnect(d->client, d->cqp,
						 (struct sockaddr *)&d->addr,
						 sizeof(d->addr),
						 (struct sockaddr *)&dst,
						 sizeof(dst),
						 1, 1, "hello", 6,
						 demo_request_done, &cw);
	if (status != STATUS_PENDING ||
	    !wait_for_completion_timeout(&d->incoming, 10 * HZ)) {
		pr_err("connect failed: %#x\n", status);
		return -EIO;
	}
	demo_wait_init(&aw);
	status = d->server->Dispatch->NdkAccept(d->server, d->sqp, 1, 1, NULL,
						0, NULL, NULL,
						demo_request_done, &aw);
	if (demo_wait(&cw, STATUS_PENDING) || status != STATUS_PENDING) {
		pr_err("the server did not accept: %#x / %#x\n", cw.status,
		       status);
		return -EIO;
	}
	demo_wait_init(&ccw);
	status = d->client->Dispatch->NdkCompleteConnect(d->client, NULL, NULL,
							 demo_request_done,
							 &ccw);
	status = demo_wait(&ccw, status);
	if (status || demo_wait(&aw, STATUS_PENDING)) {
		pr_err("completing the connection failed: %#x / %#x\n",
		       status, aw.status);
		return -EIO;
	}
	pr_info("connected: client QP and server QP over %s\n",
		d->info.RdmaTechnology == NdkiWarp ? "iWARP" : "RoCE");
	return 0;
}

static int demo_traffic(struct demo *d)
{
	UINT32 ctok = d->cmr->Dispatch->NdkGetLocalTokenFromMr(d->cmr);
	UINT32 stok = d->smr->Dispatch->NdkGetLocalTokenFromMr(d->smr);
	struct demo_hello *hello = d->sbuf, *got = d->cbuf;
	NDK_SGE ssge = { .VirtualAddress = d->sbuf, .Length = sizeof(*hello),
			 .MemoryRegionToken = stok };
	NDK_SGE csge = { .VirtualAddress = d->cbuf, .Length = 4096,
			 .MemoryRegionToken = ctok };
	u64 raddr, ns;
	u32 rtok, i;
	ULONG bytes;
	ktime_t t0;

	/* The server tells the client where it may write. */
	hello->addr = cpu_to_le64((uintptr_t)MmGetMdlVirtualAddress(&d->smdl));
	hello->token = cpu_to_le32(d->smr->Dispatch->NdkGetRemoteTokenFromMr(d->smr));
	hello->length = cpu_to_le32(DEMO_BUF);
	if (d->cqp->Dispatch->NdkReceive(d->cqp, (void *)1, &csge, 1) ||
	    d->sqp->Dispatch->NdkSend(d->sqp, (void *)2, &ssge, 1, 0) ||
	    demo_poll(d, 2, NULL) || demo_poll(d, 1, &bytes))
		return -EIO;
	raddr = le64_to_cpu(got->addr);
	rtok = le32_to_cpu(got->token);
	pr_info("message: %u bytes; the server's buffer is at %#llx, token %#x\n",
		bytes, raddr, rtok);

	/* RDMA write a pattern into the server's buffer, then read it back. */
	for (i = 0; i < 4096; i++)
		((u8 *)d->cbuf)[i] = (u8)(i * 7 + 3);
	if (d->cqp->Dispatch->NdkWrite(d->cqp, (void *)3, &csge, 1, raddr,
				       rtok, 0) ||
	    demo_poll(d, 3, NULL))
		return -EIO;
	pr_info("RDMA write of 4096 bytes: %s\n",
		memcmp(d->sbuf, d->cbuf, 4096) ? "MISMATCH" : "verified");
	memset(d->cbuf, 0, 4096);
	if (d->cqp->Dispatch->NdkRead(d->cqp, (void *)4, &csge, 1, raddr,
				      rtok, 0) ||
	    demo_poll(d, 4, &bytes))
		return -EIO;
	pr_info("RDMA read of %u bytes: %s\n", bytes,
		memcmp(d->sbuf, d->cbuf, 4096) ? "MISMATCH" : "verified");

	/* A short burst of writes, each waited for: a rough rate. */
	t0 = ktime_get();
	for (i = 0; i < DEMO_BURST; i++)
		if (d->cqp->Dispatch->NdkWrite(d->cqp, (void *)5, &csge, 1,
					       raddr, rtok, 0) ||
		    demo_poll(d, 5, NULL))
			return -EIO;
	ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	pr_info("%u RDMA writes of 4 KiB, one at a time: %llu us each, %llu KiB/s (software RDMA on an emulated CPU)\n",
		DEMO_BURST, div_u64(ns, DEMO_BURST * 1000),
		div64_u64((u64)DEMO_BURST * 4 * NSEC_PER_SEC, ns ? ns : 1));
	return 0;
}

static void demo_teardown(struct demo *d)
{
	struct demo_wait w;
	NTSTATUS st;

	if (d->client && d->server) {
		demo_wait_init(&w);
		st = d->client->Dispatch->NdkDisconnect(d->client,
							demo_request_done, &w);
		if (!demo_wait(&w, st))
			pr_info("disconnected\n");
	}
	if (d->server)
		demo_close(&d->server->Header,
			   d->server->Dispatch->NdkCloseConnector, "server");
	if (d->client)
		demo_close(&d->client->Header,
			   d->client->Dispatch->NdkCloseConnector, "client");
	if (d->listener)
		demo_close(&d->listener->Header,
			   d->listener->Dispatch->NdkCloseListener, "listener");
	if (d->sqp)
		demo_close(&d->sqp->Header, d->sqp->Dispatch->NdkCloseQp,
			   "server QP");
	if (d->cqp)
		demo_close(&d->cqp->Header, d->cqp->Dispatch->NdkCloseQp,
			   "client QP");
	if (d->smr)
		demo_close(&d->smr->Header, d->smr->Dispatch->NdkCloseMr,
			   "server MR");
	if (d->cmr)
		demo_close(&d->cmr->Header, d->cmr->Dispatch->NdkCloseMr,
			   "client MR");
	if (d->cq)
		demo_close(&d->cq->Header, d->cq->Dispatch->NdkCloseCq, "CQ");
	if (d->pd)
		demo_close(&d->pd->Header, d->pd->Dispatch->NdkClosePd, "PD");
	if (d->adapter)
		ndk_close_adapter(d->adapter);
	kfree(d->cbuf);
	kfree(d->sbuf);
	pr_info("all objects closed, adapter closed\n");
}

static int __init demo_init(void)
{
	struct demo *d = kzalloc(sizeof(*d), GFP_KERNEL);
	int err;

	if (!d)
		return -ENOMEM;
	init_completion(&d->incoming);
	err = demo_setup(d);
	if (!err)
		err = demo_connect(d);
	if (!err)
		err = demo_traffic(d);
	if (!err && hold_ms) {
		pr_info("holding the connection for %u ms\n", hold_ms);
		msleep(hold_ms);
	}
	demo_teardown(d);
	kfree(d);
	pr_info("demo %s\n", err ? "FAILED" : "done");
	return 0;
}

static void __exit demo_exit(void)
{
}

module_init(demo_init);
module_exit(demo_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("ndk demo: an NDK consumer round trip");
