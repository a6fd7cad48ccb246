/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Tracepoints of the ndk provider (trace system "ndk"): object creation
 * and close, every consumer callback, the connection calls and rdma_cm
 * events, memory registration. Objects appear by their id, never by
 * address. The posting, polling and arming paths have none.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ndk

#ifndef _NDK_TRACE_KINDS
#define _NDK_TRACE_KINDS
/* Which consumer callback ndk is about to call. */
enum ndk_cb_kind {
	NDK_CB_CREATE,
	NDK_CB_REQUEST,
	NDK_CB_CLOSE,
	NDK_CB_CONNECT_EVENT,
	NDK_CB_DISCONNECT_EVENT,
	NDK_CB_CQ_NOTIFY,
	NDK_CB_SRQ_NOTIFY,
};
#endif

#if !defined(_NDK_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _NDK_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_cm.h>
#include <trace/misc/rdma.h>
#include "ndk_priv.h"

/* Export the enum values so that user space can decode the fields too. */
TRACE_DEFINE_ENUM(NdkObjectTypeAdapter);
TRACE_DEFINE_ENUM(NdkObjectTypeQp);
TRACE_DEFINE_ENUM(NdkObjectTypeCq);
TRACE_DEFINE_ENUM(NdkObjectTypeMr);
TRACE_DEFINE_ENUM(NdkObjectTypeMw);
TRACE_DEFINE_ENUM(NdkObjectTypePd);
TRACE_DEFINE_ENUM(NdkObjectTypeSharedEndpoint);
TRACE_DEFINE_ENUM(NdkObjectTypeConnector);
TRACE_DEFINE_ENUM(NdkObjectTypeListener);
TRACE_DEFINE_ENUM(NdkObjectTypeSrq);
TRACE_DEFINE_ENUM(NDK_CB_CREATE);
TRACE_DEFINE_ENUM(NDK_CB_REQUEST);
TRACE_DEFINE_ENUM(NDK_CB_CLOSE);
TRACE_DEFINE_ENUM(NDK_CB_CONNECT_EVENT);
TRACE_DEFINE_ENUM(NDK_CB_DISCONNECT_EVENT);
TRACE_DEFINE_ENUM(NDK_CB_CQ_NOTIFY);
TRACE_DEFINE_ENUM(NDK_CB_SRQ_NOTIFY);

#define ndk_show_obj_type(t)						\
	__print_symbolic(t,						\
		{ NdkObjectTypeAdapter, "adapter" },			\
		{ NdkObjectTypeQp, "qp" },				\
		{ NdkObjectTypeCq, "cq" },				\
		{ NdkObjectTypeMr, "mr" },				\
		{ NdkObjectTypeMw, "mw" },				\
		{ NdkObjectTypePd, "pd" },				\
		{ NdkObjectTypeSharedEndpoint, "shared_endpoint" },	\
		{ NdkObjectTypeConnector, "connector" },		\
		{ NdkObjectTypeListener, "listener" },			\
		{ NdkObjectTypeSrq, "srq" })

#define ndk_show_cb_kind(k)						\
	__print_symbolic(k,						\
		{ NDK_CB_CREATE, "create" },				\
		{ NDK_CB_REQUEST, "request" },				\
		{ NDK_CB_CLOSE, "close" },				\
		{ NDK_CB_CONNECT_EVENT, "connect_event" },		\
		{ NDK_CB_DISCONNECT_EVENT, "disconnect_event" },	\
		{ NDK_CB_CQ_NOTIFY, "cq_notify" },			\
		{ NDK_CB_SRQ_NOTIFY, "srq_notify" })

/* Room for either family; %pISpc prints whichever it holds. */
#define NDK_TRACE_ADDR_LEN	sizeof(struct sockaddr_in6)

TRACE_EVENT(ndk_object_create,
	TP_PROTO(u32 type, u32 id, u32 parent, NTSTATUS status),
	TP_ARGS(type, id, parent, status),
	TP_STRUCT__entry(
		__field(u32, type)
		__field(u32, id)
		__field(u32, parent)
		__field(u32, status)
	),
	TP_fast_assign(
		__entry->type = type;
		__entry->id = id;
		__entry->parent = parent;
		__entry->status = status;
	),
	TP_printk("%s id=%u parent=%u status=0x%08x",
		  ndk_show_obj_type(__entry->type), __entry->id,
		  __entry->parent, __entry->status)
);

DECLARE_EVENT_CLASS(ndk_obj_class,
	TP_PROTO(const struct ndk_obj *obj),
	TP_ARGS(obj),
	TP_STRUCT__entry(
		__field(u32, type)
		__field(u32, id)
	),
	TP_fast_assign(
		__entry->type = obj->hdr->ObjectType;
		__entry->id = obj->id;
	),
	TP_printk("%s id=%u", ndk_show_obj_type(__entry->type), __entry->id)
);

/* The consumer closed the object; the close completes later. */
DEFINE_EVENT(ndk_obj_class, ndk_object_close,
	TP_PROTO(const struct ndk_obj *obj),
	TP_ARGS(obj));

