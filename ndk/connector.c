// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_CONNECTOR: the object, its dispatch table and the consumer's calls.
 * The handshake they start, its bounds and the connector's rdma_cm
 * events are in handshake.c; the rdma_cm plumbing shared with the
 * listener and the shared endpoint is in cm.c.
 */
#include "ndk_priv.h"
#include "connector.h"
#include "trace.h"

static struct ndk_connector *to_conn(NDK_CONNECTOR *c)
{
	return container_of(c, struct ndk_connector, ndk);
}

/* Common checks of Connect and Accept: QP, limits, private data. */
static NTSTATUS ndk_conn_prepare(struct ndk_connector *conn, NDK_QP *pNdkQp,
				 ULONG ird, ULONG ord, const void *pdata,
				 ULONG pdata_len, ULONG pdata_max)
{
	const NDK_ADAPTER_INFO *info = &conn->obj.adapter->info;
	struct ndk_qp *qp;

	if (!pNdkQp || pNdkQp->Header.ObjectType != NdkObjectTypeQp)
		return STATUS_INVALID_PARAMETER;
	qp = container_of(pNdkQp, struct ndk_qp, ndk);
	/*
	 * Any open instance of the same device and port will do: consumers
	 * such as Microsoft's RdmaSample open the adapter once per socket and
	 * accept a listener's connector with the socket's own QP.
	 */
	if (qp->obj.adapter->dev != conn->obj.adapter->dev ||
	    qp->obj.adapter->port != conn->obj.adapter->port || conn->qp ||
	    READ_ONCE(qp->obj.state) != NDK_OBJ_LIVE || READ_ONCE(qp->conn))
		return STATUS_INVALID_PARAMETER;
	if (pdata_len > pdata_max || (pdata_len && !pdata))
		return STATUS_INVALID_BUFFER_SIZE;
	if (ndk_pdata_set(&conn->pdata, pdata, pdata_len, GFP_ATOMIC))
		return STATUS_INSUFFICIENT_RESOURCES;

	conn->ird = min_t(ULONG, ird, min_t(ULONG, info->MaxInboundReadLimit,
					    U8_MAX));
	conn->ord = min_t(ULONG, ord, min_t(ULONG, info->MaxOutboundReadLimit,
					    U8_MAX));
	conn->pdata_len = pdata_len;
	return STATUS_SUCCESS;
}

/*
 * Associate the QP with the connection for as long as the connector
 * lives; a QP serves one connection at a time.
 */
static void ndk_conn_take_qp(struct ndk_connector *conn, NDK_QP *pNdkQp)
{
	conn->qp = container_of(pNdkQp, struct ndk_qp, ndk);
	WRITE_ONCE(conn->qp->conn, conn);
	ndk_obj_get(&conn->qp->obj);
}

/*
 * The consumer has answered a request that a listener handed out: it
 * accepted, rejected or closed the connector. Its place in the
 * listener's backlog is free for the next request.
 */
static void ndk_conn_answered(struct ndk_connector *conn)
{
	struct ndk_listener *l;
	unsigned long flags;
	bool queued;

	spin_lock_irqsave(&conn->lock, flags);
	queued = conn->queued;
	conn->queued = false;
	spin_unlock_irqrestore(&conn->lock, flags);
	if (!queued)
		return;
	l = container_of(conn->obj.extra[0], struct ndk_listener, obj);
	atomic_dec(&l->unanswered);
}

