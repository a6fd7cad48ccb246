// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An NVMe over Fabrics controller, seen from the host: the admin queue
 * and its commands (Fabrics Connect and Property Get/Set, Identify, Set
 * Features, Keep Alive), the I/O queues, shutdown, and failure.
 */
#include "nvmeof.h"
#include <linux/delay.h>
#include <linux/slab.h>

static int nvmeof_prop_get(struct nvmeof_ctrl *ctrl, u32 off, bool wide,
			   u64 *val)
{
	struct nvme_command c = {};
	union nvme_result res;
	int ret;

	c.prop_get.opcode = nvme_fabrics_command;
	c.prop_get.fctype = nvme_fabrics_type_property_get;
	c.prop_get.attrib = wide;
	c.prop_get.offset = cpu_to_le32(off);
	ret = nvmeof_exec(&ctrl->admin, &c, NULL, 0, false, &res);
	if (!ret)
		*val = wide ? le64_to_cpu(res.u64) : le32_to_cpu(res.u32);
	return ret;
}

static int nvmeof_prop_set(struct nvmeof_ctrl *ctrl, u32 off, u32 val)
{
	struct nvme_command c = {};

	c.prop_set.opcode = nvme_fabrics_command;
	c.prop_set.fctype = nvme_fabrics_type_property_set;
	c.prop_set.offset = cpu_to_le32(off);
	c.prop_set.value = cpu_to_le64(val);
	return nvmeof_exec(&ctrl->admin, &c, NULL, 0, false, NULL);
}

/* Why the target refused a Fabrics Connect, from its status and result. */
static void nvmeof_connect_refused(struct nvmeof_ctrl *ctrl, u16 qid,
				   int status, u32 result)
{
	/* The result names a field of the connect data (bit 16) or command. */
	u16 field = result & 0xffff;
	bool data = result & BIT(16);

	if (NVMEOF_SC(status) == NVME_SC_CONNECT_INVALID_PARAM && data &&
	    field == offsetof(struct nvmf_connect_data, subsysnqn))
		pr_err("the target has no subsystem %s\n", ctrl->subnqn);
	else if (NVMEOF_SC(status) == NVME_SC_CONNECT_INVALID_HOST ||
		 (NVMEOF_SC(status) == NVME_SC_CONNECT_INVALID_PARAM && data &&
		  field == offsetof(struct nvmf_connect_data, hostnqn)))
		pr_err("subsystem %s does not allow host %s\n", ctrl->subnqn,
		       ctrl->hostnqn);
	else if (NVMEOF_SC(status) == NVME_SC_CONNECT_INVALID_PARAM)
		pr_err("queue %u: Connect refused, invalid %s field at byte %u\n",
		       qid, data ? "data" : "command", field);
	else
		pr_err("queue %u: Connect refused with status %#x\n", qid,
		       status);
}

/*
 * Fabrics Connect on a connected queue: its 1024 bytes of data go as a
 * keyed SGL the target reads (in the capsule on I/O queues that take
 * in-capsule data). The admin queue's answer names the controller.
 */
static int nvmeof_fabrics_connect(struct nvmeof_ctrl *ctrl,
				  struct nvmeof_queue *q)
{
	struct nvmf_connect_data *data;
	struct nvme_command c = {};
	union nvme_result res;
	int ret;

	data = kzalloc(sizeof(*data), GFP_KERNEL);
	if (!data)
		return -ENOMEM;
	uuid_copy(&data->hostid, &ctrl->hostid);
	/* 0xffff: any controller; the I/O queues name the admin's. */
	data->cntlid = cpu_to_le16(q->qid ? ctrl->cntlid : 0xffff);
	strscpy(data->subsysnqn, ctrl->subnqn, sizeof(data->subsysnqn));
	strscpy(data->hostnqn, ctrl->hostnqn, sizeof(data->hostnqn));

