/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared pieces of the ndk KUnit suites: the suites, and helpers that
 * turn NDK's asynchronous completions into waits a test can make.
 */
#ifndef _NDK_TESTS_H
#define _NDK_TESTS_H

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/spinlock.h>
#include <ndk/ndk.h>
#include "ndk_priv.h"

extern struct kunit_suite ndk_header_suite;
extern struct kunit_suite ndk_status_suite;
extern struct kunit_suite ndk_adapter_suite;
extern struct kunit_suite ndk_pd_suite;
extern struct kunit_suite ndk_cq_suite;
extern struct kunit_suite ndk_qp_suite;
extern struct kunit_suite ndk_connector_suite;
extern struct kunit_suite ndk_listener_suite;
extern struct kunit_suite ndk_endpoint_suite;

/* KUNIT_EXPECT_MEMEQ arrived after 6.1. */
#define NDK_EXPECT_MEMEQ(test, a, b, n)					\
	KUNIT_EXPECT_EQ_MSG(test, memcmp(a, b, n), 0, "bytes differ")

/* How long a test waits for a completion before calling it lost. */
#define NDK_TEST_TIMEOUT	(10 * HZ)

/**
 * struct ndk_wait - one asynchronous NDK completion a test waits for
 * @done: completed by the callback
 * @status: status the callback reported
 * @obj: object a create completion returned
 * @calls: how many times the callback ran (must end up 1)
 */
struct ndk_wait {
	struct completion done;
	NTSTATUS status;
	NDK_OBJECT_HEADER *obj;
	atomic_t calls;
};

void ndk_wait_init(struct ndk_wait *w);
bool ndk_wait_for(struct ndk_wait *w);
void ndk_test_create_cb(PVOID Context, NTSTATUS Status,
			NDK_OBJECT_HEADER *pNdkObject);
void ndk_test_close_cb(PVOID Context);
void ndk_test_request_cb(PVOID Context, NTSTATUS Status);

NDK_ADAPTER *ndk_test_open(struct kunit *test);
int ndk_test_ifindex(struct kunit *test);
NDK_OBJECT_HEADER *ndk_test_create_pd(struct kunit *test, NDK_ADAPTER *a);
NDK_OBJECT_HEADER *ndk_test_create_cq(struct kunit *test, NDK_ADAPTER *a,
				      ULONG depth);
void ndk_test_close(struct kunit *test, NDK_OBJECT_HEADER *obj,
		    NDK_FN_CLOSE_OBJECT close);

struct ndk_adapter;

/* Bytes a loopback QP sends per message. */
#define NDK_TEST_MSG	8

/**
 * struct ndk_test_lqp - raw RC QP connected to itself
 * @fake: stands in for an NDK QP so completions carry a QPContext
 *	(its context points back at this struct)
 * @pd: its protection domain
 * @qp: the QP
 * @buf: send buffer followed by receive buffer
 * @dma: DMA address of @buf
 */
struct ndk_test_lqp {
	struct ndk_qp fake;
	struct ib_pd *pd;
	struct ib_qp *qp;
	u8 *buf;
	u64 dma;
};

struct ndk_test_lqp *ndk_test_loopback_qp(struct kunit *test,
					  struct ndk_adapter *a,
					  struct ib_cq *cq);
void ndk_test_loopback_send(struct kunit *test, struct ndk_test_lqp *l,
			    u64 recv_id, u64 send_id, bool solicited);
void ndk_test_loopback_free(struct ndk_test_lqp *l);

/* A spinlock the tests hold to call NDK functions from atomic context. */
extern spinlock_t ndk_test_lock;

#endif /* _NDK_TESTS_H */