/* Start the active side: bind @src, then resolve, route and connect. */
static NTSTATUS ndk_connect_start(struct ndk_connector *conn, NDK_QP *pNdkQp,
				  const struct sockaddr *src, ULONG slen,
				  const PSOCKADDR pDestAddress,
				  ULONG DestAddressLength, ULONG ird, ULONG ord,
				  const void *pdata, ULONG pdata_len,
				  struct ndk_sep *sep,
				  NDK_FN_REQUEST_COMPLETION RequestCompletion,
				  PVOID RequestContext)
{
	ULONG dlen = ndk_addr_len(pDestAddress, DestAddressLength);
	NTSTATUS status;

	if (!RequestCompletion || !slen || !dlen ||
	    src->sa_family != pDestAddress->sa_family)
		return STATUS_INVALID_PARAMETER;
	if (READ_ONCE(conn->state) != NDK_CONN_IDLE)
		return STATUS_CONNECTION_INVALID;
	status = ndk_conn_prepare(conn, pNdkQp, ird, ord, pdata, pdata_len,
				  conn->obj.adapter->info.MaxCallerData);
	if (status)
		return status;
	/* Ids of a shared endpoint's connectors share its port. */
	if (sep && rdma_set_reuseaddr(conn->id, 1))
		return STATUS_INVALID_DEVICE_STATE;
	memcpy(&conn->src, src, slen);
	memcpy(&conn->dst, pDestAddress, dlen);
	if (sep) {
		status = ndk_sep_add_conn(sep, conn);
		if (status)
			return status;
	}
	status = ndk_conn_begin(conn, NDK_CONN_IDLE, NDK_CONN_CONNECTING,
				RequestCompletion, RequestContext);
	if (status != STATUS_PENDING) {
		ndk_sep_del_conn(conn);
		conn->sep = NULL;
		return status;
	}
	if (sep)
		ndk_obj_add_antecedent(&conn->obj, &sep->obj);
	ndk_conn_take_qp(conn, pNdkQp);
	ndk_stat_inc(conn->obj.adapter, NDK_STAT_CONNECTS);
	return ndk_conn_run(conn);
}

