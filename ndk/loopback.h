/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Loopback connections of ndk's own (loopback.c), for the registration
 * path (reg.c) and the tests.
 */
#ifndef _NDK_PRIV_LOOPBACK_H
#define _NDK_PRIV_LOOPBACK_H

#include "adapter.h"

/**
 * struct ndk_loop_side - what rdma_cm reported to one end of an iWARP loop
 * @done: completed at each awaited event
 * @status: 0 or the failure the event carried
 * @passive: the accepted id (passive side)
 * @peer: the QP the passive side accepts with
 * @expect: the active id's address: the only request accepted
 */
struct ndk_loop_side {
	struct completion done;
	int status;
	struct rdma_cm_id *passive;
	struct ib_qp *peer;
	struct sockaddr_in expect;
};

/**
 * struct ndk_loop - a loopback connection (loopback.c)
 * @qp: the QP whose sends reach this adapter
 * @peer: iWARP: its other end (IB and RoCE: unused)
 * @id: iWARP: the active rdma_cm id owning @qp
 * @peer_id: iWARP: the passive id owning @peer
 * @act: iWARP: reports of @id
 * @pas: iWARP: reports of the listener and @peer_id
 */
struct ndk_loop {
	struct ib_qp *qp;
	struct ib_qp *peer;
	struct rdma_cm_id *id;
	struct rdma_cm_id *peer_id;
	struct ndk_loop_side act;
	struct ndk_loop_side pas;
};

int ndk_loop_connect(struct ndk_adapter *adapter, struct ndk_loop *loop);
void ndk_loop_disconnect(struct ndk_loop *loop);

#endif /* _NDK_PRIV_LOOPBACK_H */
