// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_nvmeof: an NVMe over Fabrics host on NDKPI, and its exerciser.
 *
 * Loading the module connects to the subsystem @subnqn at @traddr, runs
 * I/O from one thread per I/O queue, each bound to its own CPU, and
 * disconnects. Each thread writes patterns of 512 bytes to 128 KiB,
 * 32 commands in flight, flushes, reads them back and compares, and
 * goes on with blocks and 4 KiB until it has sent @ios commands; then
 * it writes a marker block whose text it logs, for the caller to find
 * on the target's own namespace. With soak=1 the threads go on until
 * the controller fails (the target went away) and check that every
 * command in flight ended once, with an error.
 *
 * With bench=N it times N 4 KiB reads and writes per figure on I/O
 * queue 0 instead (bench.c), for `make bench`.
 *
 * The verdict is the last line: "ndk_nvmeof: PASS ..." or
 * "ndk_nvmeof: FAIL ..."; the module stays loaded only after a PASS.
 */
#include "nvmeof.h"
#include <linux/inet.h>
#include <linux/inetdevice.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>

static char *traddr;
module_param(traddr, charp, 0444);
MODULE_PARM_DESC(traddr, "the target's IPv4 address");
static int trsvcid = NVME_RDMA_IP_PORT;
module_param(trsvcid, int, 0444);
MODULE_PARM_DESC(trsvcid, "the target's port (4420)");
static char *subnqn;
module_param(subnqn, charp, 0444);
MODULE_PARM_DESC(subnqn, "the subsystem's NQN");
static char *ifname = "eth0";
module_param(ifname, charp, 0444);
MODULE_PARM_DESC(ifname, "the interface whose NDK adapter to use (eth0)");
static uint nsid = 1;
module_param(nsid, uint, 0444);
MODULE_PARM_DESC(nsid, "the namespace to do I/O on (1)");
static int queues = 2;
module_param(queues, int, 0444);
MODULE_PARM_DESC(queues, "I/O queues, one thread each (2)");
static uint kato_ms = 5000;
module_param(kato_ms, uint, 0444);
MODULE_PARM_DESC(kato_ms, "Keep Alive timeout in ms (5000)");
static uint ios = 5000;
module_param(ios, uint, 0444);
MODULE_PARM_DESC(ios, "commands each queue sends at least, checked byte for byte (5000)");

static uint max_size = NVMEOF_MAX_IO;
module_param(max_size, uint, 0444);
MODULE_PARM_DESC(max_size, "the largest transfer of the checked rounds, in bytes (131072)");

static uint io_timeout_ms = 30000;
module_param(io_timeout_ms, uint, 0444);
MODULE_PARM_DESC(io_timeout_ms, "how long a queue's commands may wait for their next answer before the controller is failed (30000)");

static bool soak;
module_param(soak, bool, 0444);
MODULE_PARM_DESC(soak, "run I/O until the controller fails, then check that every command ended once");
static uint bench;
module_param(bench, uint, 0444);
MODULE_PARM_DESC(bench, "instead of the checked I/O, time this many 4 KiB reads and writes per figure on I/O queue 0 (0: no)");

/* Transfer sizes of the rounds, every one 32 commands deep. */
static const u32 nvmeof_sizes[] = { 512, 4096, 16384, 65536, NVMEOF_MAX_IO };

struct nvmeof_job;

/* One command of a job, and its buffer. */
struct nvmeof_io {
	struct nvmeof_job *job;
	void *buf;
	unsigned long ended;
	NTSTATUS status;
	u16 nvme_status;
};

/* One I/O queue's thread and what it counted. */
struct nvmeof_job {
	struct nvmeof_ctrl *ctrl;
	struct nvmeof_queue *q;
	int index;
	struct task_struct *task;
	struct completion done;
	u64 base;
	u32 rounds;
	atomic_t outstanding;
	wait_queue_head_t wait;
	unsigned long submitted;
	atomic_long_t ended;
	atomic_long_t twice;
	unsigned long failed;
	unsigned long mismatched;
	char marker[48];
	u64 marker_byte;
	int err;
	struct nvmeof_io io[NVMEOF_QUEUE_SIZE];
};