static NTSTATUS ndk_connect_common(struct ndk_connector *conn, NDK_QP *pNdkQp,
				   const struct sockaddr *src, ULONG slen,
				   const PSOCKADDR pDestAddress,
				   ULONG DestAddressLength, ULONG ird, ULONG ord,
				   const void *pdata, ULONG pdata_len,
				   struct ndk_sep *sep,
				   NDK_FN_REQUEST_COMPLETION RequestCompletion,
				   PVOID RequestContext)
{
	NTSTATUS status;

	if (ndk_adapter_dead(conn->obj.adapter))
		return STATUS_DEVICE_REMOVED;
	ndk_obj_get(&conn->obj);
	status = ndk_connect_start(conn, pNdkQp, src, slen, pDestAddress,
				   DestAddressLength, ird, ord, pdata,
				   pdata_len, sep, RequestCompletion,
				   RequestContext);
	trace_ndk_connect(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static NTSTATUS ndk_connect(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
			    const PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
			    const PSOCKADDR pDestAddress,
			    ULONG DestAddressLength, ULONG InboundReadLimit,
			    ULONG OutboundReadLimit, const PVOID pPrivateData,
			    ULONG PrivateDataLength,
			    NDK_FN_REQUEST_COMPLETION RequestCompletion,
			    PVOID RequestContext)
{
	return ndk_connect_common(to_conn(pNdkConnector), pNdkQp, pSrcAddress,
				  ndk_addr_len(pSrcAddress, SrcAddressLength),
				  pDestAddress, DestAddressLength,
				  InboundReadLimit, OutboundReadLimit,
				  pPrivateData, PrivateDataLength, NULL,
				  RequestCompletion, RequestContext);
}

static NTSTATUS ndk_connect_with_shared_endpoint(NDK_CONNECTOR *pNdkConnector,
						 NDK_QP *pNdkQp,
						 NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
						 const PSOCKADDR pDestAddress,
						 ULONG DestAddressLength,
						 ULONG InboundReadLimit,
						 ULONG OutboundReadLimit,
						 const PVOID pPrivateData,
						 ULONG PrivateDataLength,
						 NDK_FN_REQUEST_COMPLETION RequestCompletion,
						 PVOID RequestContext)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	struct ndk_sep *sep = ndk_sep_of(pNdkSharedEndpoint,
					 conn->obj.adapter);
	struct sockaddr *src;

	if (!sep)
		return STATUS_INVALID_PARAMETER;
	src = (struct sockaddr *)&sep->addr;
	return ndk_connect_common(conn, pNdkQp, src,
				  ndk_addr_len(src, sizeof(sep->addr)),
				  pDestAddress, DestAddressLength,
				  InboundReadLimit, OutboundReadLimit,
				  pPrivateData, PrivateDataLength, sep,
				  RequestCompletion, RequestContext);
}

static NTSTATUS ndk_complete_connect_common(struct ndk_connector *conn,
					    NDK_FN_DISCONNECT_EVENT_CALLBACK cb,
					    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex,
					    PVOID ctx,
					    NDK_FN_REQUEST_COMPLETION RequestCompletion,
					    PVOID RequestContext)
{
	NTSTATUS status = STATUS_INVALID_PARAMETER;

	ndk_obj_get(&conn->obj);
	if (RequestCompletion)
		status = ndk_conn_begin(conn, NDK_CONN_CONNECTED,
					NDK_CONN_COMPLETING, RequestCompletion,
					RequestContext);
	if (status == STATUS_PENDING) {
		conn->disc_cb = cb;
		conn->disc_cb_ex = cb_ex;
		conn->disc_ctx = ctx;
		status = ndk_conn_run(conn);
	}
	trace_ndk_complete_connect(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static NTSTATUS ndk_complete_connect(NDK_CONNECTOR *pNdkConnector,
				     NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
				     PVOID DisconnectEventContext,
				     NDK_FN_REQUEST_COMPLETION RequestCompletion,
				     PVOID RequestContext)
{
	return ndk_complete_connect_common(to_conn(pNdkConnector), DisconnectEvent, NULL,
					   DisconnectEventContext,
					   RequestCompletion, RequestContext);
}

static NTSTATUS ndk_complete_connect_ex(NDK_CONNECTOR *pNdkConnector,
					NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
					PVOID DisconnectEventContext,
					NDK_FN_REQUEST_COMPLETION RequestCompletion,
					PVOID RequestContext)
{
	return ndk_complete_connect_common(to_conn(pNdkConnector), NULL, DisconnectEvent,
					   DisconnectEventContext,
					   RequestCompletion, RequestContext);
}

static NTSTATUS ndk_accept_start(struct ndk_connector *conn, NDK_QP *pNdkQp,
				 ULONG ird, ULONG ord, const void *pdata,
				 ULONG pdata_len,
				 NDK_FN_DISCONNECT_EVENT_CALLBACK cb,
				 NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex,
				 PVOID ctx,
				 NDK_FN_REQUEST_COMPLETION RequestCompletion,
				 PVOID RequestContext)
{
	u8 need_ird = conn->ird, allow_ord = conn->ord;
	NTSTATUS status;

	if (!RequestCompletion)
		return STATUS_INVALID_PARAMETER;
	if (READ_ONCE(conn->state) == NDK_CONN_DONE)
		return STATUS_CONNECTION_ABORTED;
	if (READ_ONCE(conn->state) != NDK_CONN_REQUESTED)
		return STATUS_CONNECTION_INVALID;
	status = ndk_conn_prepare(conn, pNdkQp, ird, ord, pdata, pdata_len,
				  conn->obj.adapter->info.MaxCalleeData);
	if (status)
		return status;
	/* The request carried the peer's limits: cap ours by them. */
	conn->ird = min(conn->ird, need_ird);
	conn->ord = min(conn->ord, allow_ord);
	status = ndk_conn_begin(conn, NDK_CONN_REQUESTED, NDK_CONN_ACCEPTING,
				RequestCompletion, RequestContext);
	if (status != STATUS_PENDING)
		return status;
	conn->disc_cb = cb;
	conn->disc_cb_ex = cb_ex;
	conn->disc_ctx = ctx;
	ndk_conn_answered(conn);
	ndk_conn_take_qp(conn, pNdkQp);
	ndk_stat_inc(conn->obj.adapter, NDK_STAT_ACCEPTS);
	return ndk_conn_run(conn);
}

static NTSTATUS ndk_accept_common(struct ndk_connector *conn, NDK_QP *pNdkQp,
				  ULONG ird, ULONG ord, const void *pdata,
				  ULONG pdata_len,
				  NDK_FN_DISCONNECT_EVENT_CALLBACK cb,
				  NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex,
				  PVOID ctx,
				  NDK_FN_REQUEST_COMPLETION RequestCompletion,
				  PVOID RequestContext)
{
	NTSTATUS status;

	if (ndk_adapter_dead(conn->obj.adapter))
		return STATUS_DEVICE_REMOVED;
	ndk_obj_get(&conn->obj);
	status = ndk_accept_start(conn, pNdkQp, ird, ord, pdata, pdata_len,
				  cb, cb_ex, ctx, RequestCompletion,
				  RequestContext);
	trace_ndk_accept(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static NTSTATUS ndk_accept(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
			   ULONG InboundReadLimit, ULONG OutboundReadLimit,
			   const PVOID pPrivateData, ULONG PrivateDataLength,
			   NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
			   PVOID DisconnectEventContext,
			   NDK_FN_REQUEST_COMPLETION RequestCompletion,
			   PVOID RequestContext)
{
	return ndk_accept_common(to_conn(pNdkConnector), pNdkQp,
				 InboundReadLimit, OutboundReadLimit,
				 pPrivateData, PrivateDataLength, DisconnectEvent, NULL,
				 DisconnectEventContext, RequestCompletion,
				 RequestContext);
}

static NTSTATUS ndk_accept_ex(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
			      ULONG InboundReadLimit, ULONG OutboundReadLimit,
			      const PVOID pPrivateData, ULONG PrivateDataLength,
			      NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
			      PVOID DisconnectEventContext,
			      NDK_FN_REQUEST_COMPLETION RequestCompletion,
			      PVOID RequestContext)
{
	return ndk_accept_common(to_conn(pNdkConnector), pNdkQp,
				 InboundReadLimit, OutboundReadLimit,
				 pPrivateData, PrivateDataLength, NULL, DisconnectEvent,
				 DisconnectEventContext, RequestCompletion,
				 RequestContext);
}

/* Refuse a request; the reject itself is sent from ndk_wq. */
static NTSTATUS ndk_reject(NDK_CONNECTOR *pNdkConnector,
			   const PVOID pPrivateData, ULONG PrivateDataLength)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	unsigned long flags;
	u8 *pdata = NULL;

	if (PrivateDataLength > conn->obj.adapter->info.MaxCalleeData ||
	    (PrivateDataLength && !pPrivateData))
		return STATUS_INVALID_BUFFER_SIZE;
	if (ndk_pdata_set(&pdata, pPrivateData, PrivateDataLength, GFP_ATOMIC))
		return STATUS_INSUFFICIENT_RESOURCES;
	spin_lock_irqsave(&conn->lock, flags);
	if (conn->state != NDK_CONN_REQUESTED) {
		spin_unlock_irqrestore(&conn->lock, flags);
		kfree(pdata);
		return conn->state == NDK_CONN_DONE ? STATUS_CONNECTION_ABORTED :
						      STATUS_CONNECTION_INVALID;
	}
	swap(conn->pdata, pdata);
	conn->pdata_len = PrivateDataLength;
	conn->state = NDK_CONN_REJECTING;
	spin_unlock_irqrestore(&conn->lock, flags);
	kfree(pdata);
	ndk_conn_answered(conn);
	ndk_obj_get(&conn->obj);
	queue_work(ndk_wq, &conn->work);
	return STATUS_SUCCESS;
}

/* The RDS protocol of the NdkGetConnectionData page. */
static NTSTATUS ndk_get_connection_data(NDK_CONNECTOR *pNdkConnector,
					ULONG *pInboundReadLimit,
					ULONG *pOutboundReadLimit,
					PVOID pPrivateData,
					ULONG *pPrivateDataLength)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	ULONG have, n, kept;

	if (!pPrivateDataLength || (!pPrivateData && *pPrivateDataLength))
		return STATUS_INVALID_PARAMETER;
	if (READ_ONCE(conn->state) == NDK_CONN_IDLE ||
	    READ_ONCE(conn->state) == NDK_CONN_CONNECTING)
		return STATUS_CONNECTION_INVALID;
	if (pInboundReadLimit)
		*pInboundReadLimit = conn->ird;
	if (pOutboundReadLimit)
		*pOutboundReadLimit = conn->ord;
	have = *pPrivateDataLength;
	*pPrivateDataLength = conn->rds;
	/* A NULL buffer of length zero asks for the RDS only. */
	if (!pPrivateData)
		return STATUS_SUCCESS;
	n = min_t(ULONG, have, conn->rds);
	kept = min_t(ULONG, n, conn->peer_len);
	if (kept)
		memcpy(pPrivateData, conn->peer_pdata, kept);
	memset((u8 *)pPrivateData + kept, 0, n - kept);
	return have >= conn->rds ? STATUS_SUCCESS : STATUS_BUFFER_TOO_SMALL;
}

/*
 * One of the connection's addresses as rdma_cm has it; once a timeout
 * has destroyed the id, the copy taken just before. The lock keeps the
 * id from going away during the copy.
 */
static NTSTATUS ndk_conn_addr(struct ndk_connector *conn, bool local,
			      PSOCKADDR pAddress, ULONG *pAddressLength)
{
	union ndk_sockaddr addr;
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->id)
		memcpy(&addr, local ? &conn->id->route.addr.src_addr :
				      &conn->id->route.addr.dst_addr,
		       sizeof(addr));
	else
		addr = local ? conn->src : conn->dst;
	spin_unlock_irqrestore(&conn->lock, flags);
	return ndk_copy_addr(&addr.sa, pAddress, pAddressLength);
}

static NTSTATUS ndk_conn_get_local_address(NDK_CONNECTOR *pNdkConnector,
					   PSOCKADDR pAddress,
					   ULONG *pAddressLength)
{
	return ndk_conn_addr(to_conn(pNdkConnector), true, pAddress,
			     pAddressLength);
}

static NTSTATUS ndk_conn_get_peer_address(NDK_CONNECTOR *pNdkConnector,
					  PSOCKADDR pAddress,
					  ULONG *pAddressLength)
{
	return ndk_conn_addr(to_conn(pNdkConnector), false, pAddress,
			     pAddressLength);
}

/* Graceful disconnect; completes when rdma_cm reports the disconnection. */
static NTSTATUS ndk_disconnect(NDK_CONNECTOR *pNdkConnector,
			       NDK_FN_REQUEST_COMPLETION RequestCompletion,
			       PVOID RequestContext)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	NTSTATUS status;

	if (!RequestCompletion)
		return STATUS_INVALID_PARAMETER;
	status = ndk_conn_begin(conn, NDK_CONN_ESTABLISHED,
				NDK_CONN_DISCONNECTING, RequestCompletion,
				RequestContext);
	/*
	 * Already disconnected by the peer, also while this call ran (the
	 * state is read under the lock): nothing left to do.
	 */
	if (status == STATUS_CONNECTION_ABORTED)
		return STATUS_SUCCESS;
	if (status == STATUS_PENDING)
		status = ndk_conn_run(conn);
	return status;
}

/* The dispatch entries of NdkReject and NdkDisconnect, traced. */
static NTSTATUS ndk_reject_traced(NDK_CONNECTOR *pNdkConnector,
				  const PVOID pPrivateData,
				  ULONG PrivateDataLength)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	NTSTATUS status;

	ndk_obj_get(&conn->obj);
	status = ndk_reject(pNdkConnector, pPrivateData, PrivateDataLength);
	if (status == STATUS_SUCCESS)
		ndk_stat_inc(conn->obj.adapter, NDK_STAT_REJECTS);
	trace_ndk_reject(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static NTSTATUS ndk_disconnect_traced(NDK_CONNECTOR *pNdkConnector,
				      NDK_FN_REQUEST_COMPLETION RequestCompletion,
				      PVOID RequestContext)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	NTSTATUS status;

	ndk_obj_get(&conn->obj);
	status = ndk_disconnect(pNdkConnector, RequestCompletion,
				RequestContext);
	trace_ndk_disconnect(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static const NDK_CONNECTOR_DISPATCH ndk_connector_dispatch = {
	.NdkCloseConnector = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkConnect = ndk_connect,
	.NdkConnectWithSharedEndpoint = ndk_connect_with_shared_endpoint,
	.NdkCompleteConnect = ndk_complete_connect,
	.NdkAccept = ndk_accept,
	.NdkReject = ndk_reject_traced,
	.NdkGetConnectionData = ndk_get_connection_data,
	.NdkGetLocalAddress = ndk_conn_get_local_address,
	.NdkGetPeerAddress = ndk_conn_get_peer_address,
	.NdkDisconnect = ndk_disconnect_traced,
	.NdkCompleteConnectEx = ndk_complete_connect_ex,
	.NdkAcceptEx = ndk_accept_ex,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_connector);

static NTSTATUS ndk_conn_create(struct ndk_obj *obj)
{
	struct ndk_connector *conn = container_of(obj, struct ndk_connector,
						  obj);

	return ndk_cm_create_id(conn, &conn->id);
}

/*
 * An iWARP id whose accept is open (struct ndk_connector.accept_open):
 * iw_cm destroys it only once siw reports the connection established,
 * and for a request that asks for RTR that is when the peer's first
 * frame comes, for good if it never does. Its destruction goes to
 * ndk_wq, and nobody waits for it. Allocated with the connector, so that
 * the close cannot fail.
 * @qp: the connection's QP: iw_cm holds it, and moving it to the error
 *	state before the transport settled ends in a BUG() in iw_cm
 *	(deviations.rst); flushed and released after the destruction.
 *
 * A connect in flight is destroyed in place: iw_cm waits there until the
 * transport gives up (siw's MPA reply timeout, or TCP's connect timeout),
 * a bound, and the peer then sees the connection fail before the close
 * completes.
 */
struct ndk_conn_orphan {
	struct work_struct work;
	struct rdma_cm_id *id;
	struct ndk_qp *qp;
};

static void ndk_conn_orphan_work(struct work_struct *work)
{
	struct ndk_conn_orphan *o = container_of(work, struct ndk_conn_orphan,
						 work);

	rdma_destroy_id(o->id);
	if (o->qp) {
		ndk_qp_set_error(o->qp);
		ndk_obj_put_may_sleep(&o->qp->obj);
	}
	kfree(o);
}

/*
 * End @conn's use of @id, which it no longer holds. Destroying the id
 * waits for a running event handler and ends the connection on the wire
 * (a request never answered is rejected, one in flight abandoned). While
 * an iWARP accept is open, iw_cm would make that wait for the peer, so
 * the id is disowned instead: under its handler lock no event reaches
 * @conn any more (see ndk_cm_handler()), and ndk_wq destroys it. That
 * holds whether the close or the accept's bound ended the accept, which
 * is why @conn->accept_open, not @conn->state (the bound sets DONE),
 * decides. The caller flushes the QP unless this left that to the
 * orphan's work (@conn->flushed set).
 */
static void ndk_conn_drop_id(struct ndk_connector *conn, struct rdma_cm_id *id)
{
	struct ndk_conn_orphan *o = conn->orphan;
	bool open = false;

	if (o) {
		rdma_lock_handler(id);
		open = conn->accept_open;
		if (open)
			id->context = NULL;
		rdma_unlock_handler(id);
	}
	if (!open) {
		rdma_destroy_id(id);
		return;
	}
	conn->orphan = NULL;
	o->id = id;
	if (conn->qp && !conn->flushed) {
		ndk_obj_get(&conn->qp->obj);
		o->qp = conn->qp;
		conn->flushed = true;
	}
	INIT_WORK(&o->work, ndk_conn_orphan_work);
	queue_work(ndk_wq, &o->work);
}

/*
 * The bound of a connect or accept expired (see ndk_conn_timer()):
 * complete the request, then end the connection attempt. The completion
 * comes first because destroying an iWARP id whose connect is still in
 * flight waits until the transport itself gives up, see
 * ndk_conn_drop_id(). The destruction makes the connection manager tell
 * the peer (a reject on IB and RoCE), and afterwards no event of the id
 * reaches the connector. The addresses stay readable from the copies
 * NdkGetLocalAddress and NdkGetPeerAddress fall back to.
 */
static void ndk_conn_timed_out(struct ndk_connector *conn)
{
	struct rdma_cm_id *id;
	unsigned long flags;

	ndk_stat_inc(conn->obj.adapter, NDK_STAT_CONNECT_FAILURES);
	trace_ndk_callback(NDK_CB_REQUEST, NdkObjectTypeConnector, conn->obj.id,
			   STATUS_IO_TIMEOUT);
	conn->tmo_cb(conn->tmo_ctx, STATUS_IO_TIMEOUT);

	spin_lock_irqsave(&conn->lock, flags);
	id = conn->id;
	memcpy(&conn->src, &id->route.addr.src_addr, sizeof(conn->src));
	memcpy(&conn->dst, &id->route.addr.dst_addr, sizeof(conn->dst));
	conn->id = NULL;
	spin_unlock_irqrestore(&conn->lock, flags);
	ndk_conn_drop_id(conn, id);
	if (!conn->flushed)
		ndk_conn_flush_qp(conn);
}

static void ndk_conn_timeout_work(struct work_struct *work)
{
	struct ndk_connector *conn = container_of(work, struct ndk_connector,
						  timeout_work);

	ndk_conn_timed_out(conn);
	/* The expired request's reference, usually not the last one. */
	ndk_obj_put_may_sleep(&conn->obj);
}

/*
 * Close cancels whatever is pending: the id goes (ndk_conn_drop_id()),
 * the pending request completes as cancelled and the QP is flushed. The
 * close completes once that request's reference is gone too.
 */
static void ndk_conn_cancel(struct ndk_connector *conn)
{
	bool rejecting = READ_ONCE(conn->state) == NDK_CONN_REJECTING;

	/*
	 * No bound expires from now on. One that has expired is finished
	 * here if its work had not started yet, else waited for: it owns
	 * the id until then.
	 */
	timer_shutdown_sync(&conn->timer);
	if (cancel_work_sync(&conn->timeout_work)) {
		ndk_conn_timed_out(conn);
		ndk_obj_put(&conn->obj);
	}
	/*
	 * Only the consumer queues @work, so once it is idle nothing but the
	 * event handler, which rdma_destroy_id() waits for, uses the id.
	 */
	if (cancel_work_sync(&conn->work) && rejecting)
		ndk_obj_put(&conn->obj);
	if (conn->id) {
		ndk_conn_drop_id(conn, conn->id);
		conn->id = NULL;
	}
	/*
	 * A QP already in the error state (after a disconnect or a failure
	 * event, whose handlers are over now) flushes whatever is posted to
	 * it from then on: moving it there again would change nothing.
	 */
	if (!conn->flushed)
		ndk_conn_flush_qp(conn);
	ndk_conn_finish(conn, NDK_CONN_DONE, STATUS_CANCELLED);
}

static void ndk_conn_cancel_work(struct work_struct *work)
{
	struct ndk_connector *conn = container_of(work, struct ndk_connector,
						  cancel_work);

	ndk_conn_cancel(conn);
	/* Usually the last reference: finish the close here, not in one more work item. */
	ndk_obj_put_may_sleep(&conn->obj);
}

/*
 * True if the close may wait for the connector's event handler and work
 * items in the caller: it may sleep, is no rdma_cm handler (whose lock
 * the id's destruction takes), and no consumer code about the connector
 * runs or can start any more. A connection that is over, or never began,
 * calls nothing back: no request is pending, no bound has expired, and
 * the disconnect event has been delivered.
 */
static bool ndk_conn_quiet(struct ndk_connector *conn)
{
	unsigned long flags;
	bool quiet;

	if (!ndk_caller_may_sleep() || ndk_cm_handler_id())
		return false;
	spin_lock_irqsave(&conn->lock, flags);
	quiet = (conn->state == NDK_CONN_DONE ||
		 conn->state == NDK_CONN_IDLE) && !conn->req_cb &&
		!conn->callbacks && conn->bound != NDK_BOUND_EXPIRED;
	spin_unlock_irqrestore(&conn->lock, flags);
	return quiet;
}

/*
 * Cancel in the caller where that cannot wait for consumer code (see
 * ndk_obj_close(), which then finishes the close inline), else in the
 * cancel work, which holds a reference.
 */
static void ndk_conn_close(struct ndk_obj *obj)
{
	struct ndk_connector *conn = container_of(obj, struct ndk_connector,
						  obj);

	ndk_conn_answered(conn);
	if (ndk_conn_quiet(conn)) {
		ndk_conn_cancel(conn);
		return;
	}
	ndk_obj_get(obj);
	queue_work(ndk_wq, &conn->cancel_work);
}

/*
 * The close's cancel work has already destroyed the id and flushed the
 * QP; a connector whose creation failed never had either.
 */
static void ndk_conn_destroy(struct ndk_obj *obj)
{
	struct ndk_connector *conn = container_of(obj, struct ndk_connector,
						  obj);

	ndk_sep_del_conn(conn);
	if (conn->qp) {
		WRITE_ONCE(conn->qp->conn, NULL);
		ndk_obj_put(&conn->qp->obj);
	}
}

static void ndk_conn_free(struct ndk_obj *obj)
{
	struct ndk_connector *conn = container_of(obj, struct ndk_connector,
						  obj);

	kfree(conn->orphan);
	kfree(conn->pdata);
	kfree(conn->peer_pdata);
	kmem_cache_free(ndk_conn_cache, conn);
}

static const struct ndk_obj_ops ndk_conn_ops = {
	.close = ndk_conn_close,
	.create = ndk_conn_create,
	.destroy = ndk_conn_destroy,
	.free = ndk_conn_free,
	.cm_event = ndk_conn_cm_event,
};

/**
 * ndk_connector_alloc() - a connector not yet tied to an rdma_cm id
 * @adapter: its adapter
 * @req: an incoming request whose private data the connector keeps, or
 *	NULL
 * @gfp: allocation context
 *
 * Return: the connector, or NULL.
 */
struct ndk_connector *ndk_connector_alloc(struct ndk_adapter *adapter,
					  const struct rdma_conn_param *req,
					  gfp_t gfp)
{
	struct ndk_connector *conn;

	conn = NDK_FI_NULL(kmem_cache_zalloc(ndk_conn_cache, gfp));
	if (!conn)
		return NULL;
	if (req && req->private_data &&
	    ndk_peer_pdata_set(conn, req->private_data,
			       min_t(u32, req->private_data_len,
				     NDK_PDATA_MAX), gfp)) {
		kmem_cache_free(ndk_conn_cache, conn);
		return NULL;
	}
	conn->iwarp = rdma_protocol_iwarp(adapter->ibdev, adapter->port);
	if (conn->iwarp) {
		conn->orphan = NDK_FI_NULL(kzalloc(sizeof(*conn->orphan), gfp));
		if (!conn->orphan) {
			kfree(conn->peer_pdata);
			kmem_cache_free(ndk_conn_cache, conn);
			return NULL;
		}
	}
	conn->ndk.Dispatch = &ndk_connector_dispatch;
	conn->state = NDK_CONN_IDLE;
	spin_lock_init(&conn->lock);
	INIT_WORK(&conn->work, ndk_conn_work);
	INIT_WORK(&conn->cancel_work, ndk_conn_cancel_work);
	INIT_WORK(&conn->timeout_work, ndk_conn_timeout_work);
	timer_setup(&conn->timer, ndk_conn_timer, 0);
	ndk_obj_init(&conn->obj, &conn->ndk.Header, NdkObjectTypeConnector,
		     &ndk_conn_ops, &adapter->obj);
	return conn;
}

/**
 * ndk_create_connector() - NdkCreateConnector
 * @pNdkAdapter: the adapter
 * @CreateCompletion: called with the new connector, from ndk_wq
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkConnector: receives the connector when the creation completes
 *	inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, and @ppNdkConnector is given, the connector is created
 * inline.
 *
 * Return: STATUS_SUCCESS (created inline), STATUS_PENDING,
 * STATUS_INVALID_PARAMETER or STATUS_INSUFFICIENT_RESOURCES.
 */
NTSTATUS ndk_create_connector(NDK_ADAPTER *pNdkAdapter,
			      NDK_FN_CREATE_COMPLETION CreateCompletion,
			      PVOID RequestContext,
			      NDK_CONNECTOR **ppNdkConnector)
{
	struct ndk_connector *conn;
	NTSTATUS status;

	if (!pNdkAdapter || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	conn = ndk_connector_alloc(container_of(pNdkAdapter,
						struct ndk_adapter, ndk),
				   NULL, GFP_ATOMIC);
	if (!conn)
		return STATUS_INSUFFICIENT_RESOURCES;
	status = ndk_obj_create(&conn->obj, CreateCompletion, RequestContext,
				!!ppNdkConnector);
	if (status == STATUS_SUCCESS)
		*ppNdkConnector = &conn->ndk;
	return status;
}

/**
 * ndk_connector_adopt() - give an incoming request's id to a connector
 * @conn: a connector from ndk_connector_alloc() with the request's
 *	private data
 * @listener: the listener that heard the request, holding a reference,
 *	whose count of unanswered requests already includes this one
 * @id: the new id of the request
 * @ev: the connect request event
 *
 * Called from the rdma_cm handler of @id. From now on @id's events go to
 * @conn, which the consumer may accept or reject; @listener outlives it,
 * and it takes a place of @listener's backlog until the consumer answers.
 */
void ndk_connector_adopt(struct ndk_connector *conn,
			 struct ndk_listener *listener, struct rdma_cm_id *id,
			 struct rdma_cm_event *ev)
{
	const NDK_ADAPTER_INFO *info = &conn->obj.adapter->info;

	/* The first further antecedent: ndk_conn_answered() finds it there. */
	ndk_obj_add_antecedent(&conn->obj, &listener->obj);
	conn->queued = true;
	conn->id = id;
	id->context = conn;
	ndk_conn_note_addrs(conn, id);
	/*
	 * From our side: the reads the peer will issue and the reads it
	 * allows us; NdkAccept caps the consumer's limits by them.
	 */
	conn->ird = min_t(u32, ev->param.conn.responder_resources,
			  info->MaxInboundReadLimit);
	conn->ord = min_t(u32, ev->param.conn.initiator_depth,
			  info->MaxOutboundReadLimit);
	conn->state = NDK_CONN_REQUESTED;
	/* The listener's connect event, see ndk_listener_request(). */
	conn->callbacks = 1;
	conn->obj.state = NDK_OBJ_LIVE;
}