	c.connect.opcode = nvme_fabrics_command;
	c.connect.fctype = nvme_fabrics_type_connect;
	c.connect.recfmt = 0;
	c.connect.qid = cpu_to_le16(q->qid);
	c.connect.sqsize = cpu_to_le16(q->size - 1);
	if (!q->qid)
		c.connect.kato = cpu_to_le32(ctrl->kato_ms);
	ret = nvmeof_exec(q, &c, data, sizeof(*data), true, &res);
	kfree(data);
	if (ret > 0) {
		nvmeof_connect_refused(ctrl, q->qid, ret, le32_to_cpu(res.u32));
		return -ECONNREFUSED;
	}
	if (!ret && !q->qid)
		ctrl->cntlid = le16_to_cpu(res.u16);
	return ret;
}

static int nvmeof_queue_start(struct nvmeof_ctrl *ctrl,
			      struct nvmeof_queue *q, u16 qid)
{
	int err;

	err = nvmeof_queue_create(ctrl, q, qid, NVMEOF_QUEUE_SIZE);
	if (!err)
		err = nvmeof_queue_connect(q);
	if (!err)
		err = nvmeof_fabrics_connect(ctrl, q);
	return err;
}

/* CSTS until (CSTS & @mask) == @want, for at most @timeout jiffies. */
static int nvmeof_wait_csts(struct nvmeof_ctrl *ctrl, u32 mask, u32 want,
			    unsigned long timeout, const char *what)
{
	unsigned long end = jiffies + timeout;
	u64 csts;
	int ret;

	for (;;) {
		ret = nvmeof_prop_get(ctrl, NVME_REG_CSTS, false, &csts);
		if (ret)
			return ret < 0 ? ret : -EIO;
		if (csts & NVME_CSTS_CFS) {
			pr_err("controller fatal status while %s\n", what);
			return -EIO;
		}
		if ((csts & mask) == want)
			return 0;
		if (time_after(jiffies, end)) {
			pr_err("the controller did not finish %s\n", what);
			return -ETIMEDOUT;
		}
		msleep(20);
	}
}

/* CC.EN with the NVM command set and 4 KiB pages, then CSTS.RDY. */
static int nvmeof_enable(struct nvmeof_ctrl *ctrl)
{
	u64 vs;
	int ret;

	ret = nvmeof_prop_get(ctrl, NVME_REG_CAP, true, &ctrl->cap);
	if (!ret)
		ret = nvmeof_prop_get(ctrl, NVME_REG_VS, false, &vs);
	if (ret)
		return ret < 0 ? ret : -EIO;
	if (NVME_CAP_MPSMIN(ctrl->cap) > 0) {
		pr_err("the controller takes no 4 KiB pages\n");
		return -EINVAL;
	}
	pr_info("controller %u: NVMe %llu.%llu\n", ctrl->cntlid,
		(vs >> 16) & 0xffff, (vs >> 8) & 0xff);
	ctrl->cc = NVME_CC_CSS_NVM | NVME_CC_AMS_RR | NVME_CC_SHN_NONE |
		   NVME_CC_IOSQES | NVME_CC_IOCQES | NVME_CC_ENABLE;
	ret = nvmeof_prop_set(ctrl, NVME_REG_CC, ctrl->cc);
	if (ret)
		return ret < 0 ? ret : -EIO;
	/* CAP.TO counts 500 ms units. */
	return nvmeof_wait_csts(ctrl, NVME_CSTS_RDY, NVME_CSTS_RDY,
				(NVME_CAP_TIMEOUT(ctrl->cap) + 1) * HZ / 2,
				"enabling");
}

static int nvmeof_identify(struct nvmeof_ctrl *ctrl, u8 cns, u32 nsid,
			   void *buf)
{
	struct nvme_command c = {};
	int ret;

	c.identify.opcode = nvme_admin_identify;
	c.identify.cns = cns;
	c.identify.nsid = cpu_to_le32(nsid);
	ret = nvmeof_exec(&ctrl->admin, &c, buf, NVME_IDENTIFY_DATA_SIZE,
			  false, NULL);
	return ret ? (ret < 0 ? ret : -EIO) : 0;
}

/*
 * Identify Controller: in-capsule data room (IOCCSZ counts 16-byte
 * units, the command's 64 among them), transfer size, keyed SGLs.
 * Identify Namespace: size and block size.
 */