/* The last reference is gone: destruction starts, the close completion follows. */
DEFINE_EVENT(ndk_obj_class, ndk_close_done,
	TP_PROTO(const struct ndk_obj *obj),
	TP_ARGS(obj));

TRACE_EVENT(ndk_callback,
	TP_PROTO(enum ndk_cb_kind kind, u32 type, u32 id, NTSTATUS status),
	TP_ARGS(kind, type, id, status),
	TP_STRUCT__entry(
		__field(u32, kind)
		__field(u32, type)
		__field(u32, id)
		__field(u32, status)
	),
	TP_fast_assign(
		__entry->kind = kind;
		__entry->type = type;
		__entry->id = id;
		__entry->status = status;
	),
	TP_printk("%s %s id=%u status=0x%08x",
		  ndk_show_cb_kind(__entry->kind),
		  ndk_show_obj_type(__entry->type), __entry->id,
		  __entry->status)
);

/* A connector call returned @status; the addresses are the connector's. */
DECLARE_EVENT_CLASS(ndk_conn_class,
	TP_PROTO(const struct ndk_connector *conn, NTSTATUS status),
	TP_ARGS(conn, status),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, qp)
		__field(u32, status)
		__array(u8, src, NDK_TRACE_ADDR_LEN)
		__array(u8, dst, NDK_TRACE_ADDR_LEN)
	),
	TP_fast_assign(
		const struct ndk_qp *qp = READ_ONCE(conn->qp);

		__entry->conn = conn->obj.id;
		__entry->qp = qp ? qp->obj.id : 0;
		__entry->status = status;
		memcpy(__entry->src, &conn->src, NDK_TRACE_ADDR_LEN);
		memcpy(__entry->dst, &conn->dst, NDK_TRACE_ADDR_LEN);
	),
	TP_printk("conn=%u qp=%u src=%pISpc dst=%pISpc status=0x%08x",
		  __entry->conn, __entry->qp, __entry->src, __entry->dst,
		  __entry->status)
);

#define NDK_DEFINE_CONN_EVENT(name)					\
	DEFINE_EVENT(ndk_conn_class, name,				\
		TP_PROTO(const struct ndk_connector *conn, NTSTATUS status), \
		TP_ARGS(conn, status))

NDK_DEFINE_CONN_EVENT(ndk_connect);
NDK_DEFINE_CONN_EVENT(ndk_accept);
NDK_DEFINE_CONN_EVENT(ndk_complete_connect);
NDK_DEFINE_CONN_EVENT(ndk_reject);
NDK_DEFINE_CONN_EVENT(ndk_disconnect);

TRACE_EVENT(ndk_listen,
	TP_PROTO(const struct ndk_listener *l, NTSTATUS status),
	TP_ARGS(l, status),
	TP_STRUCT__entry(
		__field(u32, id)
		__field(u32, status)
		__array(u8, addr, NDK_TRACE_ADDR_LEN)
	),
	TP_fast_assign(
		__entry->id = l->obj.id;
		__entry->status = status;
		memcpy(__entry->addr, &l->addr, NDK_TRACE_ADDR_LEN);
	),
	TP_printk("listener=%u addr=%pISpc status=0x%08x", __entry->id,
		  __entry->addr, __entry->status)
);

/* An rdma_cm event reached the connector or listener @obj. */
TRACE_EVENT(ndk_cm_event,
	TP_PROTO(const struct ndk_obj *obj, const struct rdma_cm_event *ev),
	TP_ARGS(obj, ev),
	TP_STRUCT__entry(
		__field(u32, type)
		__field(u32, id)
		__field(u32, event)
		__field(int, status)
		__field(u8, pdata_len)
	),
	TP_fast_assign(
		__entry->type = obj->hdr->ObjectType;
		__entry->id = obj->id;
		__entry->event = ev->event;
		__entry->status = ev->status;
		__entry->pdata_len = ev->param.conn.private_data_len;
	),
	TP_printk("%s id=%u event=%s status=%d pdata_len=%u",
		  ndk_show_obj_type(__entry->type), __entry->id,
		  rdma_show_cm_event(__entry->event), __entry->status,
		  __entry->pdata_len)
);

DECLARE_EVENT_CLASS(ndk_mr_class,
	TP_PROTO(const struct ndk_mr *mr, u64 length, NTSTATUS status),
	TP_ARGS(mr, length, status),
	TP_STRUCT__entry(
		__field(u32, id)
		__field(u32, status)
		__field(u64, length)
	),
	TP_fast_assign(
		__entry->id = mr->obj.id;
		__entry->status = status;
		__entry->length = length;
	),
	TP_printk("mr=%u length=%llu status=0x%08x", __entry->id,
		  __entry->length, __entry->status)
);

DEFINE_EVENT(ndk_mr_class, ndk_register_mr,
	TP_PROTO(const struct ndk_mr *mr, u64 length, NTSTATUS status),
	TP_ARGS(mr, length, status));

DEFINE_EVENT(ndk_mr_class, ndk_deregister_mr,
	TP_PROTO(const struct ndk_mr *mr, u64 length, NTSTATUS status),
	TP_ARGS(mr, length, status));

#endif /* _NDK_TRACE_H */

/* Out of the kernel tree: trace.c is built with -I$(src). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
