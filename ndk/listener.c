// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_LISTENER on a listening rdma_cm id.
 *
 * Every incoming request becomes a provider-created connector handed to
 * the consumer's connect event callback. Those connectors are successors
 * of the listener: its close, and the release of its address, wait for
 * them. A paused or closing listener refuses requests as if nobody
 * listened, and so does one whose consumer holds its backlog of requests
 * unanswered.
 */
#include <linux/moduleparam.h>
#include <linux/socket.h>
#include <net/ipv6.h>
#include "ndk_priv.h"
#include "trace.h"

/*
 * A peer may open requests faster than the consumer answers them, and
 * each one handed out holds a connector, its private data and rdma_cm's
 * and the connection manager's state for it. As a socket's backlog
 * bounds the connections that wait for accept(), this bounds the
 * requests that wait for the consumer's answer. 128 was ndk's fixed
 * backlog before, and is nvmet-rdma's; SOMAXCONN, what a socket's
 * backlog is cut to by default, caps it.
 */
#define NDK_LISTEN_BACKLOG_DEFAULT	128
static unsigned int ndk_listen_backlog = NDK_LISTEN_BACKLOG_DEFAULT;

static int ndk_listen_backlog_set(const char *val,
				  const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, SOMAXCONN);
}

static const struct kernel_param_ops ndk_listen_backlog_ops = {
	.set = ndk_listen_backlog_set,
	.get = param_get_uint,
};

module_param_cb(listen_backlog, &ndk_listen_backlog_ops, &ndk_listen_backlog,
		0644);
MODULE_PARM_DESC(listen_backlog,
		 "requests a listener hands to its consumer that may wait for NdkAccept, NdkReject or the close at once; more are refused and counted in listen_overflows; also rdma_listen()'s backlog, at least 128; read by NdkListen (1 to 4096, default 128)");

static struct ndk_listener *to_listener(NDK_LISTENER *l)
{
	return container_of(l, struct ndk_listener, ndk);
}

/**
 * ndk_listener_request() - a connect request reached the listener
 * @listener: the listener (the new id's inherited context)
 * @id: the request's new id
 * @ev: the request
 *
 * Runs in @id's rdma_cm handler.
 *
 * Return: 0 when a connector took the request; non-zero refuses it and
 * makes rdma_cm destroy @id.
 */
static int ndk_listener_request(struct ndk_listener *listener,
				struct rdma_cm_id *id,
				struct rdma_cm_event *ev)
{
	struct ndk_connector *conn;

	/* A wildcard listen hears every device; take only this adapter's. */
	if (READ_ONCE(listener->closing) || READ_ONCE(listener->paused) ||
	    id->device != listener->obj.adapter->ibdev ||
	    ndk_adapter_dead(listener->obj.adapter))
		return -ECONNREFUSED;
	/*
	 * The consumer may have closed the listener since the check, and
	 * its last reference may be gone: its memory stays until
	 * rdma_destroy_id() of its id, which waits for this handler (rdma_cm
	 * runs it under the listening id's handler_mutex), but it may no
	 * longer gain successors.
	 */
	if (!ndk_obj_tryget(&listener->obj))
		return -ECONNREFUSED;
	/*
	 * Refused as if paused: the peer hears of it at once and may retry,
	 * and ndk keeps nothing for it.
	 */
	if (!atomic_add_unless(&listener->unanswered, 1, listener->backlog)) {
		ndk_stat_inc(listener->obj.adapter, NDK_STAT_LISTEN_OVERFLOWS);
		ndk_obj_put(&listener->obj);
		return -ECONNREFUSED;
	}
	conn = ndk_connector_alloc(listener->obj.adapter, &ev->param.conn,
				   GFP_KERNEL);
	if (!conn) {
		atomic_dec(&listener->unanswered);
		ndk_obj_put(&listener->obj);
		return -ENOMEM;
	}
	/* Before the accept moves the QP, as the active side's is. */
	ndk_cm_set_ack_timeout(id);
	ndk_connector_adopt(conn, listener, id, ev);
	ndk_obj_put(&listener->obj);
	ndk_obj_track(&conn->obj);
	trace_ndk_object_create(NdkObjectTypeConnector, conn->obj.id,
				listener->obj.id, STATUS_SUCCESS);
	trace_ndk_callback(NDK_CB_CONNECT_EVENT, NdkObjectTypeListener,
			   listener->obj.id, STATUS_SUCCESS);
	/*
	 * The consumer owns the connector from here and may close it; its
	 * memory stays until the close's rdma_destroy_id(), which waits for
	 * this handler.
	 */
	listener->event_cb(listener->event_ctx, &conn->ndk);
	ndk_connector_called(conn);
	return 0;
}

/*
 * rdma_cm binds a loopback address as it does the wildcard, on no device,
 * and listens on every device: only the loopback interface's adapter
 * owns it.
 */