static int nvmeof_identify_all(struct nvmeof_ctrl *ctrl, void *buf)
{
	struct nvme_id_ctrl *id = buf;
	struct nvme_id_ns *ns = buf;
	u32 capsule;
	int ret, mn;

	ret = nvmeof_identify(ctrl, NVME_ID_CNS_CTRL, 0, buf);
	if (ret)
		return ret;
	if (!(le32_to_cpu(id->sgls) & BIT(2))) {
		pr_err("the controller takes no keyed SGLs\n");
		return -EINVAL;
	}
	capsule = le32_to_cpu(id->ioccsz) * 16;
	if (!id->icdoff && capsule > sizeof(struct nvme_command))
		ctrl->inline_max = min_t(u32, NVMEOF_INLINE_MAX,
					 capsule - sizeof(struct nvme_command));
	ctrl->max_io = NVMEOF_MAX_IO;
	if (id->mdts && id->mdts < 20)
		ctrl->max_io = min_t(u32, ctrl->max_io, SZ_4K << id->mdts);
	if (le32_to_cpu(id->nn) < ctrl->nsid) {
		pr_err("the controller has no namespace %u\n", ctrl->nsid);
		return -ENOENT;
	}
	/* The model number is padded with spaces. */
	mn = strnlen(id->mn, sizeof(id->mn));
	while (mn && id->mn[mn - 1] == ' ')
		mn--;
	pr_info("controller %u: model %.*s, %u bytes in-capsule, %u per command\n",
		ctrl->cntlid, mn, id->mn, ctrl->inline_max, ctrl->max_io);

	ret = nvmeof_identify(ctrl, NVME_ID_CNS_NS, ctrl->nsid, buf);
	if (ret)
		return ret;
	ctrl->nsze = le64_to_cpu(ns->nsze);
	ctrl->lba_shift = ns->lbaf[ns->flbas & NVME_NS_FLBAS_LBA_MASK].ds;
	if (!ctrl->nsze || ctrl->lba_shift < 9 || ctrl->lba_shift > 12) {
		pr_err("namespace %u: %llu blocks of 2^%u bytes: not usable\n",
		       ctrl->nsid, ctrl->nsze, ctrl->lba_shift);
		return -EINVAL;
	}
	return 0;
}

/* Set Features, Number of Queues: how many I/O queues the target gives. */
static int nvmeof_set_queue_count(struct nvmeof_ctrl *ctrl, int *count)
{
	u32 q = *count - 1, given;
	struct nvme_command c = {};
	union nvme_result res;
	int ret;

	c.features.opcode = nvme_admin_set_features;
	c.features.fid = cpu_to_le32(NVME_FEAT_NUM_QUEUES);
	c.features.dword11 = cpu_to_le32(q | q << 16);
	ret = nvmeof_exec(&ctrl->admin, &c, NULL, 0, false, &res);
	if (ret)
		return ret < 0 ? ret : -EIO;
	given = le32_to_cpu(res.u32);
	*count = min(*count, (int)min(given & 0xffff, given >> 16) + 1);
	return 0;
}

/*
 * The next Keep Alive goes out half the timeout after this one went, or
 * at once if that time has passed: the target then hears one at least
 * every round trip. Waiting for the next tick instead sent one only every
 * whole timeout once a round trip took more than half of it, and a target
 * that received no other command meanwhile (the host waiting for a batch
 * of writes to end) gave the controller up.
 */
static void nvmeof_ka_end(struct nvmeof_req *req)
{
	struct nvmeof_ctrl *ctrl = req->priv;
	unsigned long half = msecs_to_jiffies(ctrl->kato_ms) / 2;
	unsigned long rtt = jiffies - ctrl->ka_sent;
	unsigned long flags;

	if (req->status || req->nvme_status)
		pr_err("Keep Alive ended with %#x/%#x\n", req->status,
		       req->nvme_status);
	ctrl->ka_rtt_max = max(ctrl->ka_rtt_max, rtt);
	atomic_set(&ctrl->ka_busy, 0);
	/* Not once nvmeof_ctrl_stop() has begun to cancel the work. */
	spin_lock_irqsave(&ctrl->lock, flags);
	if (!ctrl->stopping)
		mod_delayed_work(system_long_wq, &ctrl->ka_work,
				 rtt < half ? half - rtt : 0);
	spin_unlock_irqrestore(&ctrl->lock, flags);
}

