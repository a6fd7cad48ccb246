// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * WdkSample: a Windows-style NDK consumer driver, built unchanged against
 * ndk's WDK headers (Documentation/ndk/porting.rst uses it as the porting
 * example).
 *
 * DriverEntry checks the kernel services it relies on, then connects a
 * client socket to a listen socket of its own over one RDMA adapter and
 * exchanges data every way RdmaSock offers: deferred sends, a buffer
 * descriptor, RDMA read and write on fast-registered buffers, and a
 * send-with-invalidate; the data is verified at each step. It prints
 * "WdkSample: PASS" or "WdkSample: FAIL" and keeps the adapter open until
 * DriverUnload.
 */
#include "RdmaSock.h"

/*
 * Configuration of the machine the sample runs on, the VM of make check:
 * the RDMA adapter's interface by its alias, and the addresses.
 */
#define SAMPLE_IF_ALIAS		L"eth0"
#define SAMPLE_CLIENT_ADDRESS	L"10.0.2.15"
#define SAMPLE_LISTEN_ADDRESS	L"10.0.2.15:54321"

/* 'pmaS' */
#define SAMPLE_TAG		0x53616d70U
#define SAMPLE_BUFFER_SIZE	(32 * 1024)

/* Record a failed check in *Status; FALSE when the caller must stop. */
static BOOLEAN SampleCheck(NTSTATUS *Status, BOOLEAN Condition, PCSTR What)
{
	if (Condition)
		return TRUE;
	DbgPrint("WdkSample: check failed: %s\n", What);
	*Status = STATUS_UNSUCCESSFUL;
	return FALSE;
}

static BOOLEAN SampleCall(NTSTATUS *Status, NTSTATUS Result, PCSTR What)
{
	*Status = Result;
	if (NT_SUCCESS(Result))
		return TRUE;
	DbgPrint("WdkSample: %s failed: 0x%08lx\n", What, Result);
	return FALSE;
}

/* What the server tells the client about a buffer it may use. */
typedef struct _SAMPLE_DESCRIPTOR {
	UINT64 Address;
	UINT32 Token;
	UINT32 Length;
} SAMPLE_DESCRIPTOR;

typedef struct _SAMPLE_CONTEXT {
	KEVENT Accepted;
	NTSTATUS AcceptStatus;
	RDMA_SOCKET *Server;
} SAMPLE_CONTEXT;

typedef struct _SAMPLE_WORK {
	KEVENT Ran;
	KIRQL Irql;
	PVOID Context;
} SAMPLE_WORK;

DRIVER_UNLOAD SampleUnload;

static SAMPLE_CONTEXT Sample;

static VOID SampleAccept(PVOID Context, RDMA_SOCKET *Socket, NTSTATUS Status)
{
	SAMPLE_CONTEXT *Ctx = Context;

	/* One connection only; a second one is closed. */
	if (InterlockedCompareExchangePointer((PVOID *)&Ctx->Server, Socket,
					      NULL) != NULL) {
		if (Socket)
			RdmaCloseSocket(Socket);
		return;
	}
	Ctx->AcceptStatus = Status;
	KeSetEvent(&Ctx->Accepted, IO_NO_INCREMENT, FALSE);
}

static VOID SampleWorker(PDEVICE_OBJECT DeviceObject, PVOID Context)
{
	SAMPLE_WORK *Work = Context;

	Work->Irql = KeGetCurrentIrql();
	Work->Context = DeviceObject;
	KeSetEvent(&Work->Ran, IO_NO_INCREMENT, FALSE);
}

static VOID SampleWorkerEx(PVOID IoObject, PVOID Context,
			   PIO_WORKITEM IoWorkItem)
{
	SAMPLE_WORK *Work = Context;

	UNREFERENCED_PARAMETER(IoWorkItem);
	Work->Irql = KeGetCurrentIrql();
	Work->Context = IoObject;
	KeSetEvent(&Work->Ran, IO_NO_INCREMENT, FALSE);
}

