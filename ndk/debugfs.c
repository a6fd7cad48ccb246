// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The debugfs view of each RDMA device ndk serves, ndk/<device>/:
 * connections, endpoints (listeners and shared endpoints) and stats.
 *
 * Live objects of every adapter on the device sit on one list under a
 * spinlock, because objects come and go in contexts that cannot sleep.
 * An object joins the list just before its creation completes and
 * leaves it before it is destroyed, so whatever a reader finds there is
 * intact. The files show ids and socket addresses, never pointers.
 *
 * The files offer read_iter, so that kernel_read() (the KUnit suite)
 * works too; debugfs's protecting proxy has no read_iter, so they are
 * created "unsafe" and each read holds off the device's removal itself.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include "ndk_priv.h"

static struct dentry *ndk_debugfs_root;

/**
 * ndk_obj_track() - list a live object under its device
 * @obj: the object; its adapter is set
 *
 * Atomic context is fine.
 *
 * Return: false, leaving @obj off the list, once the device is being
 * removed: removal walks the list, so an object it did not see must not
 * go live.
 */
bool ndk_obj_track(struct ndk_obj *obj)
{
	struct ndk_device *dev = obj->adapter->dev;
	unsigned long flags;
	bool live;

	spin_lock_irqsave(&dev->objs_lock, flags);
	live = !dev->dead;
	if (live)
		list_add_tail(&obj->dev_node, &dev->objs);
	spin_unlock_irqrestore(&dev->objs_lock, flags);
	return live;
}

/**
 * ndk_obj_untrack() - take an object off its device's list
 * @obj: the object, listed or never listed
 */
void ndk_obj_untrack(struct ndk_obj *obj)
{
	struct ndk_device *dev = obj->adapter->dev;
	unsigned long flags;

	spin_lock_irqsave(&dev->objs_lock, flags);
	list_del_init(&obj->dev_node);
	spin_unlock_irqrestore(&dev->objs_lock, flags);
}

static const char *const ndk_conn_state_names[] = {
	[NDK_CONN_IDLE] = "IDLE",
	[NDK_CONN_CONNECTING] = "CONNECTING",
	[NDK_CONN_CONNECTED] = "CONNECTED",
	[NDK_CONN_COMPLETING] = "COMPLETING",
	[NDK_CONN_REQUESTED] = "REQUESTED",
	[NDK_CONN_ACCEPTING] = "ACCEPTING",
	[NDK_CONN_REJECTING] = "REJECTING",
	[NDK_CONN_ESTABLISHED] = "ESTABLISHED",
	[NDK_CONN_DISCONNECTING] = "DISCONNECTING",
	[NDK_CONN_DONE] = "DONE",
};

static const char *ndk_conn_state_name(enum ndk_conn_state state)
{
	if (state >= ARRAY_SIZE(ndk_conn_state_names) ||
	    !ndk_conn_state_names[state])
		return "?";
	return ndk_conn_state_names[state];
}

/* "address:port", bracketed for IPv6, or "-" for no address. */
static void ndk_fmt_addr(char *buf, size_t len, const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
		snprintf(buf, len, "%pISpc", sa);
	else
		strscpy(buf, "-", len);
}

/* What a connections line shows, copied under the connector's lock. */
struct ndk_conn_view {
	u32 id;
	u32 qp_id;
	u32 qpn;
	enum ndk_conn_state state;
	u8 ird;
	u8 ord;
	union ndk_sockaddr src;
	union ndk_sockaddr dst;
};

/* Snapshot a connector that has a QP; false if it has none yet. */
static bool ndk_conn_view(struct ndk_connector *conn, struct ndk_conn_view *v)
{
	struct ndk_qp *qp;

	spin_lock(&conn->lock);
	qp = READ_ONCE(conn->qp);
	if (qp) {
		v->id = conn->obj.id;
		v->qp_id = qp->obj.id;
		v->qpn = qp->ibqp->qp_num;
		v->state = conn->state;
		v->ird = conn->ird;
		v->ord = conn->ord;
		v->src = conn->src;
		v->dst = conn->dst;
	}
	spin_unlock(&conn->lock);
	return qp;
}

/*
 * Run @show unless the file is being removed; removal, and freeing the
 * device, wait for it.
 */