static bool ndk_listen_foreign_loopback(struct ndk_listener *l)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&l->addr;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)&l->addr;
	struct net_device *ndev;
	bool lo;

	if (l->addr.ss_family == AF_INET ?
	    !ipv4_is_loopback(a4->sin_addr.s_addr) :
	    !ipv6_addr_loopback(&a6->sin6_addr))
		return false;
	rcu_read_lock();
	ndev = dev_get_by_index_rcu(&init_net, l->obj.adapter->ifindex);
	lo = ndev && (ndev->flags & IFF_LOOPBACK);
	rcu_read_unlock();
	return !lo;
}

/*
 * An id that took an address keeps it and binds no other: after a listen
 * that failed past the bind, the listener needs a fresh id, made at once
 * to free the address, or else by the next NdkListen.
 */
static NTSTATUS ndk_listener_renew_id(struct ndk_listener *l)
{
	struct rdma_cm_id *fresh, *old;
	unsigned long flags;
	NTSTATUS status;

	l->stale = true;
	status = ndk_cm_create_id(l, &fresh);
	if (status)
		return status;
	spin_lock_irqsave(&l->id_lock, flags);
	old = l->id;
	l->id = fresh;
	spin_unlock_irqrestore(&l->id_lock, flags);
	rdma_destroy_id(old);
	l->stale = false;
	return STATUS_SUCCESS;
}

/* Bind and listen; a listen that failed may be tried again. */
static NTSTATUS ndk_listen_now(struct ndk_listener *l)
{
	NTSTATUS status;
	bool bound;
	int err;

	status = l->stale ? ndk_listener_renew_id(l) : STATUS_SUCCESS;
	if (!status && ndk_listen_foreign_loopback(l))
		status = STATUS_INVALID_ADDRESS;
	if (status) {
		WRITE_ONCE(l->listen_cb, NULL);
		return status;
	}
	err = NDK_FI_ERR(rdma_bind_addr(l->id, (struct sockaddr *)&l->addr));
	bound = !err;
	if (!err && l->id->device && l->id->device != l->obj.adapter->ibdev)
		err = -ENODEV;
	if (!err) {
		/*
		 * On iWARP rdma_listen()'s backlog sizes the iw_cm's events
		 * of the listening id and the driver's TCP listen queue: a
		 * burst beyond them is refused before ndk sees a request, and
		 * goes uncounted. At least the default keeps a burst of that
		 * size within ndk's own accounting, however small its
		 * backlog.
		 */
		l->backlog = READ_ONCE(ndk_listen_backlog);
		err = NDK_FI_ERR(rdma_listen(l->id,
					     max(l->backlog,
						 NDK_LISTEN_BACKLOG_DEFAULT)));
	}
	status = ndk_bind_status((struct sockaddr *)&l->addr, err);
	if (status) {
		if (bound)
			ndk_listener_renew_id(l);
		WRITE_ONCE(l->listen_cb, NULL);
	}
	return status;
}

static void ndk_listen_work(struct work_struct *work)
{
	struct ndk_listener *l = container_of(work, struct ndk_listener, work);
	NDK_FN_REQUEST_COMPLETION cb = l->listen_cb;
	void *ctx = l->listen_ctx;
	NTSTATUS status = ndk_listen_now(l);

	trace_ndk_callback(NDK_CB_REQUEST, NdkObjectTypeListener, l->obj.id,
			   status);
	cb(ctx, status);
	ndk_obj_put(&l->obj);
}

static NTSTATUS ndk_listen(NDK_LISTENER *pNdkListener,
			   const PSOCKADDR pAddress, ULONG AddressLength,
			   NDK_FN_REQUEST_COMPLETION RequestCompletion,
			   PVOID RequestContext)
{
	struct ndk_listener *l = to_listener(pNdkListener);
	ULONG len = ndk_addr_len(pAddress, AddressLength);

	if (!RequestCompletion || !len)
		return STATUS_INVALID_PARAMETER;
	if (l->listen_cb)
		return STATUS_INVALID_DEVICE_STATE;
	if (ndk_adapter_dead(l->obj.adapter))
		return STATUS_DEVICE_REMOVED;
	memcpy(&l->addr, pAddress, len);
	/* Also what marks the listener as listening, inline or not. */
	l->listen_cb = RequestCompletion;
	l->listen_ctx = RequestContext;
	/* rdma_listen() may sleep: inline under the rule of creation. */
	if (ndk_obj_may_inline(&l->obj))
		return ndk_listen_now(l);
	ndk_obj_get(&l->obj);
	queue_work(ndk_wq, &l->work);
	return STATUS_PENDING;
}

/* NdkListen, traced; the reference outlives a listen that finishes first. */
static NTSTATUS ndk_listen_traced(NDK_LISTENER *pNdkListener,
				  const PSOCKADDR pAddress, ULONG AddressLength,
				  NDK_FN_REQUEST_COMPLETION RequestCompletion,
				  PVOID RequestContext)
{
	struct ndk_listener *l = to_listener(pNdkListener);
	NTSTATUS status;

	ndk_obj_get(&l->obj);
	status = ndk_listen(pNdkListener, pAddress, AddressLength,
			    RequestCompletion, RequestContext);
	trace_ndk_listen(l, status);
	ndk_obj_put(&l->obj);
	return status;
}