/* The kernel services the socket layer builds on behave as on Windows. */
static NTSTATUS SampleSelfCheck(PDRIVER_OBJECT DriverObject)
{
	NPAGED_LOOKASIDE_LIST Lookaside;
	LIST_ENTRY Head, Entries[3];
	KSPIN_LOCK Lock;
	KIRQL OldIrql, Irql;
	KEVENT Event;
	LARGE_INTEGER Timeout, Now;
	EX_RUNDOWN_REF Rundown;
	SAMPLE_WORK Work;
	PIO_WORKITEM WorkItem;
	LONG Counter = 5;
	ULONG Round;
	IN_ADDR Addr4;
	IN6_ADDR Addr6;
	USHORT Port;
	ULONG Scope;
	PVOID Entry;
	PMDL Mdl;
	PUCHAR Buffer;
	NTSTATUS Status = STATUS_SUCCESS;

	if (!SampleCheck(&Status, KeGetCurrentIrql() == PASSIVE_LEVEL, "PASSIVE_LEVEL"))
		goto exit;
	KeInitializeSpinLock(&Lock);
	KeAcquireSpinLock(&Lock, &OldIrql);
	Irql = KeGetCurrentIrql();
	KeReleaseSpinLock(&Lock, OldIrql);
	if (!SampleCheck(&Status, OldIrql == PASSIVE_LEVEL && Irql == DISPATCH_LEVEL,
			 "spin lock raises to DISPATCH_LEVEL"))
		goto exit;
	KeRaiseIrql(DISPATCH_LEVEL, &OldIrql);
	Irql = KeGetCurrentIrql();
	KeLowerIrql(OldIrql);
	if (!SampleCheck(&Status, Irql == DISPATCH_LEVEL &&
			 KeGetCurrentIrql() == PASSIVE_LEVEL, "KeRaiseIrql"))
		goto exit;

	/* Events: timeouts relative, absolute and zero; auto-reset. */
	KeInitializeEvent(&Event, NotificationEvent, FALSE);
	Timeout.QuadPart = -20 * 1000 * 10;	/* 20 ms */
	if (!SampleCheck(&Status, KeWaitForSingleObject(&Event, Executive, KernelMode,
							FALSE, &Timeout) == STATUS_TIMEOUT,
			 "relative timeout"))
		goto exit;
	KeQuerySystemTime(&Now);
	Timeout.QuadPart = Now.QuadPart + 20 * 1000 * 10;
	if (!SampleCheck(&Status, KeWaitForSingleObject(&Event, Executive, KernelMode,
							FALSE, &Timeout) == STATUS_TIMEOUT,
			 "absolute timeout"))
		goto exit;
	KeSetEvent(&Event, IO_NO_INCREMENT, FALSE);
	Timeout.QuadPart = 0;
	if (!SampleCheck(&Status, KeWaitForSingleObject(&Event, Executive, KernelMode,
							FALSE, NULL) == STATUS_SUCCESS &&
			 KeWaitForSingleObject(&Event, Executive, KernelMode,
					       FALSE, &Timeout) == STATUS_SUCCESS,
			 "notification event stays signalled"))
		goto exit;
	KeInitializeEvent(&Event, SynchronizationEvent, TRUE);
	if (!SampleCheck(&Status, KeWaitForSingleObject(&Event, Executive, KernelMode,
							FALSE, &Timeout) == STATUS_SUCCESS &&
			 KeWaitForSingleObject(&Event, Executive, KernelMode,
					       FALSE, &Timeout) == STATUS_TIMEOUT,
			 "synchronization event resets"))
		goto exit;

	/* A work item queued at DISPATCH_LEVEL runs at PASSIVE_LEVEL. */
	KeInitializeEvent(&Work.Ran, NotificationEvent, FALSE);
	WorkItem = IoAllocateWorkItem(DriverObject->DeviceObject);
	if (!SampleCheck(&Status, !!WorkItem, "IoAllocateWorkItem"))
		goto exit;
	KeAcquireSpinLock(&Lock, &OldIrql);
	IoQueueWorkItem(WorkItem, SampleWorker, DelayedWorkQueue, &Work);
	KeReleaseSpinLock(&Lock, OldIrql);
	KeWaitForSingleObject(&Work.Ran, Executive, KernelMode, FALSE, NULL);
	/*
	 * The waiter may reuse or drop its event as soon as the wait is
	 * over: the KeSetEvent() that ended it is done with the event then.
	 */
	for (Round = 0; Round < 1000; Round++) {
		KeInitializeEvent(&Work.Ran, NotificationEvent, FALSE);
		IoQueueWorkItem(WorkItem, SampleWorker, DelayedWorkQueue, &Work);
		KeWaitForSingleObject(&Work.Ran, Executive, KernelMode, FALSE,
				      NULL);
	}
	IoFreeWorkItem(WorkItem);
	if (!SampleCheck(&Status, Work.Irql == PASSIVE_LEVEL &&
			 Work.Context == DriverObject->DeviceObject,
			 "work item context"))
		goto exit;
	/* The same with a work item of the caller's on the driver object. */
	WorkItem = ExAllocatePool2(POOL_FLAG_NON_PAGED, IoSizeofWorkItem(),
				   SAMPLE_TAG);
	if (!SampleCheck(&Status, !!WorkItem, "work item allocation"))
		goto exit;
	KeClearEvent(&Work.Ran);
	IoInitializeWorkItem(DriverObject, WorkItem);
	IoQueueWorkItemEx(WorkItem, SampleWorkerEx, DelayedWorkQueue, &Work);
	KeWaitForSingleObject(&Work.Ran, Executive, KernelMode, FALSE, NULL);
	IoUninitializeWorkItem(WorkItem);
	ExFreePoolWithTag(WorkItem, SAMPLE_TAG);
	if (!SampleCheck(&Status, Work.Irql == PASSIVE_LEVEL &&
			 Work.Context == DriverObject, "work item on the driver"))
		goto exit;

	ExInitializeRundownProtection(&Rundown);
	if (!SampleCheck(&Status, ExAcquireRundownProtection(&Rundown), "rundown acquire"))
		goto exit;
	ExReleaseRundownProtection(&Rundown);
	ExWaitForRundownProtectionRelease(&Rundown);
	if (!SampleCheck(&Status, !ExAcquireRundownProtection(&Rundown),
			 "no acquire after rundown"))
		goto exit;

	if (!SampleCheck(&Status, InterlockedIncrement(&Counter) == 6 &&
			 InterlockedCompareExchange(&Counter, 9, 6) == 6 &&
			 InterlockedExchangeAdd(&Counter, 2) == 9 &&
			 InterlockedDecrement(&Counter) == 10,
			 "interlocked operations"))
		goto exit;

	InitializeListHead(&Head);
	InsertTailList(&Head, &Entries[1]);
	InsertHeadList(&Head, &Entries[0]);
	InsertTailList(&Head, &Entries[2]);
	if (!SampleCheck(&Status, RemoveHeadList(&Head) == &Entries[0] &&
			 RemoveTailList(&Head) == &Entries[2] &&
			 RemoveEntryList(&Entries[1]) && IsListEmpty(&Head),
			 "list order"))
		goto exit;

	ExInitializeNPagedLookasideList(&Lookaside, NULL, NULL, 0, 100,
					SAMPLE_TAG, 0);
	Entry = ExAllocateFromNPagedLookasideList(&Lookaside);
	if (!SampleCheck(&Status, !!Entry, "lookaside allocation"))
		goto exit;
	ExFreeToNPagedLookasideList(&Lookaside, Entry);
	ExDeleteNPagedLookasideList(&Lookaside);

	if (!SampleCheck(&Status, NT_SUCCESS(RtlIpv4StringToAddressExW(L"192.168.7.1:4791",
								       TRUE, &Addr4,
								       &Port)) &&
			 RtlUshortByteSwap(Port) == 4791 &&
			 RtlEqualMemory(&Addr4, "\xc0\xa8\x07\x01", 4) &&
			 !NT_SUCCESS(RtlIpv4StringToAddressExW(L"192.168.7",
									TRUE, &Addr4,
									&Port)),
			 "IPv4 strings"))
		goto exit;
	if (!SampleCheck(&Status, NT_SUCCESS(RtlIpv6StringToAddressExW(L"[fd00::15%3]:80",
								       &Addr6, &Scope,
								       &Port)) &&
			 Scope == 3 && RtlUshortByteSwap(Port) == 80 &&
			 Addr6.s6_addr[0] == 0xfd && Addr6.s6_addr[15] == 0x15,
			 "IPv6 strings"))
		goto exit;

	/* An MDL describes the buffer in place, page frames included. */
	Buffer = ExAllocatePoolWithTag(NonPagedPoolNx, 3 * PAGE_SIZE,
				       SAMPLE_TAG);
	if (!SampleCheck(&Status, !!Buffer, "pool allocation"))
		goto exit;
	Mdl = IoAllocateMdl(Buffer + 100, 2 * PAGE_SIZE, FALSE, FALSE, NULL);
	if (Mdl) {
		MmBuildMdlForNonPagedPool(Mdl);
		Irql = MmGetMdlVirtualAddress(Mdl) == Buffer + 100 &&
		       MmGetMdlByteCount(Mdl) == 2 * PAGE_SIZE &&
		       MmGetMdlByteOffset(Mdl) == BYTE_OFFSET(Buffer + 100) &&
		       MmGetSystemAddressForMdlSafe(Mdl, NormalPagePriority) ==
		       Buffer + 100 &&
		       MmGetMdlPfnArray(Mdl)[1] == MmGetMdlPfnArray(Mdl)[0] + 1;
		IoFreeMdl(Mdl);
	}
	ExFreePoolWithTag(Buffer, SAMPLE_TAG);
	if (!SampleCheck(&Status, Mdl && Irql, "MDL of a pool buffer"))
		goto exit;

exit:
	return Status;
}