/*
 * What each queue still waits for when the target fell silent: a send
 * still out, or responses the target never sent (or sent and lost).
 */
static void nvmeof_ka_report(struct nvmeof_ctrl *ctrl)
{
	int i;

	pr_err("Keep Alive unanswered: last response %u ms ago, Keep Alive sent %u ms ago\n",
	       jiffies_to_msecs(jiffies - READ_ONCE(ctrl->last_rsp)),
	       jiffies_to_msecs(jiffies - ctrl->ka_sent));
	for (i = -1; i < ctrl->nr_io; i++) {
		struct nvmeof_queue *q = nvmeof_queue_nr(ctrl, i);

		if (q->qp)
			nvmeof_queue_report(q);
	}
}

/*
 * Keep Alive at half the agreed timeout, one at a time (nvmeof_ka_end()
 * sends the next). One unanswered for the whole timeout, with no other
 * response meanwhile, means the target is gone, and the host gives up. A
 * target that answers other commands is alive: its Keep Alive answer
 * waits behind their data on a slow link.
 */
static void nvmeof_ka_work(struct work_struct *work)
{
	struct nvmeof_ctrl *ctrl = container_of(to_delayed_work(work),
						struct nvmeof_ctrl, ka_work);
	unsigned long kato = msecs_to_jiffies(ctrl->kato_ms);
	unsigned long heard = READ_ONCE(ctrl->last_rsp);
	struct nvme_command c = {};

	if (atomic_read(&ctrl->ka_busy)) {
		if (time_before(heard, ctrl->ka_sent))
			heard = ctrl->ka_sent;
		if (time_after(jiffies, heard + kato)) {
			nvmeof_ka_report(ctrl);
			nvmeof_ctrl_fail(ctrl, "Keep Alive timed out");
			return;
		}
	} else {
		c.common.opcode = nvme_admin_keep_alive;
		atomic_set(&ctrl->ka_busy, 1);
		if (ctrl->ka_sent)
			ctrl->ka_gap_max = max(ctrl->ka_gap_max,
					       jiffies - ctrl->ka_sent);
		ctrl->ka_sent = jiffies;
		if (nvmeof_submit(&ctrl->admin, &c, NULL, 0, false,
				  nvmeof_ka_end, ctrl)) {
			atomic_set(&ctrl->ka_busy, 0);
			return;
		}
	}
	queue_delayed_work(system_long_wq, &ctrl->ka_work, kato / 2);
}

/*
 * Give up on the controller: no queue takes commands any more, and
 * NdkFlush makes every request come back, so that every command ends.
 */
static void nvmeof_fail_work(struct work_struct *work)
{
	struct nvmeof_ctrl *ctrl = container_of(work, struct nvmeof_ctrl,
						fail_work);
	int i;

	pr_err("controller %u failed: %s\n", ctrl->cntlid, ctrl->fail_reason);
	for (i = -1; i < ctrl->nr_io; i++) {
		struct nvmeof_queue *q = nvmeof_queue_nr(ctrl, i);

		if (!q->qp)
			continue;
		nvmeof_queue_fail(q);
		q->qp->Dispatch->NdkFlush(q->qp);
	}
}

/**
 * nvmeof_ctrl_fail() - give up on a controller
 * @ctrl: the controller
 * @reason: for the log
 *
 * Callable from any context; the first call wins, and nothing happens
 * once nvmeof_ctrl_stop() has begun (it ends the commands itself).
 */
void nvmeof_ctrl_fail(struct nvmeof_ctrl *ctrl, const char *reason)
{
	unsigned long flags;

	spin_lock_irqsave(&ctrl->lock, flags);
	if (!ctrl->stopping && !test_and_set_bit(0, &ctrl->failed)) {
		ctrl->fail_reason = reason;
		schedule_work(&ctrl->fail_work);
	}
	spin_unlock_irqrestore(&ctrl->lock, flags);
}