static NTSTATUS ndk_listener_get_local_address(NDK_LISTENER *pNdkListener,
					       PSOCKADDR pAddress,
					       ULONG *pAddressLength)
{
	struct ndk_listener *l = to_listener(pNdkListener);
	unsigned long flags;
	NTSTATUS status;

	spin_lock_irqsave(&l->id_lock, flags);
	status = ndk_copy_addr((struct sockaddr *)&l->id->route.addr.src_addr,
			       pAddress, pAddressLength);
	spin_unlock_irqrestore(&l->id_lock, flags);
	return status;
}

/* While paused, requests are refused as if nobody listened. */
static void ndk_control_connect_events(NDK_LISTENER *pNdkListener,
				       BOOLEAN Pause)
{
	WRITE_ONCE(to_listener(pNdkListener)->paused, !!Pause);
}

static const NDK_LISTENER_DISPATCH ndk_listener_dispatch = {
	.NdkCloseListener = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkListen = ndk_listen_traced,
	.NdkGetLocalAddress = ndk_listener_get_local_address,
	.NdkControlConnectEvents = ndk_control_connect_events,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_listener);

/* Refuse new requests at once, even while accepted ones keep it alive. */
static void ndk_listener_close(struct ndk_obj *obj)
{
	WRITE_ONCE(container_of(obj, struct ndk_listener, obj)->closing, true);
}

static NTSTATUS ndk_listener_create(struct ndk_obj *obj)
{
	struct ndk_listener *l = container_of(obj, struct ndk_listener, obj);

	spin_lock_init(&l->id_lock);
	return ndk_cm_create_id(l, &l->id);
}

static void ndk_listener_destroy(struct ndk_obj *obj)
{
	struct ndk_listener *l = container_of(obj, struct ndk_listener, obj);

	if (l->id)
		rdma_destroy_id(l->id);
}

static void ndk_listener_free(struct ndk_obj *obj)
{
	kfree(container_of(obj, struct ndk_listener, obj));
}

/* The listener's rdma_cm events (see ndk_cm_handler()). */
static int ndk_listener_cm_event(struct ndk_obj *obj, struct rdma_cm_id *id,
				 struct rdma_cm_event *ev)
{
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return 0;
	return ndk_listener_request(container_of(obj, struct ndk_listener, obj),
				    id, ev);
}

/*
 * Not inside ndk's rdma_cm handler, whose id's lock rdma_destroy_id()
 * would take as a second of its class (also after a failed create).
 */
static bool ndk_listener_inline_ok(struct ndk_obj *obj)
{
	return !ndk_cm_handler_id();
}

static const struct ndk_obj_ops ndk_listener_ops = {
	.close = ndk_listener_close,
	.create = ndk_listener_create,
	.destroy = ndk_listener_destroy,
	.free = ndk_listener_free,
	.cm_event = ndk_listener_cm_event,
	.inline_ok = ndk_listener_inline_ok,
};

/**
 * ndk_create_listener() - NdkCreateListener
 * @pNdkAdapter: the adapter
 * @ConnectEvent: called with a new connector for each incoming request
 * @ConnectEventContext: its context
 * @CreateCompletion: called with the new listener, from ndk_wq, when the
 *	creation pends
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkListener: receives the listener when the creation completes inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, outside ndk's rdma_cm handler, and with @ppNdkListener
 * given, the listener is created inline.
 *
 * Return: STATUS_SUCCESS (created inline), STATUS_PENDING,
 * STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES, or the
 * failure of an inline creation.
 */
NTSTATUS ndk_create_listener(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
			     PVOID ConnectEventContext,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext,
			     NDK_LISTENER **ppNdkListener)
{
	struct ndk_adapter *adapter;
	struct ndk_listener *l;
	NTSTATUS status;

	if (!pNdkAdapter || !ConnectEvent || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	adapter = container_of(pNdkAdapter, struct ndk_adapter, ndk);
	l = NDK_FI_NULL(kzalloc(sizeof(*l), GFP_ATOMIC));
	if (!l)
		return STATUS_INSUFFICIENT_RESOURCES;
	l->ndk.Dispatch = &ndk_listener_dispatch;
	l->event_cb = ConnectEvent;
	l->event_ctx = ConnectEventContext;
	INIT_WORK(&l->work, ndk_listen_work);
	ndk_obj_init(&l->obj, &l->ndk.Header, NdkObjectTypeListener,
		     &ndk_listener_ops, &adapter->obj);
	status = ndk_obj_create(&l->obj, CreateCompletion, RequestContext,
				!!ppNdkListener);
	if (status == STATUS_SUCCESS)
		*ppNdkListener = &l->ndk;
	return status;
}
