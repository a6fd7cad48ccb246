/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Between connector.c (the object, the consumer's calls) and handshake.c
 * (the state machine they start): the calls go from the first to the
 * second only.
 */
#ifndef _NDK_PRIV_CONNECTOR_H
#define _NDK_PRIV_CONNECTOR_H

#include "cm.h"

int ndk_pdata_set(u8 **buf, const void *data, u32 len, gfp_t gfp);
u32 ndk_pdata_used(const u8 *data, u32 len);
int ndk_peer_pdata_set(struct ndk_connector *conn, const void *data,
		       u32 len, gfp_t gfp);
NTSTATUS ndk_conn_begin(struct ndk_connector *conn, enum ndk_conn_state from,
			enum ndk_conn_state to, NDK_FN_REQUEST_COMPLETION cb,
			void *ctx);
void ndk_conn_finish(struct ndk_connector *conn, enum ndk_conn_state state,
		     NTSTATUS status);
void ndk_conn_timer(struct timer_list *t);
void ndk_conn_flush_qp(struct ndk_connector *conn);
void ndk_conn_note_addrs(struct ndk_connector *conn, struct rdma_cm_id *id);
int ndk_conn_cm_event(struct ndk_obj *obj, struct rdma_cm_id *id,
		      struct rdma_cm_event *ev);
void ndk_conn_work(struct work_struct *work);
NTSTATUS ndk_conn_run(struct ndk_connector *conn);

#endif /* _NDK_PRIV_CONNECTOR_H */