/* Two MDLs chained through Next make one LAM. */
static NTSTATUS SampleCheckMdlChain(VOID)
{
	PUCHAR Page1 = ExAllocatePool2(POOL_FLAG_NON_PAGED, PAGE_SIZE,
				       SAMPLE_TAG);
	PUCHAR Page2 = ExAllocatePool2(POOL_FLAG_NON_PAGED, PAGE_SIZE,
				       SAMPLE_TAG);
	PMDL First = NULL, Second = NULL;
	NTSTATUS Status = STATUS_SUCCESS;
	ULONG Pages, Fbo;

	if (!SampleCheck(&Status, Page1 && Page2, "page allocation"))
		goto exit;
	First = IoAllocateMdl(Page1, PAGE_SIZE, FALSE, FALSE, NULL);
	Second = IoAllocateMdl(Page2, PAGE_SIZE, TRUE, FALSE, NULL);
	if (!SampleCheck(&Status, First && Second, "IoAllocateMdl"))
		goto exit;
	MmBuildMdlForNonPagedPool(First);
	MmBuildMdlForNonPagedPool(Second);
	First->Next = Second;
	if (!SampleCheck(&Status, MmGetMdlByteCount(First) + MmGetMdlByteCount(First->Next)
			 == 2 * PAGE_SIZE, "MDL chain"))
		goto exit;
	if (!SampleCall(&Status, RdmaCountAdapterPages(First, 2 * PAGE_SIZE, &Pages, &Fbo),
			"LAM of an MDL chain"))
		goto exit;
	if (!SampleCheck(&Status, Pages == 2 && Fbo == 0, "LAM pages of an MDL chain"))
		goto exit;
exit:
	if (First)
		IoFreeMdl(First);
	if (Second)
		IoFreeMdl(Second);
	if (Page1)
		ExFreePoolWithTag(Page1, SAMPLE_TAG);
	if (Page2)
		ExFreePoolWithTag(Page2, SAMPLE_TAG);
	return Status;
}

