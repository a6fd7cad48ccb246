// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_wdk: the out-of-line part of the WDK compatibility layer
 * (include/ndk/wdk/). Ported Windows NDK consumers link against it; ndk.ko
 * itself knows nothing of the WDK. Everything that can be inline is, in
 * the headers; here is what needs state, a loop or a Linux call too big to
 * inline: waits, the WSK provider, MDLs, work items, the driver load and
 * unload stub, debug output and string conversions.
 */
/* DbgPrint output carries the driver's own prefixes. */
#define pr_fmt(fmt) fmt

#include <linux/ctype.h>
#include <linux/delay.h>
#include <linux/if_arp.h>
#include <linux/inet.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/vmalloc.h>
#include <net/net_namespace.h>

#include <wdm.h>
#include <wsk.h>
#include <wskndk.h>
#include <netioapi.h>

#include "../ndk/compat.h"

/* The functions themselves, not the wrappers that cast port pointers. */
#undef RtlIpv4StringToAddressExW
#undef RtlIpv4StringToAddressExA
#undef RtlIpv6StringToAddressExW
#undef RtlIpv6StringToAddressExA

MODULE_DESCRIPTION("ndk_wdk: WDK compatibility layer for Windows NDK consumers");
MODULE_LICENSE("Dual BSD/GPL");

/* Windows system time (100 ns since 1601) of the Unix epoch. */
#define WDK_EPOCH_DELTA	116444736000000000LL

/* A timeout in the Windows form as jiffies from now (0 when past). */
static unsigned long wdk_timeout_jiffies(LONGLONG t)
{
	LARGE_INTEGER now;

	if (t > 0) {
		KeQuerySystemTime(&now);
		t = now.QuadPart - t;	/* negative while in the future */
		if (t >= 0)
			return 0;
	}
	return nsecs_to_jiffies((u64)-t * 100);
}

static bool wdk_event_take(PRKEVENT e)
{
	if (e->Type == SynchronizationEvent)
		return atomic_cmpxchg(&e->Signaled, 1, 0) == 1;
	return atomic_read_acquire(&e->Signaled);
}

/*
 * The wait is satisfied: a KeSetEvent() that signalled it may still hold
 * the wait queue's lock, which it signals under. Once this thread has
 * had the lock, that call is over and the event may go with the stack.
 */
static NTSTATUS wdk_event_taken(PRKEVENT e)
{
	unsigned long flags;

	spin_lock_irqsave(&e->Wait.lock, flags);
	spin_unlock_irqrestore(&e->Wait.lock, flags);
	return STATUS_SUCCESS;
}

/**
 * ndk_wdk_wait_event() - KeWaitForSingleObject() on a KEVENT
 * @Event: the event
 * @Timeout: NULL to wait for ever, or a Windows timeout: negative is
 *	relative, positive absolute system time, both in 100 ns units; zero
 *	only tests the event
 *
 * A synchronization event that satisfies the wait is reset. Waits that
 * may sleep need process context (PASSIVE_LEVEL).
 *
 * Return: STATUS_SUCCESS when the event was signalled, STATUS_TIMEOUT.
 */
NTSTATUS ndk_wdk_wait_event(PRKEVENT Event, PLARGE_INTEGER Timeout)
{
	if (Timeout && !Timeout->QuadPart)
		return wdk_event_take(Event) ? wdk_event_taken(Event) :
					       STATUS_TIMEOUT;
	might_sleep();
	if (!Timeout) {
		wait_event(Event->Wait, wdk_event_take(Event));
		return wdk_event_taken(Event);
	}
	if (!wait_event_timeout(Event->Wait, wdk_event_take(Event),
				wdk_timeout_jiffies(Timeout->QuadPart)) &&
	    !wdk_event_take(Event))
		return STATUS_TIMEOUT;
	return wdk_event_taken(Event);
}
EXPORT_SYMBOL_GPL(ndk_wdk_wait_event);

/**
 * KeDelayExecutionThread() - sleep for a Windows interval
 * @WaitMode: KernelMode
 * @Alertable: ignored: Linux has no APCs
 * @Interval: negative relative or positive absolute, in 100 ns units
 *
 * Return: STATUS_SUCCESS.
 */
