/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Devices (main.c, the ib_client), adapters (adapter.c) and their
 * counters and debugfs entries (debugfs.c).
 */
#ifndef _NDK_PRIV_ADAPTER_H
#define _NDK_PRIV_ADAPTER_H

#include <linux/workqueue.h>
#include <linux/xarray.h>
#include "object.h"

/* Counters of one RDMA device, summed over its adapters. */
enum ndk_stat {
	NDK_STAT_CONNECTS,		/* NdkConnect(WithSharedEndpoint) pending */
	NDK_STAT_ACCEPTS,		/* NdkAccept(Ex) pending */
	NDK_STAT_REJECTS,		/* NdkReject sent */
	NDK_STAT_CONNECT_FAILURES,	/* connect, complete or accept failed */
	NDK_STAT_CONNECTION_ERRORS,	/* established, ended by the peer */
	NDK_STAT_LISTEN_OVERFLOWS,	/* requests refused: backlog full */
	NDK_STAT_CQ_ERRORS,		/* completions polled with an error */
	NDK_STAT_CQ_FLUSHED,		/* completions polled as flushed */
	NDK_STAT_CQ_SWEPT,		/* reported by ndk, lost by the device */
	NDK_STAT_POSTED,		/* requests posted */
	NDK_STAT_COMPLETED,		/* completions polled, and swept */
	NDK_STAT_MAX,
};

/* Per-CPU, so that the post and poll paths count without lock or atomic. */
struct ndk_stats {
	u64 v[NDK_STAT_MAX];
};

/**
 * struct ndk_device - one RDMA device known to the ib_client
 * @ibdev: the device
 * @list: entry in ndk_devices
 * @ref: one for the ib_client, one per open adapter; removal drops the
 *	first while adapters may still be open
 * @descs: its adapters, found when the device was added
 * @ndescs: how many
 * @max_inline: largest inline size an RC QP accepts, probed by the first
 *	open that got the probe's PD and CQ
 * @probe_lock: serializes the probe
 * @probed: @max_inline is valid, and @restore_work set up
 * @stats: counters of every adapter opened on the device
 * @objs_lock: protects @objs and @dead; taken from atomic context too
 * @objs: live objects of every adapter on the device, for debugfs and
 *	removal
 * @dead: the device is being removed; no object is created on it any more
 * @debugfs: its directory, ndk/<device name>
 * @regions: the regions of NdkRegisterMr on the device, by the index of
 *	each of their verbs MRs' keys, for restoring one a peer invalidated
 *	(mr.c); indexes are device-wide because rxe's remote invalidation
 *	ignores the PD
 * @restore_work: restores the regions of @regions a peer invalidated
 *	(mr.c), queued by the polls of the device's CQs
 * @restore_asked: tickets of the polls that queued it
 * @restore_done: the last ticket whose region it has restored
 * @held_lock: protects @held_cqs; taken from atomic context too
 * @held_cqs: CQs that keep results from their consumer until a region
 *	is restored (cq.c), notified then
 */
struct ndk_device {
	struct ib_device *ibdev;
	struct list_head list;
	struct kref ref;
	struct ndk_adapter_desc descs[4];
	int ndescs;
	struct mutex probe_lock; /* protects @probed and @max_inline */
	bool probed;
	u32 max_inline;
	struct ndk_stats __percpu *stats;
	spinlock_t objs_lock; /* see above */
	struct list_head objs;
	bool dead;
	struct dentry *debugfs;
	struct xarray regions;
	struct work_struct restore_work;
	atomic_t restore_asked;
	atomic_t restore_done;
	spinlock_t held_lock; /* see above */
	struct list_head held_cqs;
};

/**
 * struct ndk_adapter - an open NDK_ADAPTER instance
 * @ndk: the public object; must stay first for the casts of consumers
 * @obj: lifetime state; the adapter is the root of its object tree
 * @ibdev: the RDMA device, referenced while the adapter is open
 * @port: port number
 * @ifindex: network interface index the consumer opened
 * @info: adapter information computed at open
 * @released: completed when the last reference on @obj is gone
 * @dev: the ib_client's entry for @ibdev, referenced while open
 * @linger_lock: protects @lingering; taken from atomic context too
 * @lingering: closed objects that still hold their antecedents, such as
 *	QPs whose verbs QPs wait for their CQs to be polled (object.c)
 */
struct ndk_adapter {
	NDK_ADAPTER ndk;
	struct ndk_obj obj;
	struct ndk_device *dev;
	struct ib_device *ibdev;
	u32 port;
	int ifindex;
	NDK_ADAPTER_INFO info;
	struct completion released;
	spinlock_t linger_lock; /* see above */
	struct list_head lingering;
};

extern struct mutex ndk_devices_lock;
extern struct list_head ndk_devices;

int ndk_device_port_of(struct ib_device *ibdev, struct net_device *ndev,
		       u32 *port);
void ndk_device_release(struct kref *ref);
NDK_RDMA_TECHNOLOGY ndk_rdma_technology(struct ib_device *ibdev, u32 port);
#if IS_ENABLED(CONFIG_KUNIT)
struct module *ndk_module(void);
bool ndk_close_adapter_timeout(NDK_ADAPTER *adapter, unsigned long timeout);
unsigned int ndk_close_leftovers(NDK_ADAPTER *adapter);
#endif

void ndk_debugfs_init(void);
void ndk_debugfs_exit(void);
void ndk_device_debugfs_add(struct ndk_device *dev);
void ndk_device_debugfs_remove(struct ndk_device *dev);
bool ndk_obj_track(struct ndk_obj *obj);
void ndk_obj_untrack(struct ndk_obj *obj);

/* The adapter's device is being removed: nothing new may start on it. */
static inline bool ndk_adapter_dead(struct ndk_adapter *adapter)
{
	return READ_ONCE(adapter->dev->dead);
}

extern const enum module_state ndk_builtin_state;

/* Count @n events of @stat on this CPU: no lock, no allocation. */
static inline void ndk_stat_add(struct ndk_adapter *adapter,
				enum ndk_stat stat, u64 n)
{
	this_cpu_add(adapter->dev->stats->v[stat], n);
}

static inline void ndk_stat_inc(struct ndk_adapter *adapter,
				enum ndk_stat stat)
{
	ndk_stat_add(adapter, stat, 1);
}

/*
 * The post and poll paths count into the counters their QP or CQ keeps a
 * pointer to, one load instead of the chain through adapter and device.
 */
static __always_inline void ndk_stat_add_to(struct ndk_stats __percpu *stats,
					    enum ndk_stat stat, u64 n)
{
	this_cpu_add(stats->v[stat], n);
}

#endif /* _NDK_PRIV_ADAPTER_H */