static int ndk_debugfs_show(struct seq_file *m,
			    int (*show)(struct seq_file *m,
					struct ndk_device *dev))
{
	struct dentry *dentry = m->file->f_path.dentry;
	int ret;

	ret = debugfs_file_get(dentry);
	if (ret)
		return ret;
	ret = show(m, m->private);
	debugfs_file_put(dentry);
	return ret;
}

#define NDK_DEBUGFS_FILE(name)						\
static int ndk_##name##_seq(struct seq_file *m, void *unused)		\
{									\
	return ndk_debugfs_show(m, ndk_##name##_show);			\
}									\
static int ndk_##name##_open(struct inode *inode, struct file *file)	\
{									\
	return single_open(file, ndk_##name##_seq, inode->i_private);	\
}									\
static const struct file_operations ndk_##name##_fops = {		\
	.owner = THIS_MODULE,						\
	.open = ndk_##name##_open,					\
	.read_iter = seq_read_iter,					\
	.llseek = seq_lseek,						\
	.release = single_release,					\
}

static int ndk_connections_show(struct seq_file *m, struct ndk_device *dev)
{
	char local[64], peer[64];
	struct ndk_conn_view v;
	unsigned long flags;
	struct ndk_obj *obj;

	seq_printf(m, "%-5s %-5s %-47s %-47s %-13s %-8s %-3s %s\n", "conn",
		   "qp", "local", "peer", "state", "qpn", "ird", "ord");
	spin_lock_irqsave(&dev->objs_lock, flags);
	list_for_each_entry(obj, &dev->objs, dev_node) {
		if (obj->hdr->ObjectType != NdkObjectTypeConnector ||
		    !ndk_conn_view(container_of(obj, struct ndk_connector, obj),
				   &v))
			continue;
		ndk_fmt_addr(local, sizeof(local), &v.src.sa);
		ndk_fmt_addr(peer, sizeof(peer), &v.dst.sa);
		seq_printf(m, "%-5u %-5u %-47s %-47s %-13s %-8u %-3u %u\n",
			   v.id, v.qp_id, local, peer,
			   ndk_conn_state_name(v.state), v.qpn, v.ird, v.ord);
	}
	spin_unlock_irqrestore(&dev->objs_lock, flags);
	return 0;
}

NDK_DEBUGFS_FILE(connections);

static const char *ndk_listener_state(struct ndk_listener *l)
{
	if (READ_ONCE(l->obj.state) == NDK_OBJ_CLOSING)
		return "closing";
	if (!READ_ONCE(l->listen_cb))
		return "idle";
	return READ_ONCE(l->paused) ? "paused" : "listening";
}

static int ndk_endpoints_show(struct seq_file *m, struct ndk_device *dev)
{
	struct ndk_listener *l;
	unsigned long flags;
	struct ndk_obj *obj;
	struct ndk_sep *sep;
	char addr[64];

	seq_printf(m, "%-5s %-8s %-47s %s\n", "id", "kind", "local", "state");
	spin_lock_irqsave(&dev->objs_lock, flags);
	list_for_each_entry(obj, &dev->objs, dev_node) {
		switch (obj->hdr->ObjectType) {
		case NdkObjectTypeListener:
			l = container_of(obj, struct ndk_listener, obj);
			/* The address NdkListen asked for; none before it. */
			if (READ_ONCE(l->listen_cb))
				ndk_fmt_addr(addr, sizeof(addr),
					     (struct sockaddr *)&l->addr);
			else
				strscpy(addr, "-", sizeof(addr));
			seq_printf(m, "%-5u %-8s %-47s %s\n", obj->id,
				   "listener", addr, ndk_listener_state(l));
			break;
		case NdkObjectTypeSharedEndpoint:
			/* Bound before it was listed; the address stays. */
			sep = container_of(obj, struct ndk_sep, obj);
			ndk_fmt_addr(addr, sizeof(addr),
				     (struct sockaddr *)&sep->addr);
			seq_printf(m, "%-5u %-8s %-47s %s\n", obj->id, "shared",
				   addr,
				   READ_ONCE(obj->state) == NDK_OBJ_CLOSING ?
				   "closing" : "bound");
			break;
		default:
			break;
		}
	}
	spin_unlock_irqrestore(&dev->objs_lock, flags);
	return 0;
}

NDK_DEBUGFS_FILE(endpoints);

static const char *const ndk_stat_names[NDK_STAT_MAX] = {
	[NDK_STAT_CONNECTS] = "connects",
	[NDK_STAT_ACCEPTS] = "accepts",
	[NDK_STAT_REJECTS] = "rejects",
	[NDK_STAT_CONNECT_FAILURES] = "connect_failures",
	[NDK_STAT_CONNECTION_ERRORS] = "connection_errors",
	[NDK_STAT_LISTEN_OVERFLOWS] = "listen_overflows",
	[NDK_STAT_CQ_ERRORS] = "cq_errors",
	[NDK_STAT_CQ_FLUSHED] = "cq_flushed",
	[NDK_STAT_CQ_SWEPT] = "cq_swept",
	[NDK_STAT_POSTED] = "requests_posted",
	[NDK_STAT_COMPLETED] = "requests_completed",
};

static const char *const ndk_obj_count_names[NdkObjectTypeMax] = {
	[NdkObjectTypeAdapter] = "open_adapters",
	[NdkObjectTypeQp] = "open_qps",
	[NdkObjectTypeCq] = "open_cqs",
	[NdkObjectTypeMr] = "open_mrs",
	[NdkObjectTypeMw] = "open_mws",
	[NdkObjectTypePd] = "open_pds",
	[NdkObjectTypeSharedEndpoint] = "open_shared_endpoints",
	[NdkObjectTypeConnector] = "open_connectors",
	[NdkObjectTypeListener] = "open_listeners",
	[NdkObjectTypeSrq] = "open_srqs",
};

static int ndk_stats_show(struct seq_file *m, struct ndk_device *dev)
{
	u32 count[NdkObjectTypeMax] = {}, established = 0;
	struct ndk_connector *conn;
	unsigned long flags;
	struct ndk_obj *obj;
	int cpu, i;
	u64 sum;

	for (i = 0; i < NDK_STAT_MAX; i++) {
		sum = 0;
		for_each_possible_cpu(cpu)
			sum += per_cpu_ptr(dev->stats, cpu)->v[i];
		seq_printf(m, "%s %llu\n", ndk_stat_names[i], sum);
	}
	spin_lock_irqsave(&dev->objs_lock, flags);
	list_for_each_entry(obj, &dev->objs, dev_node) {
		if (obj->hdr->ObjectType >= NdkObjectTypeMax)
			continue;
		count[obj->hdr->ObjectType]++;
		if (obj->hdr->ObjectType != NdkObjectTypeConnector)
			continue;
		conn = container_of(obj, struct ndk_connector, obj);
		established += READ_ONCE(conn->state) == NDK_CONN_ESTABLISHED;
	}
	spin_unlock_irqrestore(&dev->objs_lock, flags);
	seq_printf(m, "established_connections %u\n", established);
	for (i = 0; i < NdkObjectTypeMax; i++)
		if (ndk_obj_count_names[i])
			seq_printf(m, "%s %u\n", ndk_obj_count_names[i],
				   count[i]);
	return 0;
}

NDK_DEBUGFS_FILE(stats);

/**
 * ndk_device_debugfs_add() - create ndk/<device name>/ for a new device
 * @dev: the device entry
 *
 * Failures leave the device without its view; debugfs is optional.
 */
void ndk_device_debugfs_add(struct ndk_device *dev)
{
	dev->debugfs = debugfs_create_dir(dev_name(&dev->ibdev->dev),
					  ndk_debugfs_root);
	debugfs_create_file_unsafe("connections", 0400, dev->debugfs, dev,
				   &ndk_connections_fops);
	debugfs_create_file_unsafe("endpoints", 0400, dev->debugfs, dev,
				   &ndk_endpoints_fops);
	debugfs_create_file_unsafe("stats", 0400, dev->debugfs, dev,
				   &ndk_stats_fops);
}

/**
 * ndk_device_debugfs_remove() - remove a device's directory
 * @dev: the device entry
 *
 * Waits for readers inside the files; later reads fail.
 */
void ndk_device_debugfs_remove(struct ndk_device *dev)
{
	debugfs_remove(dev->debugfs);
	dev->debugfs = NULL;
}

void ndk_debugfs_init(void)
{
	ndk_debugfs_root = debugfs_create_dir("ndk", NULL);
}

void ndk_debugfs_exit(void)
{
	debugfs_remove(ndk_debugfs_root);
}