NTSTATUS KeDelayExecutionThread(KPROCESSOR_MODE WaitMode, BOOLEAN Alertable,
				PLARGE_INTEGER Interval)
{
	schedule_timeout_uninterruptible(wdk_timeout_jiffies(Interval->QuadPart));
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(KeDelayExecutionThread);

/* ------------------------------------------------------------------ */
/* Debug output: Windows printf formats for printk                     */
/* ------------------------------------------------------------------ */

/* Append a UTF-16 string as ASCII ('?' for the rest). */
static int wdk_put_wide(char *out, size_t room, const WCHAR *s, long n)
{
	int len = 0;

	if (!s)
		return scnprintf(out, room, "(null)");
	for (; n && *s && len + 1 < room; s++, n--)
		out[len++] = *s < 0x80 ? (char)*s : '?';
	out[len] = '\0';
	return len;
}

/**
 * ndk_wdk_dbg_print() - DbgPrint() and DbgPrintEx()
 * @Level: a DPFLTR_*_LEVEL value, mapped to a printk level
 * @Format: a Windows format string: %ld and %lx are 32 bits (LLP64),
 *	%I64d and %lld 64, %Id and %zd pointer-sized, %ws and %S wide
 *	strings, %wZ a PUNICODE_STRING
 *
 * Return: STATUS_SUCCESS.
 */
ULONG ndk_wdk_dbg_print(ULONG Level, PCSTR Format, ...)
{
	char *buf = kmalloc(512, GFP_ATOMIC);
	const char *f = Format;
	size_t len = 0, room = 512;
	va_list ap;

	if (!buf)
		return STATUS_NO_MEMORY;
	va_start(ap, Format);
	while (*f && len + 1 < room) {
		char spec[32] = "%";
		int n = 1, size = 0, wide = 0, width, prec = -1;

		if (*f != '%' || f[1] == '%') {
			buf[len++] = *f;
			f += *f == '%' ? 2 : 1;
			continue;
		}
		f++;
		while (strchr("-+ #0", *f) && n < 8)
			spec[n++] = *f++;
		if (*f == '*') {
			width = va_arg(ap, int);
			n += snprintf(spec + n, 8, "%d", width);
			f++;
		}
		while (isdigit(*f) && n < 16)
			spec[n++] = *f++;
		if (*f == '.') {
			spec[n++] = *f++;
			if (*f == '*') {
				prec = va_arg(ap, int);
				n += snprintf(spec + n, 8, "%d", prec);
				f++;
			}
			while (isdigit(*f) && n < 24)
				spec[n++] = *f++;
		}
		/* Sizes: 8 for 64-bit, 1 for char-sized, 0 for int. */
		if (!strncmp(f, "I64", 3)) {
			size = 8;
			f += 3;
		} else if (!strncmp(f, "I32", 3)) {
			f += 3;
		} else if (*f == 'I' || *f == 'z') {
			size = 8;
			f++;
		} else if (f[0] == 'l' && f[1] == 'l') {
			size = 8;
			f += 2;
		} else if (*f == 'l' || *f == 'w') {
			wide = 1;
			f++;
		} else if (*f == 'h') {
			f += f[1] == 'h' ? 2 : 1;
		}
		spec[n] = '\0';
		switch (*f) {
		case 'd':
		case 'i':
		case 'u':
		case 'x':
		case 'X':
		case 'o':
			if (size == 8) {
				spec[n++] = 'l';
				spec[n++] = 'l';
			}
			spec[n++] = *f;
			spec[n] = '\0';
			if (size == 8)
				len += scnprintf(buf + len, room - len, spec,
						 va_arg(ap, long long));
			else
				len += scnprintf(buf + len, room - len, spec,
						 va_arg(ap, int));
			break;
		case 'c':
		case 'C':
			len += scnprintf(buf + len, room - len, "%c",
					 (char)va_arg(ap, int));
			break;
		case 'p':
			len += scnprintf(buf + len, room - len, "%p",
					 va_arg(ap, void *));
			break;
		case 'S':
			wide = 1;
			fallthrough;
		case 's':
			if (wide)
				len += wdk_put_wide(buf + len, room - len,
						    va_arg(ap, const WCHAR *),
						    prec);
			else
				len += scnprintf(buf + len, room - len, "%s",
						 va_arg(ap, const char *));
			break;
		case 'Z': {
			PCUNICODE_STRING u = va_arg(ap, PCUNICODE_STRING);

			len += wdk_put_wide(buf + len, room - len,
					    u ? u->Buffer : NULL,
					    u ? u->Length / sizeof(WCHAR) : 0);
			break;
		}
		default:
			len += scnprintf(buf + len, room - len, "%%?");
			break;
		}
		if (*f)
			f++;
	}
	va_end(ap);
	buf[min(len, room - 1)] = '\0';
	if (Level == DPFLTR_ERROR_LEVEL)
		pr_err("%s", buf);
	else if (Level == DPFLTR_WARNING_LEVEL)
		pr_warn("%s", buf);
	else
		pr_info("%s", buf);
	kfree(buf);
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(ndk_wdk_dbg_print);

/* ------------------------------------------------------------------ */
/* MDLs                                                                */
/* ------------------------------------------------------------------ */

/**
 * IoAllocateMdl() - an MDL for a non-paged kernel buffer
 * @VirtualAddress: kmalloc'd, vmalloc'd or other kernel memory
 * @Length: bytes
 * @SecondaryBuffer: ignored: chain MDLs through their Next member
 * @ChargeQuota: must be FALSE
 * @Irp: must be NULL: there are no IRPs
 *
 * The MDL is ndk's struct ndk_mdl and describes the memory in place.
 * Call MmBuildMdlForNonPagedPool() before MmGetMdlPfnArray().
 *
 * Return: the MDL, or NULL.
 */
PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length,
		   BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota, PIRP Irp)
{
	struct ndk_wdk_mdl *w;

	if (!Length || ChargeQuota || Irp)
		return NULL;
	w = kzalloc(MmSizeOfMdl(VirtualAddress, Length),
		    ndk_wdk_gfp(false));
	if (!w)
		return NULL;
	MmInitializeMdl(&w->mdl, VirtualAddress, Length);
	return &w->mdl;
}
EXPORT_SYMBOL_GPL(IoAllocateMdl);

/**
 * IoFreeMdl() - free an MDL from IoAllocateMdl()
 * @Mdl: the MDL; the memory it describes is the caller's
 */
void IoFreeMdl(PMDL Mdl)
{
	kfree(container_of(Mdl, struct ndk_wdk_mdl, mdl));
}
EXPORT_SYMBOL_GPL(IoFreeMdl);

/**
 * MmBuildMdlForNonPagedPool() - fill an MDL's page frame numbers
 * @MemoryDescriptorList: an MDL of resident kernel memory
 */
void MmBuildMdlForNonPagedPool(PMDL MemoryDescriptorList)
{
	struct ndk_wdk_mdl *w = container_of(MemoryDescriptorList,
					     struct ndk_wdk_mdl, mdl);
	unsigned long va = (unsigned long)PAGE_ALIGN(w->mdl.va);
	ULONG i;

	for (i = 0; i < w->Pages; i++, va += PAGE_SIZE)
		w->Pfn[i] = is_vmalloc_addr((void *)va) ?
			    vmalloc_to_pfn((void *)va) :
			    PHYS_PFN(__pa(va));
}
EXPORT_SYMBOL_GPL(MmBuildMdlForNonPagedPool);

/* ------------------------------------------------------------------ */
/* Work items and the driver stub                                      */
/* ------------------------------------------------------------------ */

static void wdk_work(struct work_struct *work)
{
	PIO_WORKITEM item = container_of(work, IO_WORKITEM, Work);

	if (item->RoutineEx)
		item->RoutineEx(item->IoObject, item->Context, item);
	else
		item->Routine(item->IoObject, item->Context);
}

/**
 * IoInitializeWorkItem() - set up a work item in the caller's memory
 * @IoObject: the driver object or its device object
 * @IoWorkItem: IoSizeofWorkItem() bytes of the caller's
 */
void IoInitializeWorkItem(PVOID IoObject, PIO_WORKITEM IoWorkItem)
{
	const DEVICE_OBJECT *dev = IoObject;

	memset(IoWorkItem, 0, sizeof(*IoWorkItem));
	IoWorkItem->IoObject = IoObject;
	/* Both objects start with their Type. */
	IoWorkItem->Driver = dev->Type == IO_TYPE_DRIVER ? IoObject :
			     dev->DriverObject;
	INIT_WORK(&IoWorkItem->Work, wdk_work);
}
EXPORT_SYMBOL_GPL(IoInitializeWorkItem);

/**
 * IoAllocateWorkItem() - allocate a work item
 * @DeviceObject: the driver's device object (DriverObject->DeviceObject),
 *	or its driver object cast to one
 *
 * Return: the item, or NULL. Callable from atomic context.
 */
PIO_WORKITEM IoAllocateWorkItem(PDEVICE_OBJECT DeviceObject)
{
	PIO_WORKITEM item = kmalloc(sizeof(*item), ndk_wdk_gfp(false));

	if (item)
		IoInitializeWorkItem(DeviceObject, item);
	return item;
}
EXPORT_SYMBOL_GPL(IoAllocateWorkItem);

/**
 * IoFreeWorkItem() - free a work item that is not queued
 * @IoWorkItem: from IoAllocateWorkItem(); its routine may be the caller
 */
void IoFreeWorkItem(PIO_WORKITEM IoWorkItem)
{
	kfree(IoWorkItem);
}
EXPORT_SYMBOL_GPL(IoFreeWorkItem);

static void wdk_queue(PIO_WORKITEM item, PVOID Context)
{
	item->Context = Context;
	/* Windows forbids queueing an item twice; Linux would drop it. */
	WARN_ON(!queue_work(item->Driver->NdkWdkQueue, &item->Work));
}

/**
 * IoQueueWorkItem() - run a routine in process context (PASSIVE_LEVEL)
 * @IoWorkItem: the item
 * @WorkerRoutine: called with the driver's device object and @Context
 * @QueueType: ignored: every item goes to the driver's workqueue
 * @Context: for @WorkerRoutine
 *
 * Callable from any context. The driver's workqueue is drained after its
 * DriverUnload returns, before the module goes away.
 */
void IoQueueWorkItem(PIO_WORKITEM IoWorkItem,
		     PIO_WORKITEM_ROUTINE WorkerRoutine,
		     WORK_QUEUE_TYPE QueueType, PVOID Context)
{
	IoWorkItem->Routine = WorkerRoutine;
	IoWorkItem->RoutineEx = NULL;
	wdk_queue(IoWorkItem, Context);
}
EXPORT_SYMBOL_GPL(IoQueueWorkItem);

/**
 * IoQueueWorkItemEx() - IoQueueWorkItem() with the item passed back
 * @IoWorkItem: the item
 * @WorkerRoutine: called with the I/O object, @Context and the item,
 *	which it may free
 * @QueueType: ignored
 * @Context: for @WorkerRoutine
 */
void IoQueueWorkItemEx(PIO_WORKITEM IoWorkItem,
		       PIO_WORKITEM_ROUTINE_EX WorkerRoutine,
		       WORK_QUEUE_TYPE QueueType, PVOID Context)
{
	IoWorkItem->RoutineEx = WorkerRoutine;
	wdk_queue(IoWorkItem, Context);
}
EXPORT_SYMBOL_GPL(IoQueueWorkItemEx);

/* Windows drivers often keep the name; it is built here, never read. */
static WCHAR wdk_registry_path[] = L"\\Registry\\Machine\\System";

/**
 * ndk_wdk_driver_load() - module init of a ported driver: DriverEntry
 * @DriverObject: the module's driver object
 * @Entry: its DriverEntry
 * @Name: the module name, for its workqueue
 *
 * Return: 0, or a negative errno when DriverEntry failed (the NTSTATUS
 * is logged).
 */
int ndk_wdk_driver_load(PDRIVER_OBJECT DriverObject,
			PDRIVER_INITIALIZE Entry, const char *Name)
{
	UNICODE_STRING path;
	NTSTATUS status;

	DriverObject->Type = IO_TYPE_DRIVER;
	DriverObject->Size = sizeof(*DriverObject);
	DriverObject->NdkWdkDevice.Type = IO_TYPE_DEVICE;
	DriverObject->NdkWdkDevice.Size = sizeof(DEVICE_OBJECT);
	DriverObject->NdkWdkDevice.DriverObject = DriverObject;
	DriverObject->DeviceObject = &DriverObject->NdkWdkDevice;
	DriverObject->NdkWdkQueue = alloc_workqueue("%s", WQ_PERCPU, 0, Name);
	if (!DriverObject->NdkWdkQueue)
		return -ENOMEM;
	RtlInitUnicodeString(&path, wdk_registry_path);
	status = Entry(DriverObject, &path);
	if (NT_SUCCESS(status))
		return 0;
	pr_err("ndk_wdk: %s: DriverEntry failed: %#x\n", Name, status);
	destroy_workqueue(DriverObject->NdkWdkQueue);
	return -EIO;
}
EXPORT_SYMBOL_GPL(ndk_wdk_driver_load);

/**
 * ndk_wdk_driver_unload() - module exit of a ported driver
 * @DriverObject: the module's driver object
 *
 * Calls the DriverUnload that DriverEntry set, then waits for the work
 * items still queued.
 */
void ndk_wdk_driver_unload(PDRIVER_OBJECT DriverObject)
{
	if (DriverObject->DriverUnload)
		DriverObject->DriverUnload(DriverObject);
	destroy_workqueue(DriverObject->NdkWdkQueue);
}
EXPORT_SYMBOL_GPL(ndk_wdk_driver_unload);

/* ------------------------------------------------------------------ */
/* WSK: the NDK provider's dispatch                                     */
/* ------------------------------------------------------------------ */

/* One per registration; the WSK_REGISTRATION points at it. */
struct _WSK_CLIENT {
	WSK_CLIENT_NPI npi;
};

static NTSTATUS wdk_open_ndk_adapter(PWSK_CLIENT Client,
				     NDK_VERSION NdkVersion, IF_INDEX IfIndex,
				     NDK_ADAPTER **ppNdkAdapter)
{
	if (!Client || !ppNdkAdapter || IfIndex > INT_MAX)
		return STATUS_INVALID_PARAMETER;
	return ndk_open_adapter(IfIndex, NdkVersion, ppNdkAdapter);
}

static void wdk_close_ndk_adapter(PWSK_CLIENT Client,
				  NDK_ADAPTER *pNdkAdapter)
{
	ndk_close_adapter(pNdkAdapter);
}

static const WSK_PROVIDER_NDK_DISPATCH wdk_ndk_dispatch = {
	.WskOpenNdkAdapter = wdk_open_ndk_adapter,
	.WskCloseNdkAdapter = wdk_close_ndk_adapter,
};

static NTSTATUS wdk_control_client(PWSK_CLIENT Client, ULONG ControlCode,
				   SIZE_T InputSize, PVOID InputBuffer,
				   SIZE_T OutputSize, PVOID OutputBuffer,
				   SIZE_T *OutputSizeReturned, PIRP Irp)
{
	if (Irp)
		return STATUS_NOT_SUPPORTED;
	if (ControlCode != WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH)
		return STATUS_NOT_SUPPORTED;
	if (InputSize || !OutputBuffer)
		return STATUS_INVALID_PARAMETER;
	if (OutputSize < sizeof(wdk_ndk_dispatch))
		return STATUS_BUFFER_TOO_SMALL;
	memcpy(OutputBuffer, &wdk_ndk_dispatch, sizeof(wdk_ndk_dispatch));
	if (OutputSizeReturned)
		*OutputSizeReturned = sizeof(wdk_ndk_dispatch);
	return STATUS_SUCCESS;
}

static const WSK_PROVIDER_DISPATCH wdk_provider_dispatch = {
	.Version = MAKE_WSK_VERSION(1, 0),
	.WskControlClient = wdk_control_client,
};

/**
 * WskRegister() - register a WSK client
 * @WskClientNpi: the client's NPI; its dispatch version must be 1.x
 * @WskRegistration: the client's registration, filled here
 *
 * Return: STATUS_SUCCESS, STATUS_NOT_SUPPORTED for another WSK version,
 * STATUS_INSUFFICIENT_RESOURCES.
 */
NTSTATUS WskRegister(PWSK_CLIENT_NPI WskClientNpi,
		     PWSK_REGISTRATION WskRegistration)
{
	PWSK_CLIENT client;

	might_sleep();
	if (!WskClientNpi || !WskRegistration || !WskClientNpi->Dispatch)
		return STATUS_INVALID_PARAMETER;
	if (WSK_MAJOR_VERSION(WskClientNpi->Dispatch->Version) != 1)
		return STATUS_NOT_SUPPORTED;
	client = kzalloc(sizeof(*client), GFP_KERNEL);
	if (!client)
		return STATUS_INSUFFICIENT_RESOURCES;
	client->npi = *WskClientNpi;
	WskRegistration->Client = client;
	atomic_set(&WskRegistration->Captures, 0);
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(WskRegister);

/**
 * WskDeregister() - end a registration
 * @WskRegistration: the registration; waits until every captured NPI is
 *	released, as on Windows
 */
void WskDeregister(PWSK_REGISTRATION WskRegistration)
{
	might_sleep();
	wait_var_event(&WskRegistration->Captures,
		       !atomic_read(&WskRegistration->Captures));
	kfree(WskRegistration->Client);
	WskRegistration->Client = NULL;
}
EXPORT_SYMBOL_GPL(WskDeregister);

/**
 * WskCaptureProviderNPI() - the provider's NPI
 * @WskRegistration: a registration
 * @WaitTimeout: ignored: the provider is ndk_wdk.ko, loaded before any
 *	client, so it is always ready
 * @WskProviderNpi: receives the client handle and provider dispatch
 *
 * Return: STATUS_SUCCESS, or STATUS_INVALID_PARAMETER without a
 * registration.
 */
NTSTATUS WskCaptureProviderNPI(PWSK_REGISTRATION WskRegistration,
			       ULONG WaitTimeout,
			       PWSK_PROVIDER_NPI WskProviderNpi)
{
	if (!WskRegistration || !WskRegistration->Client || !WskProviderNpi)
		return STATUS_INVALID_PARAMETER;
	atomic_inc(&WskRegistration->Captures);
	WskProviderNpi->Client = WskRegistration->Client;
	WskProviderNpi->Dispatch = &wdk_provider_dispatch;
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(WskCaptureProviderNPI);

/**
 * WskReleaseProviderNPI() - release a captured NPI
 * @WskRegistration: the registration it was captured from
 */
void WskReleaseProviderNPI(PWSK_REGISTRATION WskRegistration)
{
	if (atomic_dec_and_test(&WskRegistration->Captures))
		wake_up_var(&WskRegistration->Captures);
}
EXPORT_SYMBOL_GPL(WskReleaseProviderNPI);

/* ------------------------------------------------------------------ */
/* Strings and addresses                                               */
/* ------------------------------------------------------------------ */

/**
 * RtlInitUnicodeString() - point a UNICODE_STRING at a terminated string
 * @DestinationString: the string to fill
 * @SourceString: UTF-16, NUL-terminated, or NULL
 */
void RtlInitUnicodeString(PUNICODE_STRING DestinationString,
			  PCWSTR SourceString)
{
	size_t n = 0;

	while (SourceString && SourceString[n])
		n++;
	DestinationString->Buffer = (PWSTR)SourceString;
	DestinationString->Length = n * sizeof(WCHAR);
	DestinationString->MaximumLength = SourceString ?
					   (n + 1) * sizeof(WCHAR) : 0;
}
EXPORT_SYMBOL_GPL(RtlInitUnicodeString);

#define WDK_ADDR_MAX	64

/* A wide address string as ASCII; false when too long or not ASCII. */
static bool wdk_narrow(PCWSTR s, char *out)
{
	int i;

	for (i = 0; i < WDK_ADDR_MAX - 1 && s[i]; i++) {
		if (s[i] >= 0x80)
			return false;
		out[i] = s[i];
	}
	out[i] = '\0';
	return !s[i];
}

/* Up to the first character that cannot be part of an address. */
static size_t wdk_addr_span(const char *s, const char *set)
{
	size_t n = 0;

	while (s[n] && (isxdigit(s[n]) || strchr(set, s[n])))
		n++;
	return n;
}

static NTSTATUS wdk_port(const char *s, PUSHORT Port)
{
	u16 port;

	if (kstrtou16(s, 10, &port) || !port)
		return STATUS_INVALID_PARAMETER;
	*Port = (__force USHORT)htons(port);
	return STATUS_SUCCESS;
}

/**
 * RtlIpv4StringToAddressA() - parse a dotted-quad IPv4 address
 * @S: the string
 * @Strict: ignored: only the four-part dotted decimal form is accepted
 * @Terminator: receives where parsing stopped
 * @Addr: receives the address (network byte order)
 *
 * Return: STATUS_SUCCESS or STATUS_INVALID_PARAMETER.
 */
NTSTATUS RtlIpv4StringToAddressA(PCSTR S, BOOLEAN Strict, PCSTR *Terminator,
				 IN_ADDR *Addr)
{
	const char *end;

	if (!in4_pton(S, wdk_addr_span(S, "."), (u8 *)&Addr->s_addr, -1,
		      &end)) {
		*Terminator = S;
		return STATUS_INVALID_PARAMETER;
	}
	*Terminator = end;
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(RtlIpv4StringToAddressA);

/**
 * RtlIpv4StringToAddressExA() - parse "a.b.c.d" or "a.b.c.d:port"
 * @AddressString: the string
 * @Strict: as for RtlIpv4StringToAddressA()
 * @Address: receives the address
 * @Port: receives the port in network byte order, 0 when none given
 *
 * Return: STATUS_SUCCESS or STATUS_INVALID_PARAMETER.
 */
NTSTATUS RtlIpv4StringToAddressExA(PCSTR AddressString, BOOLEAN Strict,
				   IN_ADDR *Address, PUSHORT Port)
{
	PCSTR end;

	if (!AddressString || !Address || !Port ||
	    RtlIpv4StringToAddressA(AddressString, Strict, &end, Address))
		return STATUS_INVALID_PARAMETER;
	*Port = 0;
	if (*end == ':')
		return wdk_port(end + 1, Port);
	return *end ? STATUS_INVALID_PARAMETER : STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(RtlIpv4StringToAddressExA);

/**
 * RtlIpv6StringToAddressA() - parse an IPv6 address
 * @S: the string
 * @Terminator: receives where parsing stopped
 * @Addr: receives the address
 *
 * Return: STATUS_SUCCESS or STATUS_INVALID_PARAMETER.
 */
NTSTATUS RtlIpv6StringToAddressA(PCSTR S, PCSTR *Terminator, IN6_ADDR *Addr)
{
	const char *end;

	if (!in6_pton(S, wdk_addr_span(S, ":."), Addr->s6_addr, -1, &end)) {
		*Terminator = S;
		return STATUS_INVALID_PARAMETER;
	}
	*Terminator = end;
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(RtlIpv6StringToAddressA);

/**
 * RtlIpv6StringToAddressExA() - parse "addr", "addr%scope" or
 *	"[addr%scope]:port"
 * @AddressString: the string
 * @Address: receives the address
 * @ScopeId: receives the scope, 0 when none given
 * @Port: receives the port in network byte order, 0 when none given
 *
 * Return: STATUS_SUCCESS or STATUS_INVALID_PARAMETER.
 */
NTSTATUS RtlIpv6StringToAddressExA(PCSTR AddressString, IN6_ADDR *Address,
				   PULONG ScopeId, PUSHORT Port)
{
	bool bracket;
	PCSTR s, end;
	char scope[16];
	size_t n;

	if (!AddressString || !Address || !ScopeId || !Port)
		return STATUS_INVALID_PARAMETER;
	bracket = *AddressString == '[';
	s = AddressString + bracket;
	if (RtlIpv6StringToAddressA(s, &end, Address))
		return STATUS_INVALID_PARAMETER;
	*ScopeId = 0;
	*Port = 0;
	if (*end == '%') {
		n = strspn(end + 1, "0123456789");
		if (!n || n >= sizeof(scope))
			return STATUS_INVALID_PARAMETER;
		memcpy(scope, end + 1, n);
		scope[n] = '\0';
		if (kstrtou32(scope, 10, ScopeId))
			return STATUS_INVALID_PARAMETER;
		end += n + 1;
	}
	if (bracket) {
		if (*end++ != ']')
			return STATUS_INVALID_PARAMETER;
		if (*end == ':')
			return wdk_port(end + 1, Port);
	}
	return *end ? STATUS_INVALID_PARAMETER : STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(RtlIpv6StringToAddressExA);

/* The W forms: ASCII copies of the wide string, with the terminator
 * mapped back into it.
 */

/**
 * RtlIpv4StringToAddressW() - RtlIpv4StringToAddressA() on UTF-16
 * @S: the string
 * @Strict: as for the A form
 * @Terminator: receives where parsing stopped
 * @Addr: receives the address
 *
 * Return: STATUS_SUCCESS or STATUS_INVALID_PARAMETER.
 */
NTSTATUS RtlIpv4StringToAddressW(PCWSTR S, BOOLEAN Strict,
				 PCWSTR *Terminator, IN_ADDR *Addr)
{
	char a[WDK_ADDR_MAX];
	PCSTR end;
	NTSTATUS status;

	*Terminator = S;
	if (!wdk_narrow(S, a))
		return STATUS_INVALID_PARAMETER;
	status = RtlIpv4StringToAddressA(a, Strict, &end, Addr);
	*Terminator = S + (end - a);
	return status;
}
EXPORT_SYMBOL_GPL(RtlIpv4StringToAddressW);

/**
 * RtlIpv4StringToAddressExW() - RtlIpv4StringToAddressExA() on UTF-16
 * @AddressString: the string
 * @Strict: as for the A form
 * @Address: receives the address
 * @Port: receives the port in network byte order
 *
 * Return: STATUS_SUCCESS or STATUS_INVALID_PARAMETER.
 */
NTSTATUS RtlIpv4StringToAddressExW(PCWSTR AddressString, BOOLEAN Strict,
				   IN_ADDR *Address, PUSHORT Port)
{
	char a[WDK_ADDR_MAX];

	if (!AddressString || !wdk_narrow(AddressString, a))
		return STATUS_INVALID_PARAMETER;
	return RtlIpv4StringToAddressExA(a, Strict, Address, Port);
}
EXPORT_SYMBOL_GPL(RtlIpv4StringToAddressExW);

/**
 * RtlIpv6StringToAddressW() - RtlIpv6StringToAddressA() on UTF-16
 * @S: the string
 * @Terminator: receives where parsing stopped
 * @Addr: receives the address
 *
 * Return: STATUS_SUCCESS or STATUS_INVALID_PARAMETER.
 */
NTSTATUS RtlIpv6StringToAddressW(PCWSTR S, PCWSTR *Terminator,
				 IN6_ADDR *Addr)
{
	char a[WDK_ADDR_MAX];
	PCSTR end;
	NTSTATUS status;

	*Terminator = S;
	if (!wdk_narrow(S, a))
		return STATUS_INVALID_PARAMETER;
	status = RtlIpv6StringToAddressA(a, &end, Addr);
	*Terminator = S + (end - a);
	return status;
}
EXPORT_SYMBOL_GPL(RtlIpv6StringToAddressW);

/**
 * RtlIpv6StringToAddressExW() - RtlIpv6StringToAddressExA() on UTF-16
 * @AddressString: the string
 * @Address: receives the address
 * @ScopeId: receives the scope
 * @Port: receives the port in network byte order
 *
 * Return: STATUS_SUCCESS or STATUS_INVALID_PARAMETER.
 */
NTSTATUS RtlIpv6StringToAddressExW(PCWSTR AddressString, IN6_ADDR *Address,
				   PULONG ScopeId, PUSHORT Port)
{
	char a[WDK_ADDR_MAX];

	if (!AddressString || !wdk_narrow(AddressString, a))
		return STATUS_INVALID_PARAMETER;
	return RtlIpv6StringToAddressExA(a, Address, ScopeId, Port);
}
EXPORT_SYMBOL_GPL(RtlIpv6StringToAddressExW);

/**
 * RtlIpv4AddressToStringW() - format an IPv4 address
 * @Addr: the address
 * @S: room for 16 characters
 *
 * Return: a pointer to the terminating NUL in @S.
 */
PWSTR RtlIpv4AddressToStringW(const IN_ADDR *Addr, PWSTR S)
{
	char a[16];
	int i, n = scnprintf(a, sizeof(a), "%pI4", &Addr->s_addr);

	for (i = 0; i <= n; i++)
		S[i] = a[i];
	return S + n;
}
EXPORT_SYMBOL_GPL(RtlIpv4AddressToStringW);

/* ------------------------------------------------------------------ */
/* Interface indexes and LUIDs                                         */
/* ------------------------------------------------------------------ */

/**
 * ConvertInterfaceIndexToLuid() - the LUID of an interface
 * @InterfaceIndex: a Linux ifindex in the initial network namespace
 * @InterfaceLuid: receives the LUID
 *
 * Return: STATUS_SUCCESS or STATUS_NOT_FOUND.
 */
NTSTATUS ConvertInterfaceIndexToLuid(NET_IFINDEX InterfaceIndex,
				     PNET_LUID InterfaceLuid)
{
	struct net_device *ndev;

	InterfaceLuid->Value = 0;
	ndev = InterfaceIndex <= INT_MAX ?
	       dev_get_by_index(&init_net, InterfaceIndex) : NULL;
	if (!ndev)
		return STATUS_NOT_FOUND;
	InterfaceLuid->Info.NetLuidIndex = InterfaceIndex;
	InterfaceLuid->Info.IfType = ndev->flags & IFF_LOOPBACK ?
				     IF_TYPE_SOFTWARE_LOOPBACK :
				     ndev->type == ARPHRD_ETHER ?
				     IF_TYPE_ETHERNET_CSMACD : IF_TYPE_OTHER;
	dev_put(ndev);
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(ConvertInterfaceIndexToLuid);

/**
 * ConvertInterfaceLuidToIndex() - the ifindex in a LUID
 * @InterfaceLuid: from ConvertInterfaceIndexToLuid()
 * @InterfaceIndex: receives the index
 *
 * Return: STATUS_SUCCESS.
 */
NTSTATUS ConvertInterfaceLuidToIndex(const NET_LUID *InterfaceLuid,
				     PNET_IFINDEX InterfaceIndex)
{
	*InterfaceIndex = InterfaceLuid->Info.NetLuidIndex;
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(ConvertInterfaceLuidToIndex);

/**
 * ConvertInterfaceLuidToAlias() - the interface's name, as UTF-16
 * @InterfaceLuid: the interface
 * @InterfaceAlias: receives the Linux interface name (e.g. "eth0")
 * @Length: room at @InterfaceAlias, in characters
 *
 * Return: STATUS_SUCCESS, STATUS_NOT_FOUND or STATUS_BUFFER_TOO_SMALL.
 */
NTSTATUS ConvertInterfaceLuidToAlias(const NET_LUID *InterfaceLuid,
				     PWSTR InterfaceAlias, SIZE_T Length)
{
	char name[IFNAMSIZ];
	struct net_device *ndev;
	size_t i, n;

	ndev = dev_get_by_index(&init_net, InterfaceLuid->Info.NetLuidIndex);
	if (!ndev)
		return STATUS_NOT_FOUND;
	strscpy(name, ndev->name, sizeof(name));
	dev_put(ndev);
	n = strlen(name);
	if (n >= Length)
		return STATUS_BUFFER_TOO_SMALL;
	for (i = 0; i <= n; i++)
		InterfaceAlias[i] = name[i];
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_GPL(ConvertInterfaceLuidToAlias);
