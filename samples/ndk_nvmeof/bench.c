// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The bench mode (bench=N): instead of the checked jobs, time N reads
 * and N writes of 4 KiB on I/O queue 0, one command at a time and 32 at
 * once, and print one line per figure:
 *
 *   ndk_nvmeof: bench dir=read depth=1 size=4096 ios=N ns=T
 *
 * T is the time of the N commands, after N/10 untimed ones. `make bench`
 * counts guest instructions as ns (tests/bench/bench.sh), and times
 * Linux's own host against the same target the same way
 * (tests/bench/nvmeio.c): the same blocks, the same order of figures.
 */
#include "nvmeof.h"
#include <linux/slab.h>

#define NVMEOF_BENCH_SIZE	SZ_4K
/*
 * The commands cycle through 256 blocks of 4 KiB, every other one of the
 * first 2 MiB: Linux's block layer, timed against this, would merge
 * adjacent I/Os submitted together into one command.
 */
#define NVMEOF_BENCH_SPAN	256

struct nvmeof_bench {
	struct nvmeof_ctrl *ctrl;
	struct nvmeof_queue *q;
	void *buf[NVMEOF_QUEUE_SIZE];
	atomic_t outstanding;
	atomic_t failed;
	wait_queue_head_t wait;
};

static void nvmeof_bench_end(struct nvmeof_req *req)
{
	struct nvmeof_bench *b = req->priv;

	if (req->status || req->nvme_status)
		atomic_inc(&b->failed);
	if (atomic_dec_and_test(&b->outstanding))
		wake_up(&b->wait);
}

/* Until every command has ended; one unanswered fails the controller. */
static int nvmeof_bench_drain(struct nvmeof_bench *b)
{
	if (!wait_event_timeout(b->wait, !atomic_read(&b->outstanding),
				NVMEOF_CMD_TIMEOUT)) {
		nvmeof_ctrl_fail(b->ctrl, "I/O timed out");
		wait_event(b->wait, !atomic_read(&b->outstanding));
	}
	return atomic_read(&b->failed) ? -EIO : 0;
}

/*
 * @ios commands, I/O i on block i of the span: at depth 1 each waits for
 * the one before; at depth 32 (the queue's size) nvmeof_submit() waits
 * for a free slot. Nobody reads the buffers: two commands may share one.
 */
static int nvmeof_bench_io(struct nvmeof_bench *b, bool write, int depth,
			   u32 ios)
{
	u32 i;
	int err;

	for (i = 0; i < ios; i++) {
		atomic_inc(&b->outstanding);
		err = nvmeof_rw(b->ctrl, b->q, write,
				(u64)(i % NVMEOF_BENCH_SPAN) * 2 *
				NVMEOF_BENCH_SIZE >> b->ctrl->lba_shift,
				b->buf[i % NVMEOF_QUEUE_SIZE],
				NVMEOF_BENCH_SIZE, nvmeof_bench_end, b);
		if (err) {
			atomic_dec(&b->outstanding);
			nvmeof_bench_drain(b);
			return err;
		}
		if (depth == 1) {
			err = nvmeof_bench_drain(b);
			if (err)
				return err;
		}
	}
	return nvmeof_bench_drain(b);
}

static int nvmeof_bench_figure(struct nvmeof_bench *b, bool write, int depth,
			       u32 ios)
{
	u64 t;
	int err;

	err = nvmeof_bench_io(b, write, depth, ios / 10);
	if (err)
		return err;
	t = ktime_get_ns();
	err = nvmeof_bench_io(b, write, depth, ios);
	t = ktime_get_ns() - t;
	if (err)
		return err;
	pr_info("bench dir=%s depth=%d size=%u ios=%u ns=%llu\n",
		write ? "write" : "read", depth, NVMEOF_BENCH_SIZE, ios, t);
	return 0;
}

/**
 * nvmeof_bench() - time 4 KiB reads and writes on the first I/O queue
 * @ctrl: a started controller
 * @ios: commands per figure
 *
 * Return: 0, or a negative errno when a command failed.
 */
int nvmeof_bench(struct nvmeof_ctrl *ctrl, u32 ios)
{
	static const struct {
		bool write;
		int depth;
	} figures[] = {
		{ false, 1 }, { true, 1 },
		{ false, NVMEOF_QUEUE_SIZE }, { true, NVMEOF_QUEUE_SIZE },
	};
	struct nvmeof_bench *b;
	int i, err = -ENOMEM;

	if (ctrl->nsze << ctrl->lba_shift <
	    (u64)NVMEOF_BENCH_SPAN * 2 * NVMEOF_BENCH_SIZE) {
		pr_err("the namespace holds less than %u bytes\n",
		       NVMEOF_BENCH_SPAN * 2 * NVMEOF_BENCH_SIZE);
		return -ENOSPC;
	}
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->ctrl = ctrl;
	b->q = &ctrl->io[0];
	init_waitqueue_head(&b->wait);
	for (i = 0; i < NVMEOF_QUEUE_SIZE; i++) {
		b->buf[i] = kzalloc(NVMEOF_BENCH_SIZE, GFP_KERNEL);
		if (!b->buf[i])
			goto out;
	}
	/* Every block of the span written once: no read finds a hole. */
	err = nvmeof_bench_io(b, true, NVMEOF_QUEUE_SIZE, NVMEOF_BENCH_SPAN);
	for (i = 0; !err && i < ARRAY_SIZE(figures); i++)
		err = nvmeof_bench_figure(b, figures[i].write,
					  figures[i].depth, ios);
out:
	for (i = 0; i < NVMEOF_QUEUE_SIZE; i++)
		kfree(b->buf[i]);
	kfree(b);
	return err;
}