static int nvmeof_open(struct nvmeof_ctrl *ctrl, int ifindex)
{
	NDK_VERSION v = { NDK_PROVIDER_VERSION_MAJOR,
			  NDK_PROVIDER_VERSION_MINOR };
	ULONG size = sizeof(ctrl->info);
	struct nvmeof_wait w;
	NDK_PD *pd = NULL;
	NTSTATUS status;

	status = ndk_open_adapter(ifindex, v, &ctrl->adapter);
	if (status) {
		pr_err("no NDK adapter on interface %d: %#x\n", ifindex,
		       status);
		ctrl->adapter = NULL;
		return -ENODEV;
	}
	status = ctrl->adapter->Dispatch->NdkQueryAdapterInfo(ctrl->adapter,
							      &ctrl->info,
							      &size);
	if (status)
		return -EIO;
	nvmeof_wait_init(&w);
	status = ctrl->adapter->Dispatch->NdkCreatePd(ctrl->adapter,
						      nvmeof_create_done, &w,
						      &pd);
	ctrl->pd = nvmeof_obj(nvmeof_created(&w, status, pd, "PD"), NDK_PD);
	if (!ctrl->pd)
		return -ENOMEM;
	/* In-capsule data goes out by its logical addresses. */
	ctrl->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(ctrl->pd,
							      &ctrl->ptoken);
	return 0;
}

/**
 * nvmeof_ctrl_start() - connect to a controller and make it ready for I/O
 * @ctrl: addresses, NQNs, host id, namespace and Keep Alive timeout set
 * @ifindex: the interface whose NDK adapter to use
 * @nr_io: I/O queues wanted; ctrl->nr_io says how many there are
 *
 * Return: 0, or a negative errno with everything logged; call
 * nvmeof_ctrl_stop() either way.
 */
int nvmeof_ctrl_start(struct nvmeof_ctrl *ctrl, int ifindex, int nr_io)
{
	void *id;
	int err, i;

	spin_lock_init(&ctrl->lock);
	INIT_WORK(&ctrl->fail_work, nvmeof_fail_work);
	INIT_DELAYED_WORK(&ctrl->ka_work, nvmeof_ka_work);
	ctrl->last_rsp = jiffies;
	ctrl->max_io = NVMEOF_MAX_IO;
	err = nvmeof_open(ctrl, ifindex);
	if (err)
		return err;

	err = nvmeof_queue_start(ctrl, &ctrl->admin, 0);
	if (err)
		return err;
	/*
	 * On the long-running queue: the work may wait for a free slot of
	 * the admin queue, and system_wq is deprecated on 7.3 (it warns).
	 */
	queue_delayed_work(system_long_wq, &ctrl->ka_work,
			   msecs_to_jiffies(ctrl->kato_ms) / 2);
	err = nvmeof_enable(ctrl);
	if (err)
		return err;
	id = kzalloc(NVME_IDENTIFY_DATA_SIZE, GFP_KERNEL);
	if (!id)
		return -ENOMEM;
	err = nvmeof_identify_all(ctrl, id);
	kfree(id);
	if (!err)
		err = nvmeof_set_queue_count(ctrl, &nr_io);
	if (err)
		return err;

	ctrl->io = kcalloc(nr_io, sizeof(*ctrl->io), GFP_KERNEL);
	if (!ctrl->io)
		return -ENOMEM;
	for (i = 0; i < nr_io; i++) {
		/* Counted first: a failure in between closes this one too. */
		ctrl->nr_io = i + 1;
		err = nvmeof_queue_start(ctrl, &ctrl->io[i], i + 1);
		if (err)
			return err;
	}
	pr_info("controller %u: %d I/O queues of %u entries, namespace %u of %llu blocks of %u bytes\n",
		ctrl->cntlid, nr_io, NVMEOF_QUEUE_SIZE, ctrl->nsid, ctrl->nsze,
		1U << ctrl->lba_shift);
	return 0;
}

