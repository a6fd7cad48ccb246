// SPDX-License-Identifier: GPL-2.0
/*
 * nvmeio: time 4 KiB reads and writes of a block device with O_DIRECT,
 * as samples/ndk_nvmeof's bench mode (bench.c) times its own: 256
 * blocks, every other one of the first 2 MiB, written once, then for
 * each figure N/10 untimed I/Os and N timed ones on those blocks in
 * turn, one at a time (pread, pwrite) and 32 at once (Linux AIO). No two
 * blocks are adjacent, so the block layer merges no I/Os into one
 * command. One line per figure:
 *
 *   nvmeio: dir=read depth=1 size=4096 ios=N ns=T
 *
 * Usage: nvmeio <device> <N>
 *
 * `make bench` runs it on Linux's own NVMe/RDMA host (/dev/nvme0n1) in
 * its VM; bench.sh builds it static on the host. AIO goes through
 * syscall(2): the guest has no libaio.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIZE	4096
#define SPAN	256
#define DEPTH	32
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static int fd;
static char *buf;
static aio_context_t ctx;

static int sync_io(int write, unsigned int ios)
{
	unsigned int i;

	for (i = 0; i < ios; i++) {
		char *b = buf + (i % DEPTH) * SIZE;
		off_t off = (off_t)(i % SPAN) * 2 * SIZE;

		if ((write ? pwrite(fd, b, SIZE, off) :
			     pread(fd, b, SIZE, off)) != SIZE)
			return -1;
	}
	return 0;
}

/* Slot @slot's iocb for I/O @i: the slot's own buffer. */
static void aio_prep(struct iocb *cb, int write, int slot, unsigned int i)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = fd;
	cb->aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
	cb->aio_buf = (uintptr_t)(buf + slot * SIZE);
	cb->aio_nbytes = SIZE;
	cb->aio_offset = (int64_t)(i % SPAN) * 2 * SIZE;
}

/* DEPTH in flight: each completion reaped submits the next I/O. */
static int aio_io(int write, unsigned int ios)
{
	struct iocb cbs[DEPTH], *ptrs[DEPTH];
	struct io_event ev[DEPTH];
	unsigned int next = 0, done = 0;
	int k, n, got;

	for (n = 0; n < DEPTH && next < ios; n++) {
		aio_prep(&cbs[n], write, n, next++);
		ptrs[n] = &cbs[n];
	}
	if (n && syscall(SYS_io_submit, ctx, n, ptrs) != n)
		return -1;
	while (done < ios) {
		got = syscall(SYS_io_getevents, ctx, 1, DEPTH, ev, NULL);
		if (got < 1)
			return -1;
		n = 0;
		for (k = 0; k < got; k++) {
			struct iocb *cb = (struct iocb *)(uintptr_t)ev[k].obj;

			if (ev[k].res != SIZE) {
				errno = ev[k].res < 0 ? -ev[k].res : EIO;
				return -1;
			}
			done++;
			if (next < ios) {
				aio_prep(cb, write, cb - cbs, next++);
				ptrs[n++] = cb;
			}
		}
		if (n && syscall(SYS_io_submit, ctx, n, ptrs) != n)
			return -1;
	}
	return 0;
}

static int run(int write, int depth, unsigned int ios)
{
	return depth == 1 ? sync_io(write, ios) : aio_io(write, ios);
}

static int figure(int write, int depth, unsigned int ios)
{
	struct timespec a, b;

	if (run(write, depth, ios / 10))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (run(write, depth, ios))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("nvmeio: dir=%s depth=%d size=%d ios=%u ns=%lld\n",
	       write ? "write" : "read", depth, SIZE, ios,
	       (b.tv_sec - a.tv_sec) * 1000000000LL + b.tv_nsec - a.tv_nsec);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		int write, depth;
	} figures[] = { { 0, 1 }, { 1, 1 }, { 0, DEPTH }, { 1, DEPTH } };
	unsigned int ios, i;

	ios = argc == 3 ? strtoul(argv[2], NULL, 0) : 0;
	if (!ios) {
		fprintf(stderr, "usage: nvmeio <device> <ios>\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_DIRECT);
	buf = aligned_alloc(SIZE, DEPTH * SIZE);
	if (fd < 0 || !buf || syscall(SYS_io_setup, DEPTH, &ctx)) {
		perror("nvmeio");
		return 1;
	}
	memset(buf, 0, DEPTH * SIZE);
	/* Every block of the span written once: no read finds a hole. */
	if (aio_io(1, SPAN))
		goto fail;
	for (i = 0; i < ARRAY_SIZE(figures); i++)
		if (figure(figures[i].write, figures[i].depth, ios))
			goto fail;
	syscall(SYS_io_destroy, ctx);
	return 0;
fail:
	perror("nvmeio: I/O failed");
	return 1;
}