/* A command's end, counted exactly once per command. */
static void nvmeof_io_end(struct nvmeof_req *req)
{
	struct nvmeof_io *io = req->priv;
	struct nvmeof_job *job = io->job;

	if (test_and_set_bit(0, &io->ended)) {
		atomic_long_inc(&job->twice);
		return;
	}
	io->status = req->status;
	io->nvme_status = req->nvme_status;
	atomic_long_inc(&job->ended);
	/* Every answer counts as progress for nvmeof_answered(). */
	atomic_dec(&job->outstanding);
	wake_up(&job->wait);
}

static u32 nvmeof_word(u32 seed, u32 k)
{
	return seed * 0x9e3779b1 + k;
}

static void nvmeof_fill(void *buf, u32 len, u32 seed)
{
	u32 *w = buf, k;

	for (k = 0; k < len / 4; k++)
		w[k] = nvmeof_word(seed, k);
}

static bool nvmeof_same(const void *buf, u32 len, u32 seed)
{
	const u32 *w = buf;
	u32 k;

	for (k = 0; k < len / 4; k++)
		if (w[k] != nvmeof_word(seed, k))
			return false;
	return true;
}

/*
 * Wait until the job's commands have all ended, each answer resetting
 * the clock: false once none came for io_timeout_ms. A host's timer
 * usually runs from each command's submission, but a full queue of
 * 128 KiB commands can take longer than that to cross a slow link while
 * the target answers every one in turn; a queue that stops answering is
 * still caught within the timeout of its last answer.
 */
static bool nvmeof_answered(struct nvmeof_job *job)
{
	unsigned long timeout = msecs_to_jiffies(io_timeout_ms);
	int left;

	while ((left = atomic_read(&job->outstanding)))
		if (!wait_event_timeout(job->wait,
					atomic_read(&job->outstanding) != left,
					timeout))
			return false;
	return true;
}

/*
 * Submit @n commands of @len bytes, buffer i at the job's block
 * base + i * NVMEOF_MAX_IO, and wait until each has ended. Return: the
 * commands that failed.
 */
static int nvmeof_batch(struct nvmeof_job *job, bool write, u32 len, int n)
{
	struct nvmeof_ctrl *ctrl = job->ctrl;
	int i, bad = 0;

	atomic_set(&job->outstanding, 0);
	for (i = 0; i < n; i++) {
		struct nvmeof_io *io = &job->io[i];
		u64 lba = job->base + ((u64)i * NVMEOF_MAX_IO >> ctrl->lba_shift);

		io->ended = 0;
		io->status = STATUS_SUCCESS;
		io->nvme_status = 0;
		atomic_inc(&job->outstanding);
		if (nvmeof_rw(ctrl, job->q, write, lba, io->buf, len,
			      nvmeof_io_end, io)) {
			atomic_dec(&job->outstanding);
			io->status = STATUS_CONNECTION_INVALID;
			set_bit(0, &io->ended);
			continue;
		}
		job->submitted++;
	}
	if (!nvmeof_answered(job)) {
		/* As a host's timeout does: give up, and every command ends. */
		pr_err("q%d: %d commands unanswered for %u ms\n", job->index,
		       atomic_read(&job->outstanding), io_timeout_ms);
		nvmeof_queue_report(job->q);
		/*
		 * A Flush behind them tells a dead queue (it fails too) from
		 * one that still works; those still out a while after its
		 * answer are logged.
		 */
		pr_err("q%d: a Flush behind them %s\n", job->index,
		       nvmeof_flush(ctrl, job->q) ? "failed too" : "was answered");
		wait_event_timeout(job->wait, !atomic_read(&job->outstanding),
				   NVMEOF_PROBE_WAIT);
		pr_err("q%d: %d of them unanswered %u ms after the Flush\n",
		       job->index, atomic_read(&job->outstanding),
		       jiffies_to_msecs(NVMEOF_PROBE_WAIT));
		nvmeof_ctrl_fail(ctrl, "I/O timed out");
		wait_event(job->wait, !atomic_read(&job->outstanding));
	}
	for (i = 0; i < n; i++)
		if (job->io[i].status || job->io[i].nvme_status) {
			if (!bad++)
				pr_err("q%d: %s of %u bytes ended with %#x/%#x\n",
				       job->index, write ? "write" : "read",
				       len, job->io[i].status,
				       job->io[i].nvme_status);
			job->failed++;
		}
	return bad;
}