/* CC.SHN, normal shutdown, and CSTS.SHST until it is complete. */
static void nvmeof_shutdown(struct nvmeof_ctrl *ctrl)
{
	u32 cc = (ctrl->cc & ~NVME_CC_SHN_MASK) | NVME_CC_SHN_NORMAL;

	if (nvmeof_prop_set(ctrl, NVME_REG_CC, cc) ||
	    nvmeof_wait_csts(ctrl, NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_CMPLT,
			     5 * HZ, "shutting down"))
		pr_err("controller %u: no clean shutdown\n", ctrl->cntlid);
}

/**
 * nvmeof_ctrl_stop() - shut the controller down and close everything
 * @ctrl: a controller of nvmeof_ctrl_start(), started or not
 *
 * A controller still working shuts down cleanly: its I/O queues
 * disconnect, then CC.SHN, then the admin queue. Every command still in
 * flight ends first.
 */
void nvmeof_ctrl_stop(struct nvmeof_ctrl *ctrl)
{
	unsigned long flags;
	int i;

	/* Before the cancel: a Keep Alive that ends re-arms the work. */
	spin_lock_irqsave(&ctrl->lock, flags);
	ctrl->stopping = true;
	spin_unlock_irqrestore(&ctrl->lock, flags);
	cancel_delayed_work_sync(&ctrl->ka_work);
	cancel_work_sync(&ctrl->fail_work);
	/* An interval needs two Keep Alives. */
	if (ctrl->ka_gap_max)
		pr_info("controller %u: longest Keep Alive round trip %u ms, interval %u ms\n",
			ctrl->cntlid, jiffies_to_msecs(ctrl->ka_rtt_max),
			jiffies_to_msecs(ctrl->ka_gap_max));
	else if (ctrl->ka_rtt_max)
		pr_info("controller %u: one Keep Alive, round trip %u ms\n",
			ctrl->cntlid, jiffies_to_msecs(ctrl->ka_rtt_max));

	for (i = 0; i < ctrl->nr_io; i++)
		nvmeof_queue_destroy(&ctrl->io[i]);
	kfree(ctrl->io);
	ctrl->io = NULL;
	ctrl->nr_io = 0;
	if (ctrl->cc & NVME_CC_ENABLE && !test_bit(0, &ctrl->failed))
		nvmeof_shutdown(ctrl);
	nvmeof_queue_destroy(&ctrl->admin);
	if (ctrl->pd)
		nvmeof_close(&ctrl->pd->Header, ctrl->pd->Dispatch->NdkClosePd);
	ctrl->pd = NULL;
	if (ctrl->adapter)
		ndk_close_adapter(ctrl->adapter);
	ctrl->adapter = NULL;
}

/**
 * nvmeof_rw() - read or write blocks of the namespace
 * @ctrl: a started controller
 * @q: one of its I/O queues
 * @write: write (else read)
 * @lba: first block
 * @buf: kernel memory, whole blocks, at most ctrl->max_io bytes
 * @len: its length
 * @end: called once when the command has ended
 * @priv: for @end
 *
 * Return: 0 when the command went out, else a negative errno.
 */
int nvmeof_rw(struct nvmeof_ctrl *ctrl, struct nvmeof_queue *q, bool write,
	      u64 lba, void *buf, u32 len, nvmeof_end_fn end, void *priv)
{
	struct nvme_command c = {};

	if (!len || len & ((1U << ctrl->lba_shift) - 1))
		return -EINVAL;
	c.rw.opcode = write ? nvme_cmd_write : nvme_cmd_read;
	c.rw.nsid = cpu_to_le32(ctrl->nsid);
	c.rw.slba = cpu_to_le64(lba);
	c.rw.length = cpu_to_le16((len >> ctrl->lba_shift) - 1);
	return nvmeof_submit(q, &c, buf, len, write, end, priv);
}

/**
 * nvmeof_flush() - make the namespace's written data durable
 * @ctrl: a started controller
 * @q: one of its I/O queues
 *
 * Return: 0, the NVMe status, or a negative errno.
 */
int nvmeof_flush(struct nvmeof_ctrl *ctrl, struct nvmeof_queue *q)
{
	struct nvme_command c = {};

	c.common.opcode = nvme_cmd_flush;
	c.common.nsid = cpu_to_le32(ctrl->nsid);
	return nvmeof_exec(q, &c, NULL, 0, false, NULL);
}