/* The interface index of the interface called Alias. */
static NTSTATUS SampleFindInterface(PCWSTR Alias, IF_INDEX *IfIndex)
{
	WCHAR Name[NDIS_IF_MAX_STRING_SIZE + 1];
	NET_LUID Luid;
	IF_INDEX Index;
	ULONG i;

	for (Index = 1; Index < 256; Index++) {
		if (!NT_SUCCESS(ConvertInterfaceIndexToLuid(Index, &Luid)) ||
		    !NT_SUCCESS(ConvertInterfaceLuidToAlias(&Luid, Name,
							    ARRAYSIZE(Name))))
			continue;
		for (i = 0; Name[i] && Name[i] == Alias[i]; i++)
			;
		if (Name[i] == Alias[i]) {
			*IfIndex = Index;
			return STATUS_SUCCESS;
		}
	}
	return STATUS_NOT_FOUND;
}

static VOID SampleFill(PUCHAR Buffer, ULONG Length, UCHAR Seed)
{
	ULONG i;

	for (i = 0; i < Length; i++)
		Buffer[i] = (UCHAR)(i * 7 + Seed);
}

static NTSTATUS SampleRun(PDRIVER_OBJECT DriverObject)
{
	static const ULONG MessageLengths[3] = { 100, RDMA_MSG_SIZE, 7 };
	RDMA_REGISTERED_BUFFER *ServerReg = NULL, *ClientReg = NULL;
	PUCHAR ServerBuffer = NULL, ClientBuffer = NULL;
	RDMA_LISTEN_SOCKET *Listen = NULL;
	RDMA_SOCKET *Client = NULL;
	SOCKADDR_IN Local = { 0 }, Remote = { 0 };
	UCHAR *Messages = NULL, *Received = NULL;
	RDMA_SEND *Sends = NULL;
	SAMPLE_DESCRIPTOR Descriptor;
	LARGE_INTEGER Timeout;
	RDMA_MESSAGE Message;
	NTSTATUS Status;
	ULONG i;

	Local.sin_family = AF_INET;
	Remote.sin_family = AF_INET;
	if (!SampleCall(&Status, RtlIpv4StringToAddressExW(SAMPLE_CLIENT_ADDRESS, TRUE,
							   &Local.sin_addr,
							   &Local.sin_port),
			"parsing the client address"))
		goto exit;
	if (!SampleCall(&Status, RtlIpv4StringToAddressExW(SAMPLE_LISTEN_ADDRESS, TRUE,
							   &Remote.sin_addr,
							   &Remote.sin_port),
			"parsing the listen address"))
		goto exit;

	KeInitializeEvent(&Sample.Accepted, NotificationEvent, FALSE);
	if (!SampleCall(&Status, RdmaCreateListenSocket(DriverObject->DeviceObject,
							SampleAccept, &Sample, &Listen),
			"RdmaCreateListenSocket"))
		goto exit;
	if (!SampleCall(&Status, RdmaListen(Listen, (SOCKADDR *)&Remote), "RdmaListen"))
		goto exit;
	if (!SampleCall(&Status, RdmaCreateSocket(&Client), "RdmaCreateSocket"))
		goto exit;
	if (!SampleCall(&Status, RdmaConnect(Client, (SOCKADDR *)&Local,
					     (SOCKADDR *)&Remote), "RdmaConnect"))
		goto exit;
	Timeout.QuadPart = -10LL * 1000 * 1000 * 10;
	if (!SampleCall(&Status, KeWaitForSingleObject(&Sample.Accepted, Executive,
						       KernelMode, FALSE, &Timeout),
			"waiting for the accept"))
		goto exit;
	if (!SampleCall(&Status, Sample.AcceptStatus, "accept"))
		goto exit;
	DbgPrint("WdkSample: connected\n");

	/* Three sends, the first two deferred until the third is posted. */
	Messages = ExAllocatePool2(POOL_FLAG_NON_PAGED, 3 * RDMA_MSG_SIZE,
				   SAMPLE_TAG);
	Received = ExAllocatePool2(POOL_FLAG_NON_PAGED, RDMA_MSG_SIZE,
				   SAMPLE_TAG);
	Sends = ExAllocatePool2(POOL_FLAG_NON_PAGED, 3 * sizeof(*Sends),
				SAMPLE_TAG);
	if (!SampleCheck(&Status, Messages && Received && Sends, "allocations"))
		goto exit;
	for (i = 0; i < 3; i++) {
		SampleFill(Messages + i * RDMA_MSG_SIZE, MessageLengths[i],
			   (UCHAR)i);
		if (!SampleCall(&Status, RdmaPostSend(Client, &Sends[i],
						      Messages + i * RDMA_MSG_SIZE,
						      MessageLengths[i],
						      i < 2 ? NDK_OP_FLAG_DEFER : 0, 0),
				"RdmaPostSend"))
			goto exit;
	}
	for (i = 0; i < 3; i++)
		if (!SampleCall(&Status, RdmaWaitSend(&Sends[i]), "send completion"))
			goto exit;
	for (i = 0; i < 3; i++) {
		if (!SampleCall(&Status, RdmaReceive(Sample.Server, Received, RDMA_MSG_SIZE,
						     &Message), "RdmaReceive"))
			goto exit;
		if (!SampleCheck(&Status, Message.Length == MessageLengths[i] &&
				 !Message.Invalidated &&
				 RtlEqualMemory(Received,
						Messages + i * RDMA_MSG_SIZE,
						Message.Length),
				 "deferred messages arrive whole and in order"))
			goto exit;
	}

	/* The server registers a buffer and tells the client about it. */
	ServerBuffer = ExAllocatePoolWithTag(NonPagedPoolNx,
					     SAMPLE_BUFFER_SIZE, SAMPLE_TAG);
	ClientBuffer = ExAllocatePool2(POOL_FLAG_NON_PAGED,
				       SAMPLE_BUFFER_SIZE, SAMPLE_TAG);
	if (!SampleCheck(&Status, ServerBuffer && ClientBuffer, "buffer allocations"))
		goto exit;
	SampleFill(ServerBuffer, SAMPLE_BUFFER_SIZE, 0x11);
	if (!SampleCall(&Status, RdmaRegisterBuffer(Sample.Server, ServerBuffer,
						    SAMPLE_BUFFER_SIZE,
						    NDK_OP_FLAG_ALLOW_REMOTE_READ |
						    NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
						    &ServerReg),
			"registering the server buffer"))
		goto exit;
	Descriptor.Address = (UINT64)(ULONG_PTR)ServerReg->BaseVirtualAddress;
	Descriptor.Token = ServerReg->RemoteToken;
	Descriptor.Length = ServerReg->Length;
	RtlCopyMemory(Messages, &Descriptor, sizeof(Descriptor));
	if (!SampleCall(&Status, RdmaPostSend(Sample.Server, &Sends[0], Messages,
					      sizeof(Descriptor), 0, 0),
			"sending the descriptor"))
		goto exit;
	if (!SampleCall(&Status, RdmaWaitSend(&Sends[0]), "descriptor send completion"))
		goto exit;
	if (!SampleCall(&Status, RdmaReceive(Client, Received, RDMA_MSG_SIZE, &Message),
			"receiving the descriptor"))
		goto exit;
	if (!SampleCheck(&Status, Message.Length == sizeof(Descriptor), "descriptor size"))
		goto exit;
	RtlCopyMemory(&Descriptor, Received, sizeof(Descriptor));

	/* The client reads the server's buffer, then overwrites it. */
	if (!SampleCall(&Status, RdmaRegisterBuffer(Client, ClientBuffer,
						    SAMPLE_BUFFER_SIZE,
						    NDK_OP_FLAG_ALLOW_LOCAL_WRITE |
						    NDK_OP_FLAG_RDMA_READ_SINK,
						    &ClientReg),
			"registering the client buffer"))
		goto exit;
	if (!SampleCall(&Status, RdmaRead(Client, ClientReg, Descriptor.Address,
					  Descriptor.Token, Descriptor.Length), "RdmaRead"))
		goto exit;
	if (!SampleCheck(&Status, RtlCompareMemory(ClientBuffer, ServerBuffer,
						   SAMPLE_BUFFER_SIZE) == SAMPLE_BUFFER_SIZE,
			 "RDMA read data"))
		goto exit;
	SampleFill(ClientBuffer, SAMPLE_BUFFER_SIZE, 0x5a);
	if (!SampleCall(&Status, RdmaWrite(Client, ClientReg, Descriptor.Address,
					   Descriptor.Token, Descriptor.Length),
			"RdmaWrite"))
		goto exit;

	/* "Done", invalidating the server's registration at the server. */
	RtlCopyMemory(Messages, "done", 5);
	if (!SampleCall(&Status, RdmaPostSend(Client, &Sends[0], Messages, 5, 0,
					      Descriptor.Token),
			"send with invalidate"))
		goto exit;
	if (!SampleCall(&Status, RdmaWaitSend(&Sends[0]), "send-with-invalidate completion"))
		goto exit;
	if (!SampleCall(&Status, RdmaReceive(Sample.Server, Received, RDMA_MSG_SIZE,
					     &Message), "receiving done"))
		goto exit;
	if (!SampleCheck(&Status, Message.Length == 5 && Message.Invalidated &&
			 Message.InvalidatedToken == ServerReg->RemoteToken,
			 "the receive reports the invalidated token"))
		goto exit;
	if (!SampleCheck(&Status, RtlEqualMemory(ServerBuffer, ClientBuffer,
						 SAMPLE_BUFFER_SIZE), "RDMA write data"))
		goto exit;

	if (!SampleCall(&Status, SampleCheckMdlChain(), "MDL chain"))
		goto exit;

	/* The client hangs up; the server hears of it. */
	if (!SampleCall(&Status, RdmaDisconnect(Client), "RdmaDisconnect"))
		goto exit;
	Timeout.QuadPart = -10LL * 1000 * 1000 * 10;
	if (!SampleCall(&Status, KeWaitForSingleObject(&Sample.Server->PeerDisconnected,
						       Executive, KernelMode, FALSE,
						       &Timeout),
			"waiting for the disconnect event"))
		goto exit;
	if (!SampleCheck(&Status, Client->CqErrors == 0 && Sample.Server->CqErrors == 0,
			 "no CQ errors"))
		goto exit;
	DbgPrint("WdkSample: %ld client and %ld server completions, %lu bytes verified by RDMA\n",
		 Client->Completions, Sample.Server->Completions,
		 (ULONG)(2 * SAMPLE_BUFFER_SIZE));

exit:
	if (ClientReg)
		RdmaDeregisterBuffer(Client, ClientReg, FALSE);
	if (ServerReg)
		RdmaDeregisterBuffer(Sample.Server, ServerReg, FALSE);
	if (Client)
		RdmaCloseSocket(Client);
	/* A listener's close completes after its connections' closes. */
	if (Sample.Server) {
		RdmaCloseSocket(Sample.Server);
		Sample.Server = NULL;
	}
	if (Listen)
		RdmaCloseListenSocket(Listen);
	if (ServerBuffer)
		ExFreePoolWithTag(ServerBuffer, SAMPLE_TAG);
	if (ClientBuffer)
		ExFreePoolWithTag(ClientBuffer, SAMPLE_TAG);
	if (Messages)
		ExFreePoolWithTag(Messages, SAMPLE_TAG);
	if (Received)
		ExFreePoolWithTag(Received, SAMPLE_TAG);
	if (Sends)
		ExFreePoolWithTag(Sends, SAMPLE_TAG);
	return Status;
}

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
	IF_INDEX IfIndex = 0;
	NTSTATUS Status;

	UNREFERENCED_PARAMETER(RegistryPath);
	DriverObject->DriverUnload = SampleUnload;

	Status = SampleSelfCheck(DriverObject);
	if (NT_SUCCESS(Status))
		Status = SampleFindInterface(SAMPLE_IF_ALIAS, &IfIndex);
	if (NT_SUCCESS(Status)) {
		DbgPrint("WdkSample: interface %ws has index %lu\n",
			 SAMPLE_IF_ALIAS, IfIndex);
		Status = RdmaStartup(IfIndex);
	}
	if (NT_SUCCESS(Status)) {
		Status = SampleRun(DriverObject);
		if (!NT_SUCCESS(Status))
			RdmaCleanup();
	}
	DbgPrint("WdkSample: %s (status 0x%08lx, %wZ)\n",
		 NT_SUCCESS(Status) ? "PASS" : "FAIL", Status, RegistryPath);
	return Status;
}

_Use_decl_annotations_
VOID SampleUnload(PDRIVER_OBJECT DriverObject)
{
	UNREFERENCED_PARAMETER(DriverObject);
	RdmaCleanup();
	DbgPrint("WdkSample: unloaded\n");
}