/* Write, flush and read back @len bytes in every slot of the job. */
static int nvmeof_round(struct nvmeof_job *job, u32 len)
{
	u32 seed = (job->index << 24) ^ (job->rounds << 8) ^ len;
	int i;

	for (i = 0; i < NVMEOF_QUEUE_SIZE; i++)
		nvmeof_fill(job->io[i].buf, len, seed + i);
	if (nvmeof_batch(job, true, len, NVMEOF_QUEUE_SIZE))
		return -EIO;
	if (nvmeof_flush(job->ctrl, job->q)) {
		pr_err("q%d: Flush failed\n", job->index);
		job->failed++;
		return -EIO;
	}
	for (i = 0; i < NVMEOF_QUEUE_SIZE; i++)
		memset(job->io[i].buf, 0, len);
	if (nvmeof_batch(job, false, len, NVMEOF_QUEUE_SIZE))
		return -EIO;
	for (i = 0; i < NVMEOF_QUEUE_SIZE; i++)
		if (!nvmeof_same(job->io[i].buf, len, seed + i)) {
			if (!job->mismatched++)
				pr_err("q%d: block %d of %u bytes read back differs\n",
				       job->index, i, len);
		}
	job->rounds++;
	return job->mismatched ? -EIO : 0;
}

/* One block at the job's base naming the job: the target-side check. */
static int nvmeof_marker(struct nvmeof_job *job)
{
	u32 block = 1U << job->ctrl->lba_shift;
	void *buf = job->io[0].buf;

	memset(buf, 0, block);
	snprintf(job->marker, sizeof(job->marker), "ndk_nvmeof q%d %08x",
		 job->index, get_random_u32());
	strscpy(buf, job->marker, block);
	job->marker_byte = job->base << job->ctrl->lba_shift;
	return nvmeof_batch(job, true, block, 1) ? -EIO : 0;
}

static int nvmeof_job_run(void *arg)
{
	struct nvmeof_job *job = arg;
	int i;

	do {
		for (i = 0; i < ARRAY_SIZE(nvmeof_sizes); i++) {
			if (nvmeof_sizes[i] < 1U << job->ctrl->lba_shift ||
			    nvmeof_sizes[i] > job->ctrl->max_io ||
			    nvmeof_sizes[i] > max_size)
				continue;
			if (nvmeof_round(job, nvmeof_sizes[i]))
				return 0;
			if (soak && job->rounds == 1 && !job->index)
				pr_info("I/O running\n");
		}
	} while (soak);
	/* Then small commands, one block or 4 KiB, up to @ios. */
	while (job->submitted < ios)
		if (nvmeof_round(job, job->rounds & 1 ? SZ_4K :
					1U << job->ctrl->lba_shift))
			return 0;
	if (nvmeof_marker(job))
		job->err = -EIO;
	return 0;
}

static int nvmeof_job_thread(void *arg)
{
	struct nvmeof_job *job = arg;

	nvmeof_job_run(job);
	complete(&job->done);
	return 0;
}

static void nvmeof_jobs_free(struct nvmeof_job *jobs, int n)
{
	int i, k;

	for (i = 0; jobs && i < n; i++)
		for (k = 0; k < NVMEOF_QUEUE_SIZE; k++)
			kfree(jobs[i].io[k].buf);
	kfree(jobs);
}

/* Each job its region of the namespace, its buffers and its thread. */
static struct nvmeof_job *nvmeof_jobs_start(struct nvmeof_ctrl *ctrl)
{
	u64 region = (u64)NVMEOF_QUEUE_SIZE * NVMEOF_MAX_IO >> ctrl->lba_shift;
	struct nvmeof_job *jobs;
	int i, k;

	if ((ctrl->nr_io + 1) * region > ctrl->nsze) {
		pr_err("the namespace holds fewer than %llu blocks\n",
		       (ctrl->nr_io + 1) * region);
		return NULL;
	}
	jobs = kcalloc(ctrl->nr_io, sizeof(*jobs), GFP_KERNEL);
	if (!jobs)
		return NULL;
	for (i = 0; i < ctrl->nr_io; i++) {
		struct nvmeof_job *job = &jobs[i];

		job->ctrl = ctrl;
		job->q = &ctrl->io[i];
		job->index = i;
		/* Region 0 stays for other hosts. */
		job->base = (i + 1) * region;
		init_waitqueue_head(&job->wait);
		init_completion(&job->done);
		for (k = 0; k < NVMEOF_QUEUE_SIZE; k++) {
			job->io[k].job = job;
			job->io[k].buf = kmalloc(NVMEOF_MAX_IO, GFP_KERNEL);
			if (!job->io[k].buf)
				goto fail;
		}
	}
	for (i = 0; i < ctrl->nr_io; i++) {
		struct task_struct *t;

		t = kthread_create(nvmeof_job_thread, &jobs[i], "nvmeof_q%d",
				   i);
		if (IS_ERR(t)) {
			jobs[i].err = PTR_ERR(t);
			complete(&jobs[i].done);
			continue;
		}
		/* Submissions from different CPUs, one per queue. */
		kthread_bind(t, i % num_online_cpus());
		get_task_struct(t);
		jobs[i].task = t;
		wake_up_process(t);
	}
	return jobs;
fail:
	nvmeof_jobs_free(jobs, ctrl->nr_io);
	return NULL;
}

/*
 * Each thread ends on its own; in a soak, at the failure. Over a slow
 * link a whole run takes minutes: each minute the log says how far the
 * queues got, so a stall shows where it sits, and insmod's wait is not
 * one the hung-task detector reports.
 */
static void nvmeof_jobs_wait(struct nvmeof_job *jobs, int n)
{
	int i, k;

	for (i = 0; i < n; i++)
		while (!wait_for_completion_timeout(&jobs[i].done,
						    NVMEOF_PROGRESS))
			for (k = 0; k < n; k++)
				pr_info("q%d: %ld commands ended, %d out\n", k,
					atomic_long_read(&jobs[k].ended),
					atomic_read(&jobs[k].outstanding));
}

/*
 * What the jobs counted: every command they submitted ended exactly
 * once, and (for a soak) at least one ended with the failure.
 */
static bool nvmeof_jobs_verdict(struct nvmeof_job *jobs, int n)
{
	unsigned long submitted = 0, ended = 0, twice = 0, failed = 0;
	unsigned long mismatched = 0;
	bool ok = true;
	int i;

	for (i = 0; i < n; i++) {
		struct nvmeof_job *job = &jobs[i];

		if (job->task) {
			kthread_stop(job->task);
			put_task_struct(job->task);
		}
		submitted += job->submitted;
		ended += atomic_long_read(&job->ended);
		twice += atomic_long_read(&job->twice);
		failed += job->failed;
		mismatched += job->mismatched;
		if (job->err)
			ok = false;
		if (!soak && !job->err && !job->failed)
			pr_info("marker q%d at byte %llu: %s\n", i,
				job->marker_byte, job->marker);
	}
	pr_info("%lu commands, %lu ended, %lu twice, %lu with an error, %lu blocks read back wrong\n",
		submitted, ended, twice, failed, mismatched);
	if (ended != submitted || twice || mismatched)
		return false;
	return ok && (soak ? failed > 0 : !failed);
}

/*
 * Every keyed SGL asked the target to invalidate its token when done,
 * and Linux's target always does: the host never needs to.
 */
static bool nvmeof_invalidations(struct nvmeof_ctrl *ctrl)
{
	long remote = 0, local = 0;
	int i;

	for (i = -1; i < ctrl->nr_io; i++) {
		struct nvmeof_queue *q = nvmeof_queue_nr(ctrl, i);

		remote += atomic_long_read(&q->remote_inv);
		local += atomic_long_read(&q->local_inv);
	}
	pr_info("%ld responses invalidated their command's token, the host invalidated %ld\n",
		remote, local);
	return remote > 0 && !local;
}

/* The adapter's interface and its IPv4 address, the source of queues. */
static int nvmeof_source(struct nvmeof_ctrl *ctrl)
{
	struct net_device *dev;
	struct in_device *in;
	int ifindex = -ENODEV;

	dev = dev_get_by_name(&init_net, ifname);
	if (!dev)
		return -ENODEV;
	rcu_read_lock();
	in = __in_dev_get_rcu(dev);
	if (in && in->ifa_list) {
		ctrl->src.sin_family = AF_INET;
		ctrl->src.sin_addr.s_addr = rcu_dereference(in->ifa_list)->ifa_local;
		ifindex = dev->ifindex;
	}
	rcu_read_unlock();
	dev_put(dev);
	return ifindex;
}

static int __init nvmeof_init(void)
{
	struct nvmeof_ctrl *ctrl;
	struct nvmeof_job *jobs = NULL;
	int ifindex, err, njobs;
	bool ok = false, inv_ok;

	if (!traddr || !subnqn || queues < 1 || queues > 64 || !kato_ms ||
	    !io_timeout_ms) {
		pr_err("FAIL: traddr and subnqn are needed, queues 1 to 64, kato_ms and io_timeout_ms above 0\n");
		return -EINVAL;
	}
	ctrl = kzalloc(sizeof(*ctrl), GFP_KERNEL);
	if (!ctrl)
		return -ENOMEM;
	ctrl->dst.sin_family = AF_INET;
	ctrl->dst.sin_port = htons(trsvcid);
	if (!in4_pton(traddr, -1, (u8 *)&ctrl->dst.sin_addr, -1, NULL)) {
		pr_err("FAIL: traddr %s is no IPv4 address\n", traddr);
		kfree(ctrl);
		return -EINVAL;
	}
	strscpy(ctrl->subnqn, subnqn, sizeof(ctrl->subnqn));
	uuid_gen(&ctrl->hostid);
	snprintf(ctrl->hostnqn, sizeof(ctrl->hostnqn),
		 "nqn.2014-08.org.nvmexpress:uuid:%pUb", &ctrl->hostid);
	ctrl->nsid = nsid;
	ctrl->kato_ms = kato_ms;

	ifindex = nvmeof_source(ctrl);
	err = ifindex < 0 ? ifindex :
	      nvmeof_ctrl_start(ctrl, ifindex, queues);
	if (bench) {
		if (!err)
			err = nvmeof_bench(ctrl, bench);
		nvmeof_ctrl_stop(ctrl);
		kfree(ctrl);
		if (err) {
			pr_err("FAIL: bench\n");
			return err;
		}
		pr_info("PASS: bench\n");
		return 0;
	}
	if (!err)
		jobs = nvmeof_jobs_start(ctrl);
	njobs = jobs ? ctrl->nr_io : 0;
	nvmeof_jobs_wait(jobs, njobs);
	inv_ok = nvmeof_invalidations(ctrl);
	nvmeof_ctrl_stop(ctrl);
	if (jobs) {
		ok = nvmeof_jobs_verdict(jobs, njobs) && (soak || inv_ok);
		nvmeof_jobs_free(jobs, njobs);
	}
	kfree(ctrl);
	if (!ok) {
		pr_err("FAIL: %s\n", err ? "no controller" : "I/O");
		return err ? err : -EIO;
	}
	pr_info("PASS: %s\n", soak ? "the target went away, every command ended once"
				  : "data written, read back and compared");
	return 0;
}

static void __exit nvmeof_exit(void)
{
}

module_init(nvmeof_init);
module_exit(nvmeof_exit);
MODULE_DESCRIPTION("A minimal NVMe over Fabrics host on NDKPI");
MODULE_LICENSE("Dual BSD/GPL");
